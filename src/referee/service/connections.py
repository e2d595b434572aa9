"""Connections the HTTP server keeps: slow and idle clients are dropped, one client cannot hold
them all.

uvicorn drops a keep-alive connection that stays idle after a response, but a connection that
never completes its request head (a slowloris, or 1,000 half-open sockets) or that sends its
body a byte now and then is kept as long as the peer wants: each holds a file descriptor and
memory, and enough of them exhaust the process. So the server's protocol class is uvicorn's
own (httptools, or h11 without it) with three bounds added, all in the event loop's timers:

- the request head (request line and headers) must arrive within `header_timeout_s` of the
  connection's first byte, or of the end of the previous response (keep-alive);
- the body must arrive within `body_timeout_s` of the head: past it the request is answered
  408 (when no response has started) and the connection closed;
- one client address holds at most `max_connections_per_client` connections; the next ones
  are closed at once (logged once a minute per address). Behind a proxy every connection comes
  from the proxy's address: set it to 0 (no limit) there and let the proxy bound its clients.

`max_connections` bounds all connections and running requests together (uvicorn's
`limit_concurrency`: past it, 503). Ray Serve has its own HTTP proxy, which these do not cover.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any, Protocol, cast

import structlog
import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from referee.settings import ServiceSettings

log = structlog.get_logger(__name__)

_REFUSAL_LOG_EVERY_S = 60.0
_TIMEOUT_BODY = json.dumps(
    {
        "error": "request_timeout",
        "message": "the request body did not arrive in time (REFEREE_BODY_TIMEOUT_S)",
        "detail": None,
    }
).encode()
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n\r\n" + _TIMEOUT_BODY
)


class _Cycle(Protocol):
    response_started: bool
    response_complete: bool
    more_body: bool


class _ClientCounts:
    """Open connections per client address, shared by the connections of one server."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: Counter[str] = Counter()
        self._refusal_logged: dict[str, float] = {}

    def admit(self, address: str) -> bool:
        if self.limit and self.open[address] >= self.limit:
            now = time.monotonic()
            if now - self._refusal_logged.get(address, -_REFUSAL_LOG_EVERY_S) >= _REFUSAL_LOG_EVERY_S:
                self._refusal_logged[address] = now
                log.warning("connection_refused_client_limit", client=address, limit=self.limit)
            return False
        self.open[address] += 1
        return True

    def release(self, address: str) -> None:
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]


def guarded_protocol(base: type[asyncio.Protocol], settings: ServiceSettings) -> type[asyncio.Protocol]:
    """`base` (a uvicorn HTTP protocol class) with the bounds of the module docstring."""
    counts = _ClientCounts(settings.max_connections_per_client)
    header_timeout_s = settings.header_timeout_s
    body_timeout_s = settings.body_timeout_s

    class GuardedProtocol(base):  # type: ignore[valid-type,misc]
        """One connection. uvicorn's state (`transport`, `client`, `cycle`) is read, never
        changed: a bound only closes the transport (after a 408 for a late body)."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._timer: asyncio.TimerHandle | None = None
            self._timed_cycle: Any = None
            client = getattr(self, "client", None)
            self._address: str | None = str(client[0]) if client else None
            if self._address is not None and not counts.admit(self._address):
                self._address = None
                transport.close()
                return
            self._arm(header_timeout_s, self._head_overdue)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            cycle = cast("_Cycle | None", getattr(self, "cycle", None))
            if cycle is None or cycle.response_complete:
                if self._timer is None:  # bytes of a next request head: its clock starts
                    self._arm(header_timeout_s, self._head_overdue)
            elif cycle is not self._timed_cycle:  # a new request's head is complete
                self._timed_cycle = cycle
                self._arm(body_timeout_s, self._body_overdue)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._address is not None:
                counts.release(self._address)
                self._address = None
            super().connection_lost(exc)

        def _arm(self, delay_s: float, callback: Any) -> None:
            self._disarm()
            self._timer = asyncio.get_running_loop().call_later(delay_s, callback)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _head_overdue(self) -> None:
            self._timer = None
            cycle = cast("_Cycle | None", getattr(self, "cycle", None))
            if cycle is None or cycle.response_complete:  # still no (next) request head
                self.transport.close()

        def _body_overdue(self) -> None:
            self._timer = None
            cycle = cast("_Cycle | None", getattr(self, "cycle", None))
            if cycle is None or cycle is not self._timed_cycle or not cycle.more_body:
                return  # the body arrived (the request may still be being judged)
            if not cycle.response_started:
                self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    GuardedProtocol.__name__ = f"Guarded{base.__name__}"
    return GuardedProtocol


def server_config(app: Any, settings: ServiceSettings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration of the service: `settings`' address, log level and connection
    bounds; `overrides` (tests: log_level, lifespan) win."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "timeout_keep_alive": settings.keep_alive_s,
        "limit_concurrency": settings.max_connections or None,
        # One event loop process: verifier work already runs in worker processes.
        "workers": 1,
    } | overrides
    # uvicorn's "auto" choice: httptools where installed, else h11.
    return uvicorn.Config(app, http=guarded_protocol(AutoHTTPProtocol, settings), **options)
