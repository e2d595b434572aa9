"""A circuit breaker for calls to another service (webhook verifiers, judge endpoints).

Neutral (it imports nothing of Referee's) so that every package calling out over the network
uses the same one: `registered.webhook` per webhook URL, `judges.client` per judge endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """closed -> (N consecutive failures) -> open -> (cool-down) -> half-open: one trial call;
    its success closes the circuit, its failure opens it again.

    `clock` (monotonic seconds) times the cool-down; tests pass a fake one and advance it
    instead of sleeping the cool-down out. Not thread-safe: one event loop uses it."""

    def __init__(self, failures: int, reset_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold = failures
        self.reset_s = reset_s
        self.clock = clock
        self.failures = 0
        self.opened_at: float | None = None
        self.trial = False

    def allow(self) -> bool:
        if self.opened_at is None:
            return True
        if self.trial or self.clock() - self.opened_at < self.reset_s:
            return False
        self.trial = True
        return True

    def success(self) -> None:
        self.failures, self.opened_at, self.trial = 0, None, False

    def failure(self) -> None:
        self.failures += 1
        if self.trial or self.failures >= self.threshold:
            self.opened_at, self.trial = self.clock(), False

    def retry_in(self) -> float:
        return 0.0 if self.opened_at is None else max(0.0, self.reset_s - (self.clock() - self.opened_at))

    def state(self) -> BreakerState:
        """For health reports: `half_open` once the cool-down is over (a trial may go, or is
        going), `open` before."""
        if self.opened_at is None:
            return "closed"
        return "half_open" if self.trial or self.retry_in() == 0.0 else "open"
