"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import FastAPI, Request, Response

import referee
from referee.logs import ensure_logging
from referee.models import Verdict
from referee.registered import PostgresStore, SQLiteStore, VerifierCatalog, VerifierStore
from referee.sandbox import SandboxPool
from referee.scoring import Admission, Scorer, WorkerPool
from referee.service.auth import install_auth
from referee.service.body_limit import BodySizeLimit
from referee.service.errors import index_methods, install_error_handlers
from referee.service.metrics import Metrics
from referee.service.routes import router
from referee.service.routes_audits import audits_router
from referee.service.routes_registration import router as registration_router
from referee.service.routes_stats import stats_router
from referee.service.ui import ui_router, ui_static
from referee.settings import Settings
from referee.stats import Statistics, StatsStore
from referee.verifiers import Resources, load_installed

log = structlog.get_logger(__name__)


async def _start_sandbox(settings: Settings) -> SandboxPool | None:
    """The code sandbox is a resource of the `code` verifier and of registered python graders.
    It never blocks start-up: if Docker is unreachable, the pool records why and their verdicts
    come back as errors."""
    if not settings.sandbox.enabled:
        return None
    pool = SandboxPool(settings.sandbox)
    await pool.start()
    return pool


def _document_open_mode(app: FastAPI) -> None:
    """Without keys nothing is authenticated or throttled per key: the OpenAPI document then
    says so (no security requirement, no 401, 403 or 429), as it must describe what the
    service does."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.get("components", {}).pop("securitySchemes", None)
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    operation.pop("security", None)
                    for code in ("401", "403", "429"):
                        operation.get("responses", {}).pop(code, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _open_stats_store(settings: Settings, stats: Statistics | None) -> StatsStore | None:
    """The statistics' file, read back into `stats`. A file that cannot be opened does not stop
    the service: statistics are then kept in memory only (and say so in the log)."""
    if stats is None:
        return None
    try:
        store = StatsStore(settings.stats_path())
        store.load_into(stats)
    except Exception as exc:
        log.warning("stats_not_persisted", path=str(settings.stats_path()), error=str(exc))
        return None
    return store


async def _flush(stats: Statistics, store: StatsStore) -> None:
    """Write changed statistics in a thread; a failing disk is logged, and the records stay
    marked as changed for the next flush."""
    try:
        await asyncio.to_thread(store.flush, stats)
    except Exception as exc:
        log.warning("stats_flush_failed", path=str(store.path), error=str(exc))


async def _flush_statistics(stats: Statistics, store: StatsStore, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        await _flush(stats, store)


async def _final_flush(stats: Statistics, store: StatsStore) -> None:
    await _flush(stats, store)
    store.close()


def create_app(settings: Settings | None = None, *, resources: Resources | None = None) -> FastAPI:
    """Build the app. Given `resources` (a sandbox the caller owns) replace those the app
    would otherwise start and stop itself."""
    settings = settings or Settings()
    ensure_logging(settings.service.log_level, settings.service.log_json)
    registry = settings.registry
    installed = load_installed(registry.extra_verifiers, plugins=registry.load_plugins)
    pool = WorkerPool(settings.workers, registry)
    admission = Admission.for_workers(settings.workers)
    metrics = Metrics(pool, admission)
    # Built-ins plus the types registered through the API (persisted at settings.db_path).
    store: VerifierStore = (
        PostgresStore(registry.db_url, refresh_s=registry.db_refresh_s)
        if registry.db_url
        else SQLiteStore(registry.db_path, busy_timeout_s=registry.busy_timeout_s)
    )
    catalog = VerifierCatalog(registry, installed, store)
    stats = (
        Statistics(
            max_prompts=settings.stats.max_prompts,
            window_minutes=settings.stats.window_minutes,
            max_verifiers=settings.stats.max_verifiers,
            pass_threshold=settings.stats.pass_threshold,
        )
        if settings.stats.enabled
        else None
    )

    def observe(verdict: Verdict, name: str) -> None:
        metrics.observe_verdict(verdict, name)
        if stats is not None:
            stats.observe_verdict(verdict, name)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Everything started here is stopped on the way out, even if a later start-up step
        # (warm-up, the sandbox) fails or one of the closes raises.
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(pool.close)
            stack.push_async_callback(catalog.aclose)
            # Webhook secrets stored in plain text, or under a rotated-out key: encrypted anew.
            resealed = await catalog.reseal_secrets()
            pool.start()
            await pool.warm_up()
            # Rebuilds the worker pool if it breaks (its forkserver killed, say).
            watcher = asyncio.create_task(pool.watch(), name="referee-pool-watch")
            stack.callback(watcher.cancel)
            stats_store = await asyncio.to_thread(_open_stats_store, settings, stats)
            if stats is not None and stats_store is not None:
                stack.push_async_callback(_final_flush, stats, stats_store)
                flusher = asyncio.create_task(
                    _flush_statistics(stats, stats_store, settings.stats.flush_s), name="referee-stats-flush"
                )
                stack.callback(flusher.cancel)
            in_use = resources
            if in_use is None:
                sandbox = await _start_sandbox(settings)
                if sandbox is not None:
                    stack.push_async_callback(sandbox.close)
                in_use = Resources(sandbox=sandbox)
            app.state.scorer = Scorer(
                settings.limits,
                settings.workers,
                installed,
                pool,
                resources=in_use,
                observer=observe,
                resolver=catalog.resolve,
                admission=admission,
            )
            auth.log_mode()
            log.info(
                "referee_started",
                workers=settings.workers.count,
                verifiers=catalog.names(),
                secrets_resealed=resealed,
            )
            yield

    app = FastAPI(
        title="Referee",
        version=referee.__version__,
        description="Verdicts and group rewards for RL on language models.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.catalog = catalog
    app.state.stats = stats
    install_error_handlers(app)
    auth = install_auth(app, settings.service)
    app.include_router(router)
    app.include_router(registration_router)
    app.include_router(audits_router)
    app.include_router(stats_router)
    # The dashboard (/ui): read-only pages under the same keys, its static files beside them.
    app.include_router(ui_router)
    app.mount("/ui/static", ui_static(), name="ui_static")
    index_methods(app, router, registration_router, audits_router, stats_router)
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
        return response

    app.add_middleware(BodySizeLimit, max_bytes=settings.limits.max_body_bytes)
    return app
