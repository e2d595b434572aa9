"""A worker check is limited in CPU time, so a busy node cannot turn a right answer into a 0.

Real worker processes (one pebble pool per test): a check that computes past its CPU budget
gets a `timeout` verdict (score 0) from the CPU timer without losing its worker, or from the
kernel's RLIMIT_CPU when it is stuck in one C call; a right answer that needs 0.3 s of CPU gets
its 1 while every core is saturated; a check that never gets a CPU until the wall-clock
backstop is run again, and has no verdict (not a 0) if starved again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from referee.scoring.pool import TaskOutcome, WorkerPool, wall_backstop_s
from referee.settings import WorkerSettings
from referee.verifiers import load_installed
from tests.scoring.cpu_verifiers import CPU_TEST_VERIFIERS
from tests.support.verifiers import Sleepy
from tests.timing import within

pytestmark = pytest.mark.slow


async def _started(settings: WorkerSettings) -> WorkerPool:
    installed = load_installed(plugins=False)
    for cls in (*CPU_TEST_VERIFIERS, Sleepy):
        installed.register(cls, kind="extra")
    pool = WorkerPool(settings, installed)
    pool.start()
    await pool.warm_up()
    return pool


@pytest.fixture
async def pool() -> AsyncIterator[WorkerPool]:
    # A backstop of 1.5 x (budget + 2 s): a starved check is seen in seconds.
    started = await _started(WorkerSettings(count=1, verdict_timeout_s=1.0, verdict_wall_factor=1.5))
    yield started
    started.close()


async def _check(pool: WorkerPool, verifier: str, response: str, budget_s: float = 1.0) -> TaskOutcome:
    return await pool.run(verifier, "null", "{}", response, timeout_s=budget_s)


async def test_a_check_past_its_cpu_budget_is_a_zero_and_keeps_its_worker(pool: WorkerPool) -> None:
    before = (await _check(pool, "test.cpu_burner", "0")).details["pid"]
    started = time.perf_counter()
    outcome = await _check(pool, "test.cpu_burner", "60", budget_s=0.5)
    assert (outcome.kind, outcome.score) == ("timeout", 0.0)
    assert "0.5 s of CPU" in (outcome.reason or "") and outcome.details["timed_out"] is True
    assert time.perf_counter() - started < within(10.0)  # at its budget, not after a minute
    after = await _check(pool, "test.cpu_burner", "0")
    assert after.score == 1.0 and after.details["pid"] == before  # the worker was not replaced
    assert pool.timeouts == 1 and pool.crashes == 0


async def test_a_check_stuck_in_c_code_is_a_zero_from_the_kernel(pool: WorkerPool) -> None:
    # ~30 s of CPU in one C call: the CPU timer's handler cannot run until it returns.
    started = time.perf_counter()
    outcome = await _check(pool, "test.one_c_call", str(10**8), budget_s=0.5)
    assert (outcome.kind, outcome.score) == ("timeout", 0.0), outcome
    assert "CPU" in (outcome.reason or "") and "replaced" in (outcome.reason or "")
    assert time.perf_counter() - started < within(20.0)
    # The pool recovers: a new worker judges the next check.
    assert (await _check(pool, "test.one_c_call", "1")).score == 1.0
    assert pool.timeouts == 1 and pool.crashes == 0


@contextlib.contextmanager
def saturated_cpus() -> Iterator[None]:
    """Busy loops, 8 per core, until the block ends (each also ends by itself after a minute)."""
    hog = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(8 * len(os.sched_getaffinity(0)))]
    try:
        time.sleep(1.0)  # every hog is past its start-up and spinning
        yield
    finally:
        for process in hogs:
            process.kill()
        for process in hogs:
            process.wait()


async def test_a_right_answer_on_a_saturated_node_is_still_right() -> None:
    # A backstop of 10 x (budget + 2 s): what is under test is the CPU-time budget, not how
    # generous the default backstop is on this machine's other load.
    pool = await _started(WorkerSettings(count=1, verdict_timeout_s=1.0, verdict_wall_factor=10.0))
    try:
        with saturated_cpus():
            started = time.perf_counter()
            outcome = await _check(pool, "test.cpu_burner", "0.3", budget_s=1.0)
            elapsed = time.perf_counter() - started
    finally:
        pool.close()
    assert (outcome.kind, outcome.score) == ("ok", 1.0), (outcome, elapsed)
    # The premise: the load stretched 0.3 s of CPU past the 1 s budget (which, as a wall-clock
    # limit, used to turn this right answer into a 0).
    assert elapsed > 1.0, f"the busy loops did not saturate the node ({elapsed:.2f} s)"


async def test_a_starved_check_is_run_again_and_gets_its_verdict(pool: WorkerPool, tmp_path: Path) -> None:
    # The first run stops its worker (SIGSTOP: no CPU at all) until the backstop kills it.
    outcome = await _check(pool, "test.stops_once", str(tmp_path / "stopped"))
    assert (outcome.kind, outcome.score) == ("ok", 1.0), outcome
    assert pool.starved == 0 and pool.timeouts == 0


async def test_a_check_starved_twice_has_no_verdict_not_a_zero(pool: WorkerPool) -> None:
    # Sleeping uses no CPU: to the pool it is a check kept from a CPU past its backstop.
    started = time.perf_counter()
    outcome = await _check(pool, "test.sleepy", "60", budget_s=0.2)
    assert outcome.kind == "starved" and outcome.score is None
    assert "node overloaded" in (outcome.reason or "")
    assert pool.starved == 1 and pool.timeouts == 0
    assert time.perf_counter() - started < within(2 * wall_backstop_s(0.2, 1.5) + 10.0)
    # The pool carries on.
    assert (await _check(pool, "test.cpu_burner", "0")).score == 1.0


def test_the_backstop_leaves_the_cpu_limits_room_to_fire_first() -> None:
    assert wall_backstop_s(2.0, WorkerSettings().verdict_wall_factor) == 16.0  # the defaults
    assert wall_backstop_s(0.5, 1.0) == 2.5  # past RLIMIT_CPU's kill even on an idle node
