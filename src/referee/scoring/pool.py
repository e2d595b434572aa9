"""A pool of verifier worker processes with a hard per-verdict wall-clock limit.

pebble kills the worker running a task that overstays its timeout and starts a replacement;
SIGALRM-based timeouts (Math-Verify's) cannot do this off the main thread, and a thread cannot
be killed at all. Workers are forked from a forkserver that has already imported the
verifiers, so a replacement is ready in milliseconds instead of re-importing every verifier module.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Literal

import pebble

from referee.errors import DomainError, ErrorKind
from referee.scoring import worker
from referee.settings import Settings
from referee.verifiers import BUILTIN_MODULES

# What became of one verdict task: the worker's own kinds, or what the pool saw happen to it
# ("timeout": killed at the hard limit, score 0; "crashed": the worker died, no verdict).
OutcomeKind = Literal["ok", "memory", "error", "timeout", "crashed"]
# Outcomes that are verdicts on the response (the rest mean no verdict could be reached).
VERDICT_KINDS: frozenset[OutcomeKind] = frozenset({"ok", "memory", "timeout"})


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
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._pool: pebble.ProcessPool | None = None
        self.pending = 0
        self.timeouts = 0
        self.crashes = 0

    @property
    def size(self) -> int:
        return self._settings.workers

    def start(self) -> None:
        context = multiprocessing.get_context("forkserver")
        # Preloading in the forkserver makes worker start-up (and replacement after a kill) cheap.
        context.set_forkserver_preload(["referee.scoring.worker", *BUILTIN_MODULES])
        self._pool = pebble.ProcessPool(
            max_workers=self._settings.workers,
            initializer=worker.init_worker,
            initargs=(
                list(self._settings.extra_verifiers),
                self._settings.load_plugins,
                self._settings.worker_memory_mb,
            ),
            context=context,
        )

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
        if self.pending + count > self._settings.max_pending_verdicts:
            raise PoolOverloaded(
                f"{self.pending} verdicts pending; limit {self._settings.max_pending_verdicts}"
            )

    async def run(
        self, ref: worker.WorkerRef, reference_json: str, options_json: str, response: str, timeout_s: float
    ) -> TaskOutcome:
        pool = self._require()
        self.pending += 1
        try:
            future = pool.schedule(
                worker.run_check, args=(ref, reference_json, options_json, response), timeout=timeout_s
            )
            try:
                kind, score, reason, details, elapsed = await asyncio.wrap_future(future)
            except FutureTimeout:
                self.timeouts += 1
                return TaskOutcome(
                    "timeout",
                    0.0,
                    f"check exceeded its {timeout_s:g} s budget; worker killed and replaced",
                    {"timed_out": True},
                    timeout_s * 1000.0,
                )
            except pebble.ProcessExpired as exc:
                self.crashes += 1
                return TaskOutcome(
                    "crashed",
                    None,
                    f"verifier worker died (exit code {exc.exitcode}); worker replaced",
                    {},
                    0.0,
                )
            except Exception as exc:  # e.g. a result that cannot be unpickled: no verdict, not a 500
                return TaskOutcome(
                    "error", None, f"verifier task failed: {type(exc).__name__}: {exc}"[:500], {}, 0.0
                )
            return TaskOutcome(kind, score, reason, details, elapsed)
        finally:
            self.pending -= 1
