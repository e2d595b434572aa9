"""A middleware for Serve's HTTP proxy: a scoring request whose replica died while holding it is
sent again, to a live replica, for as long as one lives (bounded), and answered 503
`replica_lost` with `Retry-After` only when none does, never with the proxy's bare 500.

Without it, Serve's proxy answers a request whose replica was killed mid-request with
`500 Internal Server Error` (plain text): the request was lost, and no client should retry a
500. Scoring (`/v1/score`, `/v1/groups`, `/v1/openrlhf/reward`) has no side effect, so sending
it again is safe; every other route (registrations) passes through untouched.

Serve loads it into every proxy from the environment of the Ray nodes (set it before
`ray start` / `ray.init`; `referee serve --ray` sets it when it starts the cluster itself)::

    RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=referee.deploy.proxy:middlewares
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.middleware import Middleware

from referee.deploy.ray_serve import DEPLOYMENT_NAME

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ReplicasAlive = Callable[[], Awaitable[bool]]

CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK_PATH = "referee.deploy.proxy:middlewares"
# Routes whose requests have no side effect (the scoring routes), under any route prefix.
IDEMPOTENT_SUFFIXES = ("/v1/score", "/v1/groups", "/v1/openrlhf/reward")
# Serve names a replica's actor `SERVE_REPLICA::<app>#<deployment>#<id>`.
REPLICA_ACTOR_PREFIX = "SERVE_REPLICA::"

logger = logging.getLogger(__name__)


async def referee_replicas_alive() -> bool:
    """Whether a Referee replica actor lives in the cluster (running or starting: Serve routes
    to it once it runs). From the GCS's named actors, which drops an actor once it is dead;
    asked from a thread, since the call blocks."""
    import ray

    named = await asyncio.to_thread(ray.util.list_named_actors, all_namespaces=True)
    return any(
        entry["name"].startswith(REPLICA_ACTOR_PREFIX) and f"#{DEPLOYMENT_NAME}#" in entry["name"]
        for entry in named
    )


class ReplicaLossRetry:
    """Pure ASGI middleware around Serve's proxy app (see the module docstring).

    A lost request is sent again after `backoff_s`, doubling up to `max_backoff_s`, while a
    replica lives, for at most `patience_s` in all; once no replica has lived for
    `no_replica_s` (Serve had that long to start a replacement), it is answered 503
    `replica_lost`. The proxy's own router drops a replica whose death it has seen, so a
    request sent again goes to a live one."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        patience_s: float = 60.0,
        no_replica_s: float = 3.0,
        backoff_s: float = 0.1,
        max_backoff_s: float = 1.0,
        replicas_alive: ReplicasAlive = referee_replicas_alive,
    ) -> None:
        self.app = app
        self.patience_s = patience_s
        self.no_replica_s = no_replica_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.replicas_alive = replicas_alive
        self.replayed = 0  # requests sent again, for the proxy's own log and tests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or scope.get("method") != "POST" or not path.endswith(IDEMPOTENT_SUFFIXES):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        started = last_alive = time.monotonic()
        attempt = 0
        while await self._attempt(scope, body, receive, send):
            now = time.monotonic()
            if await self._alive():
                last_alive = now
            if now - last_alive > self.no_replica_s or now - started > self.patience_s:
                break
            self.replayed += 1
            await asyncio.sleep(min(self.max_backoff_s, self.backoff_s * 2**attempt))
            attempt += 1
        else:
            return
        if now - last_alive > self.no_replica_s:
            reason = "no replica is alive"
        else:
            reason = f"no replica answered it within {self.patience_s:.0f}s"
        logger.warning("scoring request lost %d times, %s: answered 503 replica_lost", attempt + 1, reason)
        await _send_json(
            send,
            503,
            {
                "error": "replica_lost",
                "message": f"the Referee replica serving this request stopped, and {reason}; retry",
                "detail": None,
            },
            retry_after_s=1,
        )

    async def _alive(self) -> bool:
        try:
            return await self.replicas_alive()
        except Exception:  # unknown counts as alive: the patience still bounds the wait
            logger.exception("could not list the Referee replicas")
            return True

    async def _attempt(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> bool:
        """Run the request once; True if it was lost (nothing was sent to the client)."""
        replayed = False
        lost = False
        started = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # then the client's disconnect, if it goes away

        async def guarded_send(message: Message) -> None:
            nonlocal lost, started
            if message["type"] == "http.response.start" and not started:
                if message["status"] == 500 and not _is_json(message):
                    lost = True  # the proxy's own 500: the replica died holding the request
                    return
                started = True
            if not lost:
                await send(message)

        try:
            await self.app(scope, replay, guarded_send)
        except Exception:
            if started:
                raise
            lost = True
        # Serve's proxy ends a request whose replica died without sending anything (the server
        # would then answer a bare 500) or with a plain-text 500.
        return lost or not started


def _is_json(start: Message) -> bool:
    for key, value in start.get("headers", []):
        if key.lower() == b"content-type":
            return bool(value.startswith(b"application/json"))
    return False


async def _send_json(send: Send, status: int, content: dict[str, Any], *, retry_after_s: int) -> None:
    payload = json.dumps(content).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"retry-after", str(retry_after_s).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


def middlewares() -> list[Middleware]:
    """The callback Serve's proxy calls (`RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH`)."""
    return [Middleware(ReplicaLossRetry)]
