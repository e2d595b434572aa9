"""Admission per execution class: a request is accepted only if its queueing delay is bounded.

Work waits in one of three lanes, each in front of its own executors: "cpu" (the verifier
worker processes), "sandbox" (code containers) and "io" (verifiers that call out, such as
webhooks). Admission is per lane, so a burst of code groups fills the sandbox lane without
delaying one math verdict, and a flood of math does not hold back code.

A lane's expected delay for new work is the work already admitted to it (units: verdicts, or
programs for the sandbox) divided by the lane's measured throughput. When that delay exceeds
`max_queue_wait_s`, the request is refused before anything runs: 503 with `Retry-After`, which
trainers retry, instead of an answer after a minute or a client timeout (and never a silent
zero). An idle lane admits any request: its own size is execution time, not queueing.

Owners (API keys): the cpu lane's workers take checks in turns over owners (`FairTurns`), so
the delay a new request meets there is its owner's own queued work plus, from every other
owner, at most as much as that (one turn each): a trainer that floods the lane is refused
while another trainer's request is still admitted. In the other lanes, whose executors serve
first come first served, every queued unit counts, whoever owns it. Without keys every
request has the same (no) owner and the two estimates agree.

Background work (audits, owner a `BackgroundOwner`) is never refused here and never counts
against scoring: it is bounded where it is made (an audit scores a few chunks at a time) and,
in the sandbox lane, by `BackgroundShare`: at most a quarter of the run slots (at least one),
and none taken while a scoring program waits for a slot. Its units are kept apart (`background`)
so that a lane busy with an audit's slow programs (5,000 `while True` loops at 2 s each) neither
looks full nor slow to a trainer: before that split such an audit held every other key's code
scoring at 503 for as long as it ran.

Throughput is measured, not configured: units completed per second of busy time (time with
work in the lane), both decayed with a half-life so the estimate follows the load (a group of
slow programs, a faster machine). Until a lane has been busy for a while a prior stands in.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable, Hashable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from referee.errors import DomainError, ErrorKind
from referee.settings import WorkerSettings
from referee.verifiers.base import Lane

LANES: tuple[Lane, ...] = ("cpu", "sandbox", "io")
# Seconds of busy time after which the measurement replaces the prior; and its half-life.
MIN_BUSY_S = 1.0
HALF_LIFE_S = 30.0
MAX_RETRY_AFTER_S = 60  # a client should look again within a minute, whatever the estimate
FAIR_LANES: frozenset[Lane] = frozenset({"cpu"})  # executors that serve owners in turns


@dataclass(frozen=True)
class BackgroundOwner:
    """Work done for a caller in the background (an audit job): admitted without the queueing
    bound and kept out of scoring's estimates (see the module's doc)."""

    kind: str
    job_id: str
    key: Hashable = None


def is_background(owner: Hashable) -> bool:
    return isinstance(owner, BackgroundOwner)


class LaneOverloaded(DomainError):
    """A lane's queue would make this request wait longer than the configured bound."""

    def __init__(self, lane: Lane, wait_s: float, bound_s: float) -> None:
        super().__init__(
            ErrorKind.overloaded,
            "overloaded",
            f"the {lane} lane is busy: a new request would wait about {wait_s:.0f} s "
            f"(bound {bound_s:g} s); retry later",
            detail={"lane": lane, "estimated_wait_s": round(wait_s, 1), "max_queue_wait_s": bound_s},
            retry_after_s=min(MAX_RETRY_AFTER_S, max(1, math.ceil(wait_s - bound_s))),
        )


@dataclass
class LaneState:
    """Admitted work and measured throughput of one lane."""

    prior_rate: float  # units/s assumed until measured
    in_flight: float = 0.0
    owned: dict[Hashable, float] = field(default_factory=dict)  # in_flight by owner
    background: float = 0.0  # units of background owners: not in in_flight, nor measured
    busy_s: float = 0.0  # decayed seconds with work in flight
    completed: float = 0.0  # decayed units completed in that time
    last: float = field(default=0.0)

    def rate(self) -> float:
        # Work completes in whole jobs (a group of programs at once): until at least one unit
        # completed within the measured (decayed) window, nothing is known: the prior stands.
        if self.busy_s < MIN_BUSY_S or self.completed < 1.0:
            return self.prior_rate
        return self.completed / self.busy_s

    def wait_s(self) -> float:
        return self.in_flight / self.rate()

    def wait_for(self, owner: Hashable, fair: bool) -> float:
        """The queueing delay of `owner`'s next unit: with turns, its own queued work plus one
        turn per unit of it from each other owner (at most what that owner has queued)."""
        if not fair:
            return self.wait_s()
        own = self.owned.get(owner, 0.0)
        others = sum(min(n, own + 1.0) for o, n in self.owned.items() if o != owner)
        return (own + others) / self.rate()


