"""The FastAPI application factory: HTTP wiring around a `Runtime`.

The runtime owns every lifetime (worker and sandbox pools, catalog, statistics, audit jobs);
the app's lifespan starts and stops it. Routes get what they need from the dependency providers
in `deps.py`, which read the runtime the app serves.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response

import referee
from referee.logs import ensure_logging
from referee.runtime import Runtime
from referee.service.auth import install_auth
from referee.service.body_limit import BodySizeLimit
from referee.service.deps import serve_runtime
from referee.service.errors import QUOTA_WITHOUT_KEYS, install_error_handlers
from referee.service.metrics import Metrics
from referee.service.openapi_verifiers import document_verifier_requests
from referee.service.routes import router
from referee.service.routes_audits import audits_router
from referee.service.routes_environments import environments_router
from referee.service.routes_registration import registration_router
from referee.service.routes_sessions import sessions_router
from referee.service.routes_stats import stats_router
from referee.service.ui import ui_router, ui_static


def _document_open_mode(app: FastAPI) -> None:
    """Without keys nothing is authenticated or throttled per key: the OpenAPI document then
    says so (no security requirement, no 401, 403 or 429), as it must describe what the
    service does. An operation whose quota holds for every caller alike (audits: all callers
    share the one anonymous quota) marks it with `x-referee-quota-without-keys` and keeps 429."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.get("components", {}).pop("securitySchemes", None)
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    operation.pop("security", None)
                    keeps_429 = operation.pop(QUOTA_WITHOUT_KEYS, False)
                    for code in ("401", "403") if keeps_429 else ("401", "403", "429"):
                        operation.get("responses", {}).pop(code, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(runtime: Runtime | None = None) -> FastAPI:
    """The HTTP service of `runtime` (default: one built from `Settings()`), which the app's
    lifespan starts and stops."""
    runtime = runtime or Runtime()
    settings = runtime.settings
    ensure_logging(settings.service.log_level, settings.service.log_json)
    metrics = Metrics(runtime.pool, runtime.admission, runtime.judges, runtime.code_sessions)
    runtime.observe(metrics.observe_verdict)
    metrics.watch_episodes(runtime.environments.episodes.counters)
    metrics.watch_compile_cache(runtime.resources.sandbox)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        auth.log_mode()
        async with runtime:
            yield

    app = FastAPI(
        title="Referee",
        version=referee.__version__,
        description="Verdicts and group rewards for RL on language models.",
        lifespan=lifespan,
    )
    serve_runtime(app, runtime, metrics)
    registration = registration_router(runtime.installed)
    api_routers = [router, registration, audits_router, stats_router]
    api_routers.append(sessions_router)
    api_routers.append(environments_router)
    install_error_handlers(app, api_routers)
    auth = install_auth(app, settings.service, runtime.dashboard.throttle)
    for api_router in api_routers:
        app.include_router(api_router)
    # The dashboard (/ui): read-only pages under the same keys, its static files beside them.
    app.include_router(ui_router)
    app.mount("/ui/static", ui_static(), name="ui_static")
    # Scoring requests per installed verifier: the document as strict as the validators.
    document_verifier_requests(app, runtime.installed, settings.limits)
    if auth.open:
        _document_open_mode(app)

    @app.middleware("http")
    async def _count(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        metrics.requests.labels(request.method, path, str(response.status_code)).inc()
        metrics.request_latency.labels(path).observe(time.perf_counter() - start)
        if runtime.stats is not None and not request.url.path.startswith("/ui"):
            runtime.stats.observe_http(response.status_code)  # the dashboard's health panel
        return response

    app.add_middleware(BodySizeLimit, max_bytes=settings.limits.max_body_bytes)
    return app
