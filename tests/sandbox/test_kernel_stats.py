"""The supervisor's clock for a running test (in_container/kernel_stats.py, supervisor.time_up):
a program that waited for a CPU gets that time back up to a backstop, one that slept does not.
The kernel's readings are replaced by scripted ones: no Docker, no real load needed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from referee.sandbox.in_container import kernel_stats, supervisor

LIMIT_S = 2.0
BACKSTOP_S = 6.0


class Kernel:
    """Scripted run-queue waits (ns per tid), container CPU time and quota throttling (s)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.waits: dict[int, int] = {}
        self.cpu_s = 0.0
        self.throttled_s = 0.0
        self.lowered: set[int] = set()  # tids that lowered their own priority
        monkeypatch.setattr(kernel_stats, "run_queue_waits", self.run_queue_waits)
        monkeypatch.setattr(kernel_stats, "container_cpu_s", lambda: self.cpu_s)
        monkeypatch.setattr(kernel_stats, "throttled_s", lambda: self.throttled_s)

    def run_queue_waits(self, skip: set[int], lowered: set[int] | None = None) -> dict[int, int]:
        if lowered is not None:
            lowered |= self.lowered
        return dict(self.waits)


def verdict_at(clock: kernel_stats.WaitClock, now: float) -> str | None:
    clock.sample(now)
    return supervisor.time_up(clock, now, LIMIT_S, BACKSTOP_S)


def test_a_sleeping_program_times_out_on_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """sleep, a read that never returns, a deadlock: never in a run queue, so never masked."""
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    kernel.waits = {10: 2_000_000}  # 2 ms of start-up waiting
    kernel.cpu_s = 0.05
    assert verdict_at(clock, LIMIT_S) is None  # it gets its 2 ms back
    assert verdict_at(clock, LIMIT_S + 0.003) == "timeout"


def test_a_starved_program_gets_its_waiting_back_then_is_starved(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    kernel.waits = {10: 1_800_000_000}  # 1.8 s of its first 2 s in a run queue
    kernel.cpu_s = 0.2
    assert verdict_at(clock, LIMIT_S) is None
    kernel.waits = {10: 5_500_000_000}
    kernel.cpu_s = 0.5
    assert verdict_at(clock, BACKSTOP_S) == "starved"


def test_a_starved_program_that_used_its_time_still_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    kernel.waits = {10: 1_000_000_000}
    assert verdict_at(clock, LIMIT_S) is None
    kernel.waits = {10: 2_000_000_000}  # own time 3.5 - 2.0 = 1.5 s: not yet
    assert verdict_at(clock, 3.5) is None
    assert verdict_at(clock, 4.01) == "timeout"  # own time 2.01 s


def test_many_waiting_tasks_count_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight processes of the program fighting over the container's one CPU wait at once: one
    wait, not eight (the sum would hand a parallel program eight times the clock), and the
    CPU they burn together ends it at the limit."""
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    kernel.waits = {tid: 1_750_000_000 for tid in range(10, 18)}
    kernel.cpu_s = 1.0
    assert verdict_at(clock, LIMIT_S) is None
    assert clock.waited_s == pytest.approx(1.75)
    kernel.cpu_s = LIMIT_S
    assert verdict_at(clock, LIMIT_S + 0.1) == "timeout"


def test_waits_are_counted_per_task_between_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task that ended between two readings takes its waiting with it; a new task (or a reused
    tid with a smaller counter) counts from zero."""
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    kernel.waits = {10: 300_000_000}
    clock.sample(0.5)
    kernel.waits = {10: 400_000_000, 11: 50_000_000}
    clock.sample(1.0)
    kernel.waits = {10: 20_000_000}  # tid 10 reused by a new task
    clock.sample(1.5)
    assert clock.waited_s == pytest.approx(0.3 + 0.1 + 0.02)
    assert clock.own_s(1.5) == pytest.approx(1.5 - 0.42)


def test_the_waits_of_real_tasks_are_readable() -> None:
    """On this machine's /proc: every task's schedstat parses (the supervisor reads the same
    files inside the container)."""
    waits = kernel_stats.run_queue_waits(set())
    assert waits and all(isinstance(v, int) and v >= 0 for v in waits.values())


def test_waiting_for_its_own_cpu_quota_is_not_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `cpus` 0.25 an endless loop alone on the node waits 3/4 of the clock, throttled by
    its container's quota: that is its own use of CPU, so at the backstop it times out
    instead of being masked as starved (own time 1.5 s, CPU 1.5 s there)."""
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    for second in range(1, 9):
        kernel.waits = {10: second * 750_000_000}
        kernel.throttled_s = second * 0.75
        kernel.cpu_s = second * 0.25
        verdict = verdict_at(clock, float(second))
        if verdict is not None:
            break
    assert (verdict, second) == ("timeout", BACKSTOP_S)
    node_starved = Kernel(monkeypatch)  # the same waits, none of them its quota's: starved
    clock = kernel_stats.WaitClock(0.0, set())
    node_starved.waits, node_starved.cpu_s = {10: 4_500_000_000}, 1.5
    assert verdict_at(clock, BACKSTOP_S) == "starved"


def test_waiting_after_yielding_to_others_is_not_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endless loop under SCHED_IDLE (or nice 19) waits whenever a neighbour runs: its own
    doing, so it times out on the wall clock like a sleeper, never masked as starved."""
    kernel = Kernel(monkeypatch)
    clock = kernel_stats.WaitClock(0.0, set())
    kernel.waits, kernel.lowered, kernel.cpu_s = {10: 1_500_000_000}, {10}, 0.5
    assert verdict_at(clock, LIMIT_S) == "timeout"


@pytest.mark.parametrize(
    "lower", ["", "os.nice(19)", "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))"]
)
def test_a_task_that_lowered_its_priority_is_seen(lower: str) -> None:
    """On this machine's /proc, as the supervisor reads it inside the container."""
    code = f"import os, sys\n{lower}\nsys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        lowered: set[int] = set()
        waits = kernel_stats.run_queue_waits({os.getpid()}, lowered)
        assert child.pid in waits
        assert (child.pid in lowered) == bool(lower)
    finally:
        child.kill()
        child.wait()
