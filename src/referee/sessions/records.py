"""What the session table hands out and takes: the session object it drives (the sandbox's
`SandboxSession`, or a fake in tests), a session as a client may see it, and its counters."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from referee.sandbox import CallOutcome, SessionLimits, SessionSpec


class SessionHandle(Protocol):
    """What the table needs of a session: `SandboxSession`'s methods (a fake in tests)."""

    @property
    def closed(self) -> bool: ...

    async def run(self, code: str, time_s: float | None = None) -> CallOutcome: ...

    async def close(self) -> None: ...


Opener = Callable[[SessionSpec], Awaitable[SessionHandle]]


@dataclass
class SessionCounters:
    """Since the service started; read at scrape time by /metrics and by the dashboard."""

    opened: int = 0
    closed: int = 0  # by their owner (DELETE)
    expired: int = 0  # idle past their TTL, or past the maximum lifetime
    lost: int = 0  # the container was lost, or the kernel could not be restarted cleanly
    stopped: int = 0  # still open when the service stopped
    restarts: int = 0  # calls that cost the kernel's state (timeout, memory, killed)
    calls: Counter[str] = field(default_factory=Counter)  # by outcome status
    refused: Counter[str] = field(default_factory=Counter)  # opens refused: quota, full, unavailable


@dataclass(frozen=True)
class SessionInfo:
    """What a client may know of a session (times are Unix times)."""

    id: str
    language: str
    limits: SessionLimits
    idle_ttl_s: float
    max_lifetime_s: float
    created_at: float
    last_used_at: float
    expires_at: float  # if unused until then
    calls: int
    restarts: int
