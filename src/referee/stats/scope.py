"""Pages over every replica (through the shared store) or over the one that answers.

A page is built from a `Snapshot`: minute rows tagged with their replica. This replica's rows
always come from its memory (fresher than what it last published, and never counted twice);
the other replicas' from the shared store, read in a thread and cached for `cache_s` (the
flush interval: they change no faster than they are published), so a dashboard refreshing
every few seconds costs one query per interval whatever the number of viewers.

The shared store never makes a page fail nor wait long: a read that fails, or that has not
answered within `wait_s` (it goes on in its thread, and its answer fills the cache), gives
this replica's figures with the reason in `scope.reason`; a failure is remembered for
`cache_s`, so an outage costs one attempt per interval, not one per request. The reason names
the error's class and the server's message, never the server (`stats.shared`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from referee.models import HttpStat, ReplicaSeen, ScopeKind, StatsScope, Traffic, VerifierStatsPage
from referee.stats.shared import SharedRows, SharedStats, SharedUnavailable
from referee.stats.tracker import Statistics
from referee.stats.views import ReplicaHttp, ReplicaMinute, http_page, verifier_page


@dataclass
class Snapshot:
    """The rows of a window and whose they are; pages are cut from it without I/O."""

    minutes: list[ReplicaMinute]
    http: list[ReplicaHttp]
    scope: StatsScope
    window_minutes: int  # the longest window a page may ask for

    def _oldest(self, minutes: int, now_minute: int) -> tuple[int, int]:
        minutes = max(1, min(minutes, self.window_minutes))
        return minutes, now_minute - 60 * (minutes - 1)

    def verifier_page(
        self, minutes: int, step_minutes: int, traffic: Traffic, *, now_minute: int
    ) -> VerifierStatsPage:
        minutes, oldest = self._oldest(minutes, now_minute)
        rows = (row for row in self.minutes if row[1][3] >= oldest)
        return verifier_page(rows, minutes, step_minutes, traffic, self.scope)

    def http_page(self, minutes: int, step_minutes: int, *, now_minute: int) -> HttpStat:
        _, oldest = self._oldest(minutes, now_minute)
        return http_page((row for row in self.http if row[1] >= oldest), step_minutes)


@dataclass
class _Read:
    at: float  # monotonic time it began
    oldest: int
    rows: SharedRows | None = None
    why: str | None = None  # the failure, when it failed


class ScopedStats:
    """`stats` (this replica's, named `replica`) and, when `shared` is set, everyone's."""

    def __init__(
        self,
        stats: Statistics,
        shared: SharedStats | None,
        replica: str,
        *,
        cache_s: float = 5.0,
        wait_s: float = 2.0,
    ) -> None:
        self.stats = stats
        self.shared = shared
        self.replica = replica
        self.cache_s = cache_s
        self.wait_s = wait_s
        self._last: _Read | None = None  # the latest read that finished
        self._inflight: tuple[_Read, asyncio.Future[SharedRows]] | None = None

    def now_minute(self) -> int:
        return int(self.stats.clock() // 60) * 60

    def default_scope(self) -> ScopeKind:
        return ScopeKind.replica if self.shared is None else ScopeKind.all

    async def snapshot(self, minutes: int, scope: ScopeKind | None = None) -> Snapshot:
        """The rows of the last `minutes` (never beyond the window kept) for `scope` (the
        default: all replicas when a shared store is configured)."""
        window = max(1, min(minutes, self.stats.window_minutes))
        oldest = self.now_minute() - 60 * (window - 1)
        own_minutes, own_http = self.stats.rows(oldest, self.replica)
        now = self.stats.clock()
        kind = scope or self.default_scope()
        reason = None
        if kind is ScopeKind.all and self.shared is None:
            reason = "no shared store is configured (REFEREE_DB_URL)"
        elif kind is ScopeKind.all:
            try:
                rows = await self._shared_rows(oldest)
            except SharedUnavailable as exc:
                reason = f"the shared statistics store cannot be read ({exc.why})"
            else:
                others = [r for r in rows.minutes if r[0] != self.replica and r[1][3] >= oldest]
                others_http = [r for r in rows.http if r[0] != self.replica and r[1] >= oldest]
                seen = {r: t for r, t in rows.replicas.items() if r != self.replica and t >= oldest}
                seen[self.replica] = now
                scope_info = StatsScope(
                    kind=ScopeKind.all,
                    replica=self.replica,
                    replicas=[ReplicaSeen(replica=r, last_seen=t) for r, t in sorted(seen.items())],
                )
                return Snapshot(
                    own_minutes + others, own_http + others_http, scope_info, self.stats.window_minutes
                )
        scope_info = StatsScope(
            kind=ScopeKind.replica,
            replica=self.replica,
            replicas=[ReplicaSeen(replica=self.replica, last_seen=now)],
            reason=reason,
        )
        return Snapshot(own_minutes, own_http, scope_info, self.stats.window_minutes)

    async def _shared_rows(self, oldest: int) -> SharedRows:
        """The other replicas' rows from `oldest` on: cached, or read in a thread (one read at
        a time); SharedUnavailable when the read fails or is late."""
        assert self.shared is not None
        now = time.monotonic()
        last = self._last
        if last is not None and now - last.at < self.cache_s:
            if last.why is not None:
                raise SharedUnavailable(last.why)
            if last.oldest <= oldest and last.rows is not None:
                return last.rows
        inflight = self._inflight
        if inflight is None or inflight[1].done() or inflight[0].oldest > oldest:
            read = _Read(now, oldest)
            future = asyncio.ensure_future(asyncio.to_thread(self.shared.read, oldest))
            future.add_done_callback(lambda done: self._finished(read, done))
            inflight = self._inflight = (read, future)
        try:
            return await asyncio.wait_for(asyncio.shield(inflight[1]), self.wait_s)
        except TimeoutError:
            raise SharedUnavailable(f"no answer within {self.wait_s:g} s") from None
        except SharedUnavailable:
            raise
        except Exception as exc:  # a fault of ours must not fail the page either
            raise SharedUnavailable(type(exc).__name__) from exc

    def _finished(self, read: _Read, done: asyncio.Future[SharedRows]) -> None:
        """A read ended (whether or not a request still waits for it): it fills the cache."""
        if done.cancelled():
            return
        exc = done.exception()
        if exc is None:
            read.rows = done.result()
        else:
            read.why = exc.why if isinstance(exc, SharedUnavailable) else type(exc).__name__
        if self._last is None or read.at >= self._last.at:
            self._last = read
