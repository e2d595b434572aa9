"""Bearer-key authentication.

Keys come from the settings REFEREE_ADMIN_KEYS and REFEREE_API_KEYS (comma-separated). Admin
keys may do everything; API keys may score and read the catalog. Registering and deleting
verifier types needs an admin key. With no key configured at all the service is open (local
use) and says so once in the log.

Keys are compared in constant time: each candidate is hashed first (so lengths never differ)
and compared with every configured key without stopping at the first match.

Fairness: with keys configured, each key may have at most
`REFEREE_MAX_CONCURRENT_REQUESTS_PER_KEY` requests in flight on `/v1/`; one more is answered
429 with `Retry-After` before its body is read, so one trainer flooding the service cannot
starve another of admission (the per-lane queueing bound, 503, applies to everyone).

Guessing: every wrong key on `/v1/` (a key that matches none; a missing key is no guess) counts
against the same per-client throttle as the dashboard's failed logins
(`referee.runtime.sessions.LoginThrottle`, REFEREE_UI_LOGIN_*), so neither door is a faster way
to try keys. A client over the limit that sends a key gets 429 with `Retry-After` before the key
is even checked, the right key included (without a key: 401); other clients are unaffected.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from enum import Enum

import structlog
from fastapi import FastAPI, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from referee.errors import DomainError, ErrorKind
from referee.runtime import LoginThrottle, client_of
from referee.service.errors import domain_error_response
from referee.settings import ServiceSettings

log = structlog.get_logger(__name__)


OWNER_KEY = "referee_owner"  # request state: the caller's key digest (None in open mode)


class Role(Enum):
    client = "client"
    admin = "admin"


class AuthError(DomainError):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(kind, "unauthorized" if kind is ErrorKind.unauthenticated else "forbidden", message)


class UnknownKey(AuthError):
    """A key was presented and matches none: a guess, which the throttle counts."""

    def __init__(self) -> None:
        super().__init__(ErrorKind.unauthenticated, "unknown key")


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class Auth:
    def __init__(self, settings: ServiceSettings) -> None:
        self._admin = [_digest(k) for k in settings.admin_keys if k]
        self._api = [_digest(k) for k in settings.api_keys if k]
        self.open = not self._admin and not self._api

    def log_mode(self) -> None:
        if self.open:
            log.warning(
                "auth_disabled",
                message="no REFEREE_ADMIN_KEYS or REFEREE_API_KEYS configured: every caller may score, "
                "register and delete verifier types (fine on loopback, not on a shared network)",
            )
        else:
            log.info("auth_enabled", admin_keys=len(self._admin), api_keys=len(self._api))

    @staticmethod
    def _matches(candidate: bytes, keys: list[bytes]) -> bool:
        found = False
        for key in keys:
            found |= hmac.compare_digest(candidate, key)
        return found

    def identify(self, authorization: str | None) -> tuple[Role, bytes]:
        """The caller's role and key digest; raises AuthError 401 when no valid key is presented."""
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthError(ErrorKind.unauthenticated, "missing `Authorization: Bearer <key>` header")
        candidate = _digest(token)
        is_admin = self._matches(candidate, self._admin)
        is_api = self._matches(candidate, self._api)
        if is_admin:
            return Role.admin, candidate
        if is_api:
            return Role.client, candidate
        raise UnknownKey()

    def role_of(self, authorization: str | None) -> Role:
        """The caller's role; raises AuthError 401 when no valid key is presented."""
        return self.identify(authorization)[0]

    def require(self, request: Request, role: Role) -> None:
        if self.open:
            return
        got = self.role_of(request.headers.get("authorization"))
        if role is Role.admin and got is not Role.admin:
            raise AuthError(ErrorKind.forbidden, "this operation needs an admin key")


class KeyQuotaExceeded(DomainError):
    def __init__(self, limit: int) -> None:
        super().__init__(
            ErrorKind.throttled,
            "too_many_requests",
            f"this key has {limit} requests in flight (REFEREE_MAX_CONCURRENT_REQUESTS_PER_KEY); retry later",
            {"limit": limit},
            retry_after_s=1,
        )


class TooManyWrongKeys(DomainError):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(
            ErrorKind.throttled,
            "too_many_wrong_keys",
            "too many wrong keys from this address; retry after Retry-After seconds",
            # Rounded up: a client that waits exactly Retry-After is let in.
            retry_after_s=max(1, math.ceil(retry_after_s)),
        )


class KeyGate:
    """Refuses `/v1/` requests without a valid key before their body is read, so unauthenticated
    callers cannot make the service receive and parse large bodies, holds each client to the
    wrong-key `throttle` (None = none) and each key to its concurrency quota (`max_in_flight`,
    0 = none). The routes' dependencies still decide between client and admin."""

    def __init__(
        self, app: ASGIApp, auth: Auth, max_in_flight: int = 0, throttle: LoginThrottle | None = None
    ) -> None:
        self.app = app
        self.auth = auth
        self.max_in_flight = max_in_flight
        self.throttle = throttle
        self.in_flight: dict[bytes, int] = {}

    def _identify(self, scope: Scope) -> bytes:
        """The caller's key digest; raises AuthError (401) or TooManyWrongKeys (429)."""
        header = dict(scope.get("headers", ())).get(b"authorization", b"").decode("latin-1")
        if self.throttle is None or not header:
            # No key is no guess: a keyless request is told to authenticate (401), throttled or not.
            return self.auth.identify(header)[1]
        # uvicorn puts the address a trusted proxy forwarded (X-Forwarded-For) here.
        address = scope.get("client")
        client = client_of(address[0] if address else None)
        wait = self.throttle.retry_after(client)
        if wait is not None:
            raise TooManyWrongKeys(wait)
        try:
            return self.auth.identify(header)[1]
        except UnknownKey:
            if self.throttle.failed(client):  # logged once per client, at the limit
                log.warning(
                    "wrong_keys_refused", client=client, retry_after_s=math.ceil(self.throttle.window_s)
                )
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.auth.open or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        try:
            key = self._identify(scope)
            if self.max_in_flight and self.in_flight.get(key, 0) >= self.max_in_flight:
                raise KeyQuotaExceeded(self.max_in_flight)
        except DomainError as exc:
            await domain_error_response(exc)(scope, receive, send)
            return
        # Who the work is for: the engine queues and admits each key's checks in turns.
        scope.setdefault("state", {})[OWNER_KEY] = key
        self.in_flight[key] = self.in_flight.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight[key] -= 1
            if not self.in_flight[key]:
                del self.in_flight[key]


def install_auth(app: FastAPI, settings: ServiceSettings, throttle: LoginThrottle | None = None) -> Auth:
    """Refusals are `AuthError`s: `KeyGate` answers them itself (before the body is read), the
    routes' dependencies through the service's one `DomainError` handler; same body either way.
    `throttle`: the runtime's failed-key throttle, which the dashboard's login shares."""
    auth = Auth(settings)
    app.state.auth = auth
    app.add_middleware(
        KeyGate, auth=auth, max_in_flight=settings.max_concurrent_requests_per_key, throttle=throttle
    )
    return auth
