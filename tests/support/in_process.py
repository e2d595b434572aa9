"""The whole app in process: a runtime's HTTP service, lifespan included, and an httpx client
that calls it through the ASGI transport (no socket, no server thread)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from referee.runtime import Runtime
from referee.service.app import create_app


@asynccontextmanager
async def in_process(runtime: Runtime, timeout_s: float = 120) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `runtime`'s app, started (the runtime with it) until the block ends."""
    app = create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://referee", timeout=timeout_s) as http,
    ):
        yield http
