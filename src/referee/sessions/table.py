"""`CodeSessions`: the table of one service's open code sessions.

A session is a container of the sandbox pinned to one rollout (`SandboxPool.open_session`):
calls run in a kernel kept alive in it, so variables, imports and files in /work carry over
from one call to the next. The table is what the HTTP routes (and environments) see: it gives
each session a random id, remembers whose it is, refuses what a key or the service may not
hold, and ends what nobody uses.

- **Ids and owners.** An id is 256 random bits (`secrets.token_urlsafe`); a session belongs to
  the key that opened it (its digest, `owner`). Another key asking for it is told it does not
  exist (`not_found`, as for an id never issued), so ids are no oracle. On an open service
  (no keys: `owner` None) every caller is the same caller.
- **Bounds.** At most `max_open` sessions in all (the sandbox's `max_sessions`: each pins a
  container, apart from the scoring pool's), 503 + Retry-After beyond; at most
  `max_per_key` per key, 429 + Retry-After beyond (not on an open service: no keys to tell
  apart, only the global bound). A slot is taken before the container is asked for, so
  concurrent opens never overshoot either bound.
- **Lifetimes.** A session unused for its idle TTL, or older than `max_lifetime_s`, is closed
  by the reaper (a task of `start()`); a session with a call running or waiting is never
  reaped under it, and a call that finds its session past its lifetime is refused (404).
  Closing is done in the background (tracked, awaited at `stop()`), so neither DELETE nor the
  reaper waits for a container's scrub, and a client that hangs up cannot leave a container
  pinned half-closed.
- **One call at a time.** A session's kernel runs one call at a time, so calls queue, in
  order: a call waits for the one before it at most that session's call time plus the
  host's slack (no call can run longer), and at most `MAX_WAITING_CALLS` may wait; beyond
  either, `session_busy` (409). A trainer's tool calls within one rollout are sequential;
  a queue rather than an immediate 409 forgives a client that retried a timed-out call.
- **Losses.** A call whose container was lost (`SandboxUnavailable`) ends the session: the
  caller gets `session_lost` (503, detail `{"status": "error"}`) and the id is gone; a call
  that ended its session uncleanly (the kernel could not be restarted) returns its outcome
  and the session is gone after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from referee.errors import DomainError, ErrorKind
from referee.sandbox import (
    CallOutcome,
    SandboxUnavailable,
    SessionClosed,
    SessionSpec,
    call_wait_s,
)
from referee.sessions.inputs import (
    checked_code,
    checked_files,
    checked_language,
    checked_limits,
    positive,
)
from referee.sessions.records import Opener, SessionCounters, SessionHandle, SessionInfo
from referee.settings import SessionSettings

log = structlog.get_logger(__name__)

Clock = Callable[[], float]
# Callers that may wait behind a session's running call (409 beyond).
MAX_WAITING_CALLS = 4
# What a refused open tells a client to wait before it tries again (a slot frees when a
# session is closed or reaped, which is seconds to minutes away).
RETRY_AFTER_S = 5


@dataclass
class _Entry:
    id: str
    owner: Hashable
    handle: SessionHandle
    spec: SessionSpec
    idle_ttl_s: float
    created: float  # the table's clock
    created_at: float  # Unix time
    last_used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    active: int = 0  # calls running or waiting: never reaped under them
    calls: int = 0
    restarts: int = 0


def _not_found(session_id: str) -> DomainError:
    return DomainError(ErrorKind.not_found, "unknown_session", f"no open session {session_id[:64]!r}")


class CodeSessions:
    def __init__(
        self,
        settings: SessionSettings,
        opener: Opener | None,
        *,
        max_open: int,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        reap_interval_s: float = 1.0,
        queue_wait_s: Callable[[float], float] = call_wait_s,
    ) -> None:
        """`opener`: the sandbox's `open_session` (None: no sandbox, every open is 503);
        `max_open`: sessions over all keys (the sandbox's `max_sessions`); a queued call waits
        at most `queue_wait_s(call_time_s)`: by default as long as the sandbox itself waits for
        a call of that time (its backstop under load, then a kernel's restart), so a call is
        never refused as busy while the one before it may still honestly be running."""
        self.settings = settings
        self.max_open = max_open
        self.counters = SessionCounters()
        self._opener = opener
        self._clock, self._wall = clock, wall
        self._reap_interval_s = reap_interval_s
        self._queue_wait_s = queue_wait_s
        self._entries: dict[str, _Entry] = {}
        self._opening: Counter[Hashable] = Counter()  # slots taken by opens in progress
        self._closing: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None
        self._stopping = False

    # -- reading -------------------------------------------------------------------------

    @property
    def open_count(self) -> int:
        return len(self._entries)

    def _info(self, entry: _Entry) -> SessionInfo:
        def unix(t: float) -> float:
            return entry.created_at + (t - entry.created)

        lifetime_end = entry.created + self.settings.max_lifetime_s
        return SessionInfo(
            id=entry.id,
            language=entry.spec.language,
            limits=entry.spec.limits,
            idle_ttl_s=entry.idle_ttl_s,
            max_lifetime_s=self.settings.max_lifetime_s,
            created_at=entry.created_at,
            last_used_at=unix(entry.last_used),
            expires_at=unix(min(entry.last_used + entry.idle_ttl_s, lifetime_end)),
            calls=entry.calls,
            restarts=entry.restarts,
        )

    def _visible(self, owner: Hashable, session_id: str) -> _Entry:
        entry = self._entries.get(session_id)
        if entry is None or entry.owner != owner:
            raise _not_found(session_id)
        return entry

    def get(self, owner: Hashable, session_id: str) -> SessionInfo:
        return self._info(self._visible(owner, session_id))

    def list(self, owner: Hashable) -> list[SessionInfo]:
        """`owner`'s open sessions, oldest first."""
        return [self._info(e) for e in self._entries.values() if e.owner == owner]

    # -- opening -------------------------------------------------------------------------

    def _check_room(self, owner: Hashable) -> None:
        if not self.settings.enabled:
            raise DomainError(
                ErrorKind.unavailable,
                "sessions_disabled",
                "code sessions are switched off (REFEREE_SESSIONS)",
            )
        if self._opener is None or self._stopping:
            self.counters.refused["unavailable"] += 1
            raise DomainError(
                ErrorKind.unavailable,
                "sandbox_unavailable",
                "no sandbox to run sessions in (REFEREE_SANDBOX is off, or the service is stopping)",
            )
        if owner is not None:
            held = sum(e.owner == owner for e in self._entries.values()) + self._opening[owner]
            if held >= self.settings.max_per_key:
                self.counters.refused["quota"] += 1
                raise DomainError(
                    ErrorKind.throttled,
                    "session_quota",
                    f"this key holds {held} open sessions (REFEREE_SESSIONS_MAX_PER_KEY); close one or retry later",
                    {"open": held, "max_per_key": self.settings.max_per_key},
                    retry_after_s=RETRY_AFTER_S,
                )
        if len(self._entries) + self._opening.total() >= self.max_open:
            self.counters.refused["full"] += 1
            raise DomainError(
                ErrorKind.overloaded,
                "sessions_full",
                f"all {self.max_open} session slots are taken (REFEREE_SANDBOX_MAX_SESSIONS); retry later",
                {"max_sessions": self.max_open},
                retry_after_s=RETRY_AFTER_S,
            )

    async def open(
        self,
        owner: Hashable,
        *,
        language: str = "python",
        limits: Mapping[str, Any] | None = None,
        files: Mapping[str, str | bytes] | None = None,
        idle_ttl_s: float | None = None,
    ) -> SessionInfo:
        """Open a session for `owner`. `limits` and `idle_ttl_s` above their caps are lowered to
        them (the answer says what applies). Raises DomainError: invalid input (422), the
        key's quota (429), every slot taken or no sandbox (503)."""
        settings = self.settings
        spec = SessionSpec(
            language=checked_language(language),
            limits=checked_limits(limits or {}, settings),
            files=checked_files(files or {}),
        )
        # Lowered to the cap like the limits: the response says the TTL that applies.
        asked = settings.idle_ttl_s if idle_ttl_s is None else positive(idle_ttl_s, "idle_ttl_s")
        ttl = min(asked, settings.max_idle_ttl_s)
        self._check_room(owner)
        assert self._opener is not None  # _check_room refused otherwise
        self._opening[owner] += 1
        try:
            handle = await self._opener(spec)
        except SandboxUnavailable as exc:
            self.counters.refused["unavailable"] += 1
            raise DomainError(
                ErrorKind.unavailable,
                "sandbox_unavailable",
                f"no session could be opened: {exc}"[:500],
                retry_after_s=RETRY_AFTER_S,
            ) from None
        finally:
            self._opening[owner] -= 1
            if self._opening[owner] <= 0:
                del self._opening[owner]
        if self._stopping:  # the service began stopping while the container was being set up
            self._close_later(handle)
            raise DomainError(ErrorKind.unavailable, "sandbox_unavailable", "the service is stopping")
        now = self._clock()
        entry = _Entry(
            id=secrets.token_urlsafe(32),
            owner=owner,
            handle=handle,
            spec=replace(spec, files={}),  # what was placed is not kept twice
            idle_ttl_s=ttl,
            created=now,
            created_at=self._wall(),
            last_used=now,
        )
        self._entries[entry.id] = entry
        self.counters.opened += 1
        log.info("session_opened", session=entry.id[:8], open=len(self._entries))
        return self._info(entry)

    # -- calls ---------------------------------------------------------------------------

    async def run(
        self, owner: Hashable, session_id: str, code: str, time_s: float | None = None
    ) -> tuple[CallOutcome, int]:
        """Run `code` in the session for at most `time_s` (default and cap: its call time); the
        outcome and the call's number (1 for the first). Raises DomainError: unknown, expired
        or another key's (404), code over its size (422), too many calls queued on it (409),
        its container lost (503, the session is then gone)."""
        entry = self._visible(owner, session_id)
        checked_code(code, self.settings.max_code_bytes)
        call_time_s = entry.spec.limits.call_time_s
        if time_s is not None:  # at most the session's call time (the sandbox lowers it too)
            time_s = min(positive(time_s, "time_s"), call_time_s)
        if entry.active > MAX_WAITING_CALLS:
            raise self._busy(session_id)
        entry.active += 1
        try:
            try:
                async with asyncio.timeout(self._queue_wait_s(call_time_s)):
                    await entry.lock.acquire()
            except TimeoutError:
                raise self._busy(session_id) from None
            try:
                return await self._call(entry, code, time_s)
            finally:
                entry.lock.release()
        finally:
            entry.active -= 1
            entry.last_used = self._clock()

    @staticmethod
    def _busy(session_id: str) -> DomainError:
        return DomainError(
            ErrorKind.conflict,
            "session_busy",
            f"session {session_id[:64]!r} is running a call and others wait for it; retry when they are done",
        )

    async def _call(self, entry: _Entry, code: str, time_s: float | None) -> tuple[CallOutcome, int]:
        if self._entries.get(entry.id) is not entry:  # closed or reaped while this call waited
            raise _not_found(entry.id)
        if self._clock() - entry.created >= self.settings.max_lifetime_s:
            self._drop(entry, "expired")
            raise _not_found(entry.id)
        try:
            outcome = await entry.handle.run(code, time_s)
        except SessionClosed:
            self._drop(entry, "lost")
            raise _not_found(entry.id) from None
        except SandboxUnavailable as exc:
            self._drop(entry, "lost")
            self.counters.calls["lost"] += 1
            log.warning("session_lost", session=entry.id[:8], reason=str(exc)[:300])
            raise DomainError(
                ErrorKind.unavailable,
                "session_lost",
                "the session's container was lost; open a new session",
                {"status": "error", "reason": str(exc)[:300]},
            ) from None
        entry.calls += 1
        self.counters.calls[outcome.status] += 1
        if outcome.restarted:
            entry.restarts += 1
            self.counters.restarts += 1
        if entry.handle.closed:  # ended uncleanly after this call: the outcome still stands
            self._drop(entry, "lost")
        return outcome, entry.calls

    # -- ending --------------------------------------------------------------------------

    async def close(self, owner: Hashable, session_id: str) -> None:
        """End the session (404 when unknown); its container is scrubbed in the background,
        after the call it runs, if any."""
        self._drop(self._visible(owner, session_id), "closed")

    def _drop(self, entry: _Entry, why: str) -> None:
        if self._entries.pop(entry.id, None) is None:
            return
        setattr(self.counters, why, getattr(self.counters, why) + 1)
        log.info("session_ended", session=entry.id[:8], why=why, calls=entry.calls)
        self._close_later(entry.handle)

    def _close_later(self, handle: SessionHandle) -> None:
        task = asyncio.get_running_loop().create_task(self._close(handle), name="referee-session-close")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    @staticmethod
    async def _close(handle: SessionHandle) -> None:
        try:
            await handle.close()
        except Exception as exc:  # the pool discards what it cannot scrub; nothing to undo here
            log.warning("session_close_failed", error=f"{type(exc).__name__}: {exc}"[:300])

    def reap(self) -> int:
        """Close the sessions idle past their TTL or older than the maximum lifetime (none with
        a call running or waiting); how many. The reaper calls this every second."""
        now = self._clock()
        expired = [
            e
            for e in self._entries.values()
            if not e.active
            and (now - e.last_used >= e.idle_ttl_s or now - e.created >= self.settings.max_lifetime_s)
        ]
        for entry in expired:
            self._drop(entry, "expired")
        return len(expired)

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self._reap_interval_s)
            self.reap()

    async def start(self) -> None:
        self._stopping = False
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(
                self._reap_forever(), name="referee-session-reaper"
            )

    async def stop(self) -> None:
        """Close every session and wait for their containers to be given back (before the
        sandbox pool closes); new opens are refused from here on."""
        self._stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for entry in list(self._entries.values()):
            self._drop(entry, "stopped")
        while self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)
