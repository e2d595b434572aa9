"""A pool of verifier worker processes; each verdict is limited in CPU time.

A check's budget is CPU time, enforced inside its worker (worker.cpu_budget): a check that uses
it ends as a `timeout` verdict (score 0), and one stuck in C code is killed by the kernel's
SIGXCPU, which the pool reads as the same verdict. A busy node never turns a right answer into
a 0: the wall clock is only a backstop (`wall_backstop_s`), at which pebble kills the worker and
starts a replacement. A check still running then was kept from a CPU (a worker does no I/O), so
it gets no verdict: it is run once more after a pause, then masked (`starved`) if starved
again. Workers are forked from a forkserver that has already imported the
verifiers, so a replacement is ready in milliseconds instead of re-importing every verifier module.

If the pool itself breaks (its forkserver was killed, so no worker can be replaced, and pebble
puts the pool in its error state), it is rebuilt: by the next task that finds it broken, and by
`watch()`, which the service runs in the background so that `/readyz` recovers without traffic.
A task caught in the breakage comes back as a `crashed` outcome (no verdict, masked), never as
an exception; a watchdog deadline beyond the task's own timeout covers futures that a broken
pool would never settle.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import signal
import threading
import time
from collections.abc import Hashable
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Literal

import pebble
import structlog

from referee.errors import DomainError, ErrorKind
from referee.scoring import worker
from referee.scoring.fair import FairTurns
from referee.settings import WorkerSettings
from referee.verifiers import BUILTIN_MODULES, InstalledVerifiers

log = structlog.get_logger(__name__)

# What became of one verdict task: the worker's own kinds, or what the pool saw happen to it
# ("timeout": out of CPU time, score 0; "crashed": the worker died, no verdict; "starved": the
# node kept the check from a CPU past the wall-clock backstop, twice, no verdict).
OutcomeKind = Literal["ok", "memory", "error", "timeout", "crashed", "starved"]
# Outcomes that are verdicts on the response (the rest mean no verdict could be reached).
VERDICT_KINDS: frozenset[OutcomeKind] = frozenset({"ok", "memory", "timeout"})
# Checks handed to pebble at once, per worker (see FairTurns): enough to keep every worker busy.
SLOTS_PER_WORKER = 8
# A task's future must settle once the checks queued ahead of it on its worker and itself have
# had their wall-clock backstops (pebble kills a check at its backstop; the longest backstop
# seen bounds each), plus this grace; beyond that the pool is taken to be broken and the task
# has no verdict.
WATCHDOG_GRACE_S = 10.0
# The most CPU time a check can use past its budget before one of its CPU limits ends it: the
# kernel's RLIMIT_CPU counts whole seconds, set a second past the budget (worker.cpu_budget).
CPU_KILL_GRACE_S = 2.0
# A check starved past its backstop is run this many times more, after a pause (times the
# attempt) that gives the load a moment to pass, before it is masked.
STARVED_RETRIES = 1
STARVED_PAUSE_S = 1.0
STARVED = "the node kept the check from a CPU past its wall-clock backstop"


def wall_backstop_s(budget_s: float, factor: float) -> float:
    """Wall-clock seconds after which a check with `budget_s` of CPU time is taken as starved:
    `factor` times the most CPU it can use, so a CPU limit ends it first unless the node gave it
    less than 1/factor of a CPU (with the default 4, a load of 4 busy processes per core)."""
    return factor * (budget_s + CPU_KILL_GRACE_S)


class _PoolReplaced(Exception):
    """The check's pool was replaced while it waited: its result will not come."""


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    kind: OutcomeKind
    score: float | None
    reason: str | None
    details: dict[str, Any]
    elapsed_ms: float