class Admission:
    """The three lanes. `admit` reserves a request's units in every lane it uses, or raises
    LaneOverloaded without reserving any; `done` returns units as work completes."""

    def __init__(
        self,
        max_queue_wait_s: float,
        prior_rates: Mapping[Lane, float],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_queue_wait_s = max_queue_wait_s
        self._clock = clock
        now = clock()
        self.lanes: dict[Lane, LaneState] = {
            lane: LaneState(prior_rate=prior_rates[lane], last=now) for lane in LANES
        }
        self.refused: dict[Lane, int] = dict.fromkeys(LANES, 0)

    @classmethod
    def for_workers(cls, workers: WorkerSettings) -> Admission:
        """Priors until measured: a verdict per worker every 2 ms (math and logic checks take
        about 1 ms), ten programs a second, fifty calls out."""
        priors: dict[Lane, float] = {"cpu": 500.0 * workers.count, "sandbox": 10.0, "io": 50.0}
        return cls(workers.max_queue_wait_s, priors)

    def _tick(self, state: LaneState) -> None:
        """Account the time since the last event: busy time if work was in flight; decay."""
        now = self._clock()
        dt = max(0.0, now - state.last)
        state.last = now
        decay = 0.5 ** (dt / HALF_LIFE_S)
        state.completed *= decay
        state.busy_s = state.busy_s * decay + (dt if state.in_flight > 0 else 0.0)

    def wait_s(self, lane: Lane) -> float:
        """The expected queueing delay of new work in `lane` now, in seconds."""
        state = self.lanes[lane]
        self._tick(state)
        return state.wait_s()

    def admit(self, units: Mapping[Lane, float], owner: Hashable = None) -> None:
        if is_background(owner):
            for lane, n in units.items():
                if n > 0:
                    self.lanes[lane].background += n
            return
        for lane, n in units.items():
            if n <= 0:
                continue
            state = self.lanes[lane]
            self._tick(state)
            wait = state.wait_for(owner, lane in FAIR_LANES)
            if state.in_flight > 0 and wait > self.max_queue_wait_s:
                self.refused[lane] += 1
                raise LaneOverloaded(lane, wait, self.max_queue_wait_s)
        for lane, n in units.items():
            if n > 0:
                state = self.lanes[lane]
                state.in_flight += n
                state.owned[owner] = state.owned.get(owner, 0.0) + n

    def done(self, lane: Lane, units: float, *, completed: bool = True, owner: Hashable = None) -> None:
        """`units` of `lane` (admitted for `owner`) left the queue; `completed` counts them as
        throughput (work that failed before running must not make the lane look fast)."""
        state = self.lanes[lane]
        if is_background(owner):
            state.background = max(0.0, state.background - units)
            return
        self._tick(state)
        state.in_flight = max(0.0, state.in_flight - units)
        left = state.owned.get(owner, 0.0) - units
        if left > 1e-9:
            state.owned[owner] = left
        else:
            state.owned.pop(owner, None)
        if completed:
            state.completed += units

    def snapshot(self) -> dict[str, dict[str, float]]:
        """Per lane: units in flight, measured rate, expected wait (for /healthz and metrics)."""
        out: dict[str, dict[str, float]] = {}
        for lane, state in self.lanes.items():
            self._tick(state)
            out[lane] = {
                "in_flight": state.in_flight,
                "rate_per_s": round(state.rate(), 3),
                "wait_s": round(state.wait_s(), 3),
                "refused": self.refused[lane],
                "background": state.background,
            }
        return out


class BackgroundShare:
    """The part of a pool of run slots that background work may hold: at most `limit` at once,
    and a new one only while `foreground_waiting()` is false (scoring goes first). Holders wait
    here, before admission, so background work never queues in the pool in front of scoring."""

    POLL_S = 0.05  # how often a waiter looks at the foreground queue, which tells no one

    def __init__(self, limit: int, foreground_waiting: Callable[[], bool] = lambda: False) -> None:
        self.limit = max(1, limit)
        self.foreground_waiting = foreground_waiting
        self.held = 0
        self._released = asyncio.Event()

    @classmethod
    def of_slots(cls, slots: int, fraction: float, foreground_waiting: Callable[[], bool]) -> BackgroundShare:
        """⌊slots × fraction⌋ slots, at least one."""
        return cls(max(1, math.floor(slots * fraction)), foreground_waiting)

    def _free(self) -> bool:
        return self.held < self.limit and not self.foreground_waiting()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot while the body runs (cancellation while waiting takes none)."""
        while not self._free():
            self._released.clear()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._released.wait(), self.POLL_S)
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1
            self._released.set()
