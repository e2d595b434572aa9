"""The circuit breaker of outgoing calls (webhooks, judge endpoints), on a fake clock."""

from __future__ import annotations

from referee.breaker import CircuitBreaker
from tests.timing import FakeClock


def test_opens_after_consecutive_failures_and_a_success_resets_the_count() -> None:
    breaker = CircuitBreaker(failures=3, reset_s=10.0, clock=FakeClock())
    breaker.failure()
    breaker.failure()
    breaker.success()  # not consecutive any more
    breaker.failure()
    breaker.failure()
    assert breaker.allow() and breaker.state() == "closed"
    breaker.failure()
    assert not breaker.allow() and breaker.state() == "open" and breaker.retry_in() == 10.0


def test_one_trial_after_the_cool_down_decides() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failures=1, reset_s=10.0, clock=clock)
    breaker.failure()
    clock.advance(9.5)
    assert not breaker.allow() and breaker.retry_in() == 0.5
    clock.advance(0.5)
    assert breaker.state() == "half_open"
    assert breaker.allow() and not breaker.allow()  # one trial at a time
    breaker.failure()  # the trial failed: open for another cool-down
    assert breaker.state() == "open" and not breaker.allow()
    clock.advance(10.0)
    assert breaker.allow()
    breaker.success()
    assert breaker.state() == "closed" and breaker.allow() and breaker.allow()
