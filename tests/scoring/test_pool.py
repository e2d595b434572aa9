"""`WorkerPool` when its pebble pool is replaced under a waiting check.

Two callers (or a caller and the watcher) can find a broken pool at nearly the same time: one
rebuilds it, and a check scheduled on the old pool just before may never settle (the old pool
is stopped). The check must come back as a masked `crashed` outcome within a fraction of a
second, not after the watchdog's minutes, which is longer than a trainer's HTTP timeout.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from typing import Any

import pytest

from referee.scoring.pool import WorkerPool
from referee.settings import WorkerSettings
from referee.verifiers import builtin_index
from tests.timing import within


class _StalledPool:
    """A pebble pool that accepts tasks and never settles them (its processes are gone)."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []
        self.active = True
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def join(self, timeout: float | None = None) -> None:
        pass

    def schedule(self, function: Any, args: Any = (), timeout: float | None = None) -> Future[Any]:
        future: Future[Any] = Future()
        self.futures.append(future)
        return future


class _SettlingPool(_StalledPool):
    """Settles every task at once with a verdict."""

    def schedule(self, function: Any, args: Any = (), timeout: float | None = None) -> Future[Any]:
        future = super().schedule(function, args, timeout)
        future.set_result(("ok", 1.0, None, {}, 1.0))
        return future


def _pool(pebble_pool: Any) -> WorkerPool:
    pool = WorkerPool(WorkerSettings(count=1, verdict_timeout_s=60.0), builtin_index())
    pool._pool = pebble_pool  # the pebble pool it would have started
    return pool


async def test_a_check_on_a_replaced_pool_is_masked_at_once() -> None:
    stalled = _StalledPool()
    pool = _pool(stalled)
    started = time.perf_counter()
    task = asyncio.create_task(pool.run("exact", '"4"', "{}", "4", timeout_s=60.0))
    await asyncio.sleep(0.05)
    assert not task.done() and len(stalled.futures) == 1  # waiting on the stalled pool
    stalled.active = False  # found broken by another caller, which rebuilds it
    pool._new_pool = _SettlingPool  # type: ignore[method-assign]
    assert pool.rebuild(stalled)
    outcome = await asyncio.wait_for(task, timeout=within(5.0))
    assert outcome.kind == "crashed" and outcome.score is None
    assert "replaced" in (outcome.reason or "")
    assert stalled.futures[0].cancelled()
    assert time.perf_counter() - started < within(1.0)
    # The next check runs on the new pool and gets its verdict.
    assert (await pool.run("exact", '"4"', "{}", "4", timeout_s=60.0)).kind == "ok"


async def test_a_check_on_the_current_pool_waits_for_its_result() -> None:
    stalled = _StalledPool()
    pool = _pool(stalled)
    task = asyncio.create_task(pool.run("exact", '"4"', "{}", "4", timeout_s=60.0))
    await asyncio.sleep(1.0)  # the pool is still the current one: the check keeps waiting
    assert not task.done()
    stalled.futures[0].set_result(("ok", 1.0, None, {}, 3.0))
    outcome = await asyncio.wait_for(task, timeout=within(5.0))
    assert (outcome.kind, outcome.score) == ("ok", 1.0)


async def test_cancelling_the_caller_is_not_taken_for_a_replaced_pool() -> None:
    pool = _pool(_StalledPool())
    task = asyncio.create_task(pool.run("exact", '"4"', "{}", "4", timeout_s=60.0))
    await asyncio.sleep(0.05)
    task.cancel()  # the request went away: the cancellation reaches the caller as such
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pool.pending == 0 and pool.crashes == 0
