"""A middleware for Serve's HTTP proxy: a scoring request whose replica died while holding it is
sent again (to a live replica), and answered 503 `replica_lost` with `Retry-After` when no
replica can take it, never with the proxy's bare 500.

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
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.middleware import Middleware

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK_PATH = "referee.deploy.proxy:middlewares"
# Routes whose requests have no side effect (the scoring routes), under any route prefix.
IDEMPOTENT_SUFFIXES = ("/v1/score", "/v1/groups", "/v1/openrlhf/reward")


class ReplicaLossRetry:
    """Pure ASGI middleware around Serve's proxy app (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, attempts: int = 4, backoff_s: float = 0.25) -> None:
        self.app = app
        self.attempts = attempts
        self.backoff_s = backoff_s
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
        for attempt in range(self.attempts):
            if not await self._attempt(scope, body, receive, send):
                return
            self.replayed += 1
            await asyncio.sleep(self.backoff_s * 2**attempt)
        await _send_json(
            send,
            503,
            {
                "error": "replica_lost",
                "message": f"the Referee replica serving this request stopped ({self.attempts} attempts); retry",
                "detail": None,
            },
            retry_after_s=1,
        )

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
