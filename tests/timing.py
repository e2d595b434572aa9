"""Time in the tests: one factor for every wall-clock bound that remains, polling on public
signals instead of sleeping, and a fake clock for code that takes one.

A bound that must stay (a hostile input is answered within the stated limit) is written
`elapsed < within(0.5)`: on a quiet machine that is 0.5 s; on a slow or loaded one, set
`REFEREE_TEST_TIME_FACTOR` (e.g. 3) and every such bound, and every `wait_until` timeout, grows
by that factor. Nothing else reads the variable, so it can only loosen or tighten time limits,
never change what a test checks.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Awaitable, Callable


def _factor() -> float:
    raw = os.environ.get("REFEREE_TEST_TIME_FACTOR", "1")
    try:
        factor = float(raw)
    except ValueError:
        raise ValueError(f"REFEREE_TEST_TIME_FACTOR must be a number, not {raw!r}") from None
    if not factor > 0:
        raise ValueError(f"REFEREE_TEST_TIME_FACTOR must be > 0, not {raw!r}")
    return factor


TIME_FACTOR = _factor()


def within(seconds: float) -> float:
    """A wall-clock bound of `seconds` on a quiet machine, scaled by REFEREE_TEST_TIME_FACTOR."""
    return seconds * TIME_FACTOR


def wait_until(
    predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.01, *, what: str = "a condition"
) -> None:
    """Poll `predicate` until it is true; AssertionError naming `what` after `within(timeout_s)`."""
    deadline = time.monotonic() + within(timeout_s)
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within(timeout_s):g} s waiting for {what}")
        time.sleep(interval_s)


async def wait_until_async(
    predicate: Callable[[], bool | Awaitable[bool]],
    timeout_s: float,
    interval_s: float = 0.01,
    *,
    what: str = "a condition",
) -> None:
    """`wait_until` for the event loop: sleeps with asyncio, and `predicate` may be async
    (an HTTP probe with an AsyncClient)."""
    deadline = time.monotonic() + within(timeout_s)
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within(timeout_s):g} s waiting for {what}")
        await asyncio.sleep(interval_s)


class FakeClock:
    """A monotonic clock (seconds) that moves only when a test says so. Pass it where code
    takes `clock=` and call `advance` instead of sleeping out a cool-down."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
