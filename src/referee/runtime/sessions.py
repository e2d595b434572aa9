"""The dashboard's logins: server-side sessions and the failed-login (wrong-key) throttle.

`DashboardSessions`: a browser that logged in at `/ui/login` holds a random session id (the
cookie), never its key. The service keeps only a SHA-256 digest of each id, mapped to the key's
identity (its role and key digest, as `Auth` computes them), so neither a memory dump nor a
log line can be replayed as a cookie or a key. A session ends when it is idle for `idle_s`,
`max_age_s` after its login, or at logout (`revoke`): the old cookie then opens nothing.

`LoginThrottle`: failed logins per client within a sliding window. A failure is a wrong key
wherever it is tried: the dashboard's login form and fragments (`service/ui.py`) and every
`/v1/` route (`service/auth.py`, `KeyGate`) count in this one throttle, so no door is a faster
way to guess keys. A client (an IP address; an IPv6 /64, which one host usually holds whole)
with `max_failures` failures in the last `window_s` is refused, without its key being checked,
until the oldest of them leaves the window. All clients together (the target: this service's
keys) may fail `max_failures_all` times per window; beyond that, a client with any recent
failure is refused too, while clients with none may still log in, so nobody is locked out by
another's guessing. A successful login clears nothing: a holder of one key cannot reset its
count to keep guessing others.

Both live in memory, owned by the `Runtime`: a restart logs every browser out, and each Ray
replica has its own sessions (docs/dashboard.md).
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from referee.settings import ServiceSettings

Clock = Callable[[], float]
# Bounds on what an attacker can make the service remember: sessions need a valid key, clients
# only a failed login; past these the oldest entries are forgotten first.
MAX_SESSIONS = 10_000
# Sessions of one key: its oldest go first beyond this, so that no key holder, logging in again
# and again, can push every other key's browsers out through the global bound.
MAX_SESSIONS_PER_KEY = 32
MAX_CLIENTS = 65_536


@dataclass(frozen=True)
class SessionIdentity:
    """Whom a session stands for: the role's name and the key's digest, never the key."""

    role: str
    key_digest: bytes


@dataclass
class _Session:
    identity: SessionIdentity
    created: float
    last_seen: float


def _digest(session_id: str) -> bytes:
    # The id carries 256 random bits: a plain hash is as hard to invert as the id is to guess.
    return hashlib.sha256(session_id.encode("utf-8", errors="replace")).digest()


class DashboardSessions:
    def __init__(
        self,
        idle_s: float,
        max_age_s: float,
        *,
        max_sessions: int = MAX_SESSIONS,
        max_per_key: int = MAX_SESSIONS_PER_KEY,
        clock: Clock = time.monotonic,
    ) -> None:
        self.idle_s = idle_s
        self.max_age_s = max_age_s
        self.max_sessions = max_sessions
        self.max_per_key = max_per_key
        self.clock = clock
        self._sessions: OrderedDict[bytes, _Session] = OrderedDict()  # oldest login first

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, identity: SessionIdentity) -> str:
        """A new session for `identity`; returns its id, which only the cookie holds."""
        now = self.clock()
        self._forget_expired(now)
        own = [d for d, s in self._sessions.items() if s.identity.key_digest == identity.key_digest]
        for digest in own[: max(0, len(own) - self.max_per_key + 1)]:
            del self._sessions[digest]
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        session_id = secrets.token_urlsafe(32)
        self._sessions[_digest(session_id)] = _Session(identity, created=now, last_seen=now)
        return session_id

    def find(self, session_id: str | None) -> SessionIdentity | None:
        """The identity of a live session (and the session stays alive); None for an unknown,
        revoked or expired one."""
        if not session_id:
            return None
        digest = _digest(session_id)
        session = self._sessions.get(digest)
        if session is None:
            return None
        now = self.clock()
        if self._expired(session, now):
            del self._sessions[digest]
            return None
        session.last_seen = now
        return session.identity

    def revoke(self, session_id: str | None) -> bool:
        """End a session (logout); True if it was live."""
        if not session_id:
            return False
        return self._sessions.pop(_digest(session_id), None) is not None

    def _expired(self, session: _Session, now: float) -> bool:
        return now - session.last_seen >= self.idle_s or now - session.created >= self.max_age_s

    def _forget_expired(self, now: float) -> None:
        for digest in [d for d, s in self._sessions.items() if self._expired(s, now)]:
            del self._sessions[digest]


def client_of(address: str | None) -> str:
    """The unit a failed login is counted against: the IP address, an IPv6 address's /64."""
    if not address:
        return "unknown"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class LoginThrottle:
    def __init__(
        self,
        max_failures: int,
        window_s: float,
        max_failures_all: int,
        *,
        max_clients: int = MAX_CLIENTS,
        clock: Clock = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_failures_all = max_failures_all
        self.max_clients = max_clients
        self.clock = clock
        # Only the newest failures matter: a client is refused once it has `max_failures` of
        # them in the window, everyone with one once there are `max_failures_all`.
        self._by_client: OrderedDict[str, deque[float]] = OrderedDict()  # least recent first
        self._all: deque[float] = deque(maxlen=max_failures_all)

    def retry_after(self, client: str) -> float | None:
        """Seconds until `client` may try again; None when it may try now."""
        now = self.clock()
        failures = self._recent(self._by_client.get(client), now)
        if not failures:
            return None
        waits = []
        if len(failures) >= self.max_failures:
            waits.append(failures[-self.max_failures] + self.window_s - now)
        everyone = self._recent(self._all, now)
        if len(everyone) >= self.max_failures_all:
            waits.append(everyone[0] + self.window_s - now)
        return max(waits) if waits else None

    def failed(self, client: str) -> bool:
        """Count a failure; True when it is the one that brings `client` to its limit."""
        now = self.clock()
        failures = self._by_client.pop(client, None)
        if failures is None:
            failures = deque(maxlen=self.max_failures)
            self._make_room()
        self._recent(failures, now)
        failures.append(now)
        self._by_client[client] = failures
        self._all.append(now)
        return len(failures) == self.max_failures

    def _recent(self, failures: deque[float] | None, now: float) -> deque[float]:
        while failures and failures[0] <= now - self.window_s:
            failures.popleft()
        return failures if failures is not None else deque()

    def _make_room(self) -> None:
        # Clients are kept in the order of their latest failure: the stalest go first.
        while len(self._by_client) >= self.max_clients:
            self._by_client.popitem(last=False)


class DashboardLogins:
    """What the dashboard's login keeps: its sessions and its throttle, from the settings."""

    def __init__(self, service: ServiceSettings, clock: Clock = time.monotonic) -> None:
        self.sessions = DashboardSessions(service.ui_session_idle_s, service.ui_session_max_s, clock=clock)
        self.throttle = LoginThrottle(
            service.ui_login_max_failures,
            service.ui_login_window_s,
            service.ui_login_max_failures_all_clients,
            clock=clock,
        )