class PoolOverloaded(DomainError):
    """More verdicts are pending than the configured back-pressure limit."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorKind.overloaded, "overloaded", message, retry_after_s=1)


class WorkerPool:
    def __init__(self, settings: WorkerSettings, installed: InstalledVerifiers) -> None:
        self.settings = settings
        # The service's verifier index, handed to every worker process (pickled) as it starts.
        self._installed = installed
        self._pool: pebble.ProcessPool | None = None
        # Checks awaiting a result, with the pool they were scheduled on: when that pool is
        # replaced (found broken by another caller or the watcher), they are woken at once
        # instead of waiting for the watchdog (minutes, longer than a trainer's HTTP timeout).
        self._waiting: dict[asyncio.Future[Any], pebble.ProcessPool] = {}
        self.pending = 0
        self.timeouts = 0
        self.crashes = 0
        self.starved = 0
        self.rebuilds = 0
        self._rebuild_lock = threading.Lock()
        # Checks handed to pebble at once: enough to keep every worker busy, few enough that
        # the turn order (not pebble's first-come queue) decides who runs next.
        self.turns = FairTurns(SLOTS_PER_WORKER * settings.count)
        self._longest_backstop = 0.0

    @property
    def size(self) -> int:
        return self.settings.count

    def start(self) -> None:
        self._pool = self._new_pool()

    def _new_pool(self) -> pebble.ProcessPool:
        context = multiprocessing.get_context("forkserver")
        # Preloading in the forkserver makes worker start-up (and replacement after a kill) cheap.
        # A dead forkserver is started again by multiprocessing on the next process start.
        context.set_forkserver_preload(["referee.scoring.worker", *BUILTIN_MODULES])
        return pebble.ProcessPool(
            max_workers=self.settings.count,
            initializer=worker.init_worker,
            initargs=(
                self._installed,
                self.settings.memory_mb,
            ),
            context=context,
        )

    def rebuild(self, broken: pebble.ProcessPool | None = None) -> bool:
        """Replace the pool if it is `broken` (default: whichever is current) and no longer
        active; True if a new pool was started. The broken pool's tasks are aborted by pebble
        (their callers get `crashed` outcomes) and its processes are stopped in the background."""
        with self._rebuild_lock:
            current = self._pool
            if current is None or (broken is not None and current is not broken) or current.active:
                return False
            self._pool = self._new_pool()
            self.rebuilds += 1
        log.warning("worker_pool_rebuilt", rebuilds=self.rebuilds)
        for waiting, on in list(self._waiting.items()):
            if on is current:  # thread-safe: rebuild may be called off the event loop
                waiting.get_loop().call_soon_threadsafe(waiting.cancel)
        threading.Thread(target=_stop_quietly, args=(current,), name="referee-pool-stop", daemon=True).start()
        return True

    async def watch(self, interval_s: float = 0.5) -> None:
        """Rebuild the pool whenever it is found broken (run as a background task). An idle
        pool is probed with a no-op task, which is how pebble notices a broken pool; a busy one
        is checked by its own tasks."""
        while True:
            await asyncio.sleep(interval_s)
            pool = self._pool
            if pool is None:
                continue
            if pool.active and self.pending == 0:
                with contextlib.suppress(RuntimeError):  # now marked broken: rebuilt below
                    pool.schedule(worker.ping, timeout=60).add_done_callback(_consume)
            if not pool.active:
                self.rebuild(pool)

    async def warm_up(self) -> None:
        """Run one task per worker so the first real request does not pay for start-up."""
        pool = self._require()
        futures = [pool.schedule(worker.ping, timeout=60) for _ in range(self.size)]
        await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))

    def alive(self) -> bool:
        return self._pool is not None and self._pool.active

    def close(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool.join(timeout=10)
            self._pool = None

    def _require(self) -> pebble.ProcessPool:
        if self._pool is None:
            raise RuntimeError("worker pool is not started")
        return self._pool

    def check_capacity(self, count: int) -> None:
        if self.pending + count > self.settings.max_pending_verdicts:
            raise PoolOverloaded(
                f"{self.pending} verdicts pending; limit {self.settings.max_pending_verdicts}"
            )

    def _schedule(self, args: tuple[Any, ...], backstop_s: float) -> tuple[pebble.ProcessPool, Any]:
        """Schedule on the current pool; a pool found broken is rebuilt once and asked again."""
        for attempt in range(2):
            pool = self._require()
            try:
                return pool, pool.schedule(worker.run_check, args=args, timeout=backstop_s)
            except RuntimeError:  # pebble: "Unexpected error within the Pool" / "not active"
                if attempt or not self.rebuild(pool):
                    raise
        raise AssertionError("unreachable")

    async def run(
        self,
        ref: worker.WorkerRef,
        reference_json: str,
        options_json: str,
        response: str,
        timeout_s: float,
        owner: Hashable = None,
    ) -> TaskOutcome:
        """One check with `timeout_s` of CPU time; `owner` (the caller's key) takes its turn
        with the others (`FairTurns`)."""
        self.pending += 1
        try:
            async with self.turns.turn(owner):
                return await self._run_now(ref, reference_json, options_json, response, timeout_s)
        finally:
            self.pending -= 1

    async def _run_now(
        self, ref: worker.WorkerRef, reference_json: str, options_json: str, response: str, timeout_s: float
    ) -> TaskOutcome:
        args = (ref, reference_json, options_json, response, timeout_s)
        backstop_s = wall_backstop_s(timeout_s, self.settings.verdict_wall_factor)
        for attempt in range(STARVED_RETRIES + 1):
            if attempt:  # the load that starved it may pass: give it a moment
                await asyncio.sleep(STARVED_PAUSE_S * attempt)
            outcome = await self._attempt(args, timeout_s, backstop_s)
            if outcome.kind != "starved":
                return outcome
            log.warning("verdict_starved", budget_s=timeout_s, backstop_s=backstop_s, attempt=attempt + 1)
        self.starved += 1
        return outcome

    async def _attempt(self, args: tuple[Any, ...], timeout_s: float, backstop_s: float) -> TaskOutcome:
        start = time.perf_counter()
        try:
            pool, future = self._schedule(args, backstop_s)
        except RuntimeError as exc:
            self.crashes += 1
            return TaskOutcome("crashed", None, f"verifier pool unavailable: {exc}"[:500], {}, 0.0)
        self._longest_backstop = max(self._longest_backstop, backstop_s)
        watchdog = asyncio.timeout(self._longest_backstop * (SLOTS_PER_WORKER + 1) + WATCHDOG_GRACE_S)
        try:
            async with watchdog:
                kind, score, reason, details, elapsed = await self._settled(pool, future)
        except _PoolReplaced:
            return self._broken(pool, future, "the pool was replaced while the check waited")
        except FutureTimeout:
            if watchdog.expired():  # never settled: the pool is broken
                return self._broken(pool, future, "no result from the pool")
            # pebble killed it at the backstop: neither CPU limit fired, so the check spent that
            # time waiting for a CPU. Not the response's doing: no verdict.
            return TaskOutcome(
                "starved",
                None,
                f"node overloaded: {STARVED} ({backstop_s:g} s); worker replaced",
                {},
                backstop_s * 1000.0,
            )
        except pebble.ProcessExpired as exc:
            if exc.exitcode == -signal.SIGXCPU:  # the kernel's CPU limit (stuck in C code)
                self.timeouts += 1
                return TaskOutcome(
                    "timeout",
                    0.0,
                    f"{worker.cpu_timeout_reason(timeout_s)}; worker killed and replaced",
                    {"timed_out": True},
                    (time.perf_counter() - start) * 1000.0,
                )
            self.crashes += 1
            return TaskOutcome(
                "crashed",
                None,
                f"verifier worker died (exit code {exc.exitcode}); worker replaced",
                {},
                0.0,
            )
        except BrokenProcessPool as exc:  # the pool broke under this task (its forkserver died)
            return self._broken(pool, future, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # e.g. a result that cannot be unpickled: no verdict, not a 500
            return TaskOutcome(
                "error", None, f"verifier task failed: {type(exc).__name__}: {exc}"[:500], {}, 0.0
            )
        if kind == "timeout":
            self.timeouts += 1
        return TaskOutcome(kind, score, reason, details, elapsed)

    async def _settled(self, pool: pebble.ProcessPool, future: Any) -> Any:
        """The task's result, or _PoolReplaced when `rebuild` gave its pool up while it waited."""
        wrapped = asyncio.wrap_future(future)
        self._waiting[wrapped] = pool
        try:
            return await wrapped
        except asyncio.CancelledError:
            task = asyncio.current_task()
            # Only the wrapper was cancelled (by rebuild), not this task: no verdict, masked.
            if wrapped.cancelled() and task is not None and not task.cancelling():
                raise _PoolReplaced from None
            raise
        finally:
            self._waiting.pop(wrapped, None)

    def _broken(self, pool: pebble.ProcessPool, future: Any, why: str) -> TaskOutcome:
        future.cancel()
        self.crashes += 1
        self.rebuild(pool)
        return TaskOutcome("crashed", None, f"verifier pool broke ({why}); pool rebuilt"[:500], {}, 0.0)


def _consume(future: Any) -> None:
    """Retrieve a probe's outcome so that a failure is not reported as never retrieved."""
    if not future.cancelled():
        future.exception()


def _stop_quietly(pool: pebble.ProcessPool) -> None:
    try:
        pool.stop()
        pool.join(timeout=10)
    except Exception as exc:  # a broken pool may fail to stop cleanly; its processes are gone anyway
        log.warning("worker_pool_stop_failed", error=f"{type(exc).__name__}: {exc}")
