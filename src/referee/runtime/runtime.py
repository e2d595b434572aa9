"""`Runtime`: what one scoring service keeps for its lifetime, built from its `Settings`.

Built (`Runtime(settings)`, nothing started): the verifier index, built here once and handed to
the worker processes, the registry's catalog and the scorer; the worker pool, admission lanes,
statistics, the sandbox pool, the table of code sessions and the registry of background audit
jobs. `start()` starts them in order (pool warmed up, statistics read back, sandbox warming);
`stop()` stops everything that was started, in reverse order: running audits are cancelled
first, statistics get their final flush, code sessions are closed before the sandbox pool,
the worker processes go last. An HTTP app (`referee.service.create_app`), a Ray
replica and the tests each build one; `async with Runtime(settings) as runtime:` runs one
without HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import Any

import structlog

from referee.environments import Environments, Episodes
from referee.judges import JudgeClients
from referee.models import Verdict
from referee.registered import PostgresStore, SQLiteStore, VerifierCatalog, VerifierStore
from referee.runtime.jobs import BackgroundJobs
from referee.runtime.sessions import DashboardLogins
from referee.sandbox import SandboxPool
from referee.scoring import Admission, BackgroundShare, Scorer, WorkerPool
from referee.sessions import CodeSessions
from referee.settings import RegistrySettings, SessionSettings, Settings, StatsSettings
from referee.stats import ScopedStats, SharedStats, Statistics, default_replica_id, persisted
from referee.verifiers import CodeSandbox, Resources, load_installed

log = structlog.get_logger(__name__)

Observer = Callable[[Verdict, str], None]
# Audit jobs whose records are kept (running ones always are).
AUDITS_KEPT = 32


def open_store(registry: RegistrySettings) -> VerifierStore:
    """The registry of registered types: PostgreSQL shared by replicas when `db_url` is set,
    else the SQLite file at `db_path` (created by the first registration)."""
    if registry.db_url:
        return PostgresStore(registry.db_url, refresh_s=registry.db_refresh_s)
    return SQLiteStore(registry.db_path, busy_timeout_s=registry.busy_timeout_s)


def _statistics(stats: StatsSettings) -> Statistics | None:
    if not stats.enabled:
        return None
    return Statistics(
        max_prompts=stats.max_prompts,
        max_prompts_per_key=stats.max_prompts_per_key,
        window_minutes=stats.window_minutes,
        max_verifiers=stats.max_verifiers,
        pass_threshold=stats.pass_threshold,
    )


def _shared_statistics(settings: Settings) -> SharedStats | None:
    """The store where replicas publish and read each other's statistics: the registry's
    PostgreSQL server, when there is one (the replica id is settled at start)."""
    if not (settings.stats.enabled and settings.registry.db_url):
        return None
    return SharedStats(settings.registry.db_url, settings.stats.replica_id or "")


def _session_caps(settings: Settings) -> SessionSettings:
    """The sessions' settings with their file caps held to the container's own ulimits: a
    kernel asking for more than the container allows could not start."""
    sessions, sandbox = settings.sessions, settings.sandbox
    return sessions.model_copy(
        update={
            "max_file_size_mb": min(sessions.max_file_size_mb, sandbox.file_size_limit_mb),
            "max_open_files": min(sessions.max_open_files, sandbox.open_files),
        }
    )


class Runtime:
    def __init__(self, settings: Settings | None = None, *, sandbox: CodeSandbox | None = None) -> None:
        """`sandbox`: one the caller owns (and starts and stops), instead of the pool
        `settings.sandbox` describes."""
        self.settings = settings = settings or Settings()
        registry = settings.registry
        self.installed = load_installed(registry.extra_verifiers, plugins=registry.load_plugins)
        self.pool = WorkerPool(settings.workers, self.installed)
        self.admission = Admission.for_workers(settings.workers)
        self.catalog = VerifierCatalog(registry, self.installed, open_store(registry), settings.judges)
        self.stats = _statistics(settings.stats)
        self.shared_stats = _shared_statistics(settings)
        self.audits: BackgroundJobs[Any] = BackgroundJobs(keep=AUDITS_KEPT)
        # The dashboard's sessions and failed-login counts (in memory: nothing to start).
        self.dashboard = DashboardLogins(settings.service)
        # The code sandbox never blocks start-up: if Docker is unreachable, the pool records
        # why and the verdicts that need it come back as errors.
        self._own_sandbox = (
            SandboxPool(settings.sandbox) if sandbox is None and settings.sandbox.enabled else None
        )
        # The judge endpoints' connections, breakers and verdict cache; none configured, none.
        self.judges = JudgeClients(settings.judges) if settings.judges.endpoints else None
        self.resources = Resources(sandbox=sandbox or self._own_sandbox, judges=self.judges)
        # Code sessions (/v1/sessions): each pins a container of the sandbox, so a sandbox
        # without `open_session` (a caller's, a test's) or none at all has none to give.
        self.code_sessions = CodeSessions(
            _session_caps(settings),
            getattr(self.resources.sandbox, "open_session", None),
            max_open=settings.sandbox.max_sessions,
        )
        # The statistics pages: every replica's through the shared store, or this one's.
        self.scoped_stats = (
            None
            if self.stats is None
            else ScopedStats(
                self.stats, self.shared_stats, self._replica_id(), cache_s=settings.stats.flush_s
            )
        )
        # The sandbox run slots audits may hold, over all audits; none while scoring waits.
        self.audit_share = BackgroundShare.of_slots(
            settings.sandbox.max_parallel,
            settings.audits.sandbox_share,
            lambda: getattr(self.resources.sandbox, "queued", 0) > 0,
        )
        self._observers: list[Observer] = []
        self.scorer = Scorer(
            settings.limits,
            settings.workers,
            self.installed,
            self.pool,
            self.resources,
            observer=self._observe,
            resolver=self.catalog.resolve,
            preload=self.catalog.load,
            admission=self.admission,
        )
        # Multi-turn environments (/v1/environments): their episodes' tool calls run in code
        # sessions opened in the episode owner's name; registered ones kept in the registry's
        # store beside the registered types (shared by replicas on a PostgreSQL registry).
        self.environments = Environments(
            self.scorer,
            self.code_sessions,
            store=self.catalog.store,
            episodes=Episodes(settings.environments),
        )
        self._stack: contextlib.AsyncExitStack | None = None

    def _replica_id(self) -> str:
        """This replica's name among those sharing statistics: the configured one, else the
        sandbox's instance id (unique among the services of a host, kept across restarts; known
        once the pool has started), else the host name and a hash of the statistics file."""
        sandbox = self._own_sandbox.settings.instance if self._own_sandbox is not None else None
        return self.settings.stats.replica_id or sandbox or default_replica_id(self.settings.stats_path())

    def observe(self, observer: Observer) -> None:
        """Also tell `observer` of every verdict (the service's metrics), besides statistics."""
        self._observers.append(observer)

    def _observe(self, verdict: Verdict, name: str) -> None:
        for observer in self._observers:
            observer(verdict, name)
        if self.stats is not None:
            self.stats.observe_verdict(verdict, name)

    async def start(self) -> None:
        """Start everything; if a step fails, what was started is stopped before it raises."""
        if self._stack is not None:
            raise RuntimeError("the runtime is already started")
        stack = contextlib.AsyncExitStack()
        try:
            resealed = await self._start(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        log.info(
            "referee_started",
            workers=self.settings.workers.count,
            verifiers=self.catalog.names(),
            secrets_resealed=resealed,
        )

    async def _start(self, stack: contextlib.AsyncExitStack) -> int:
        """Each step registers its stop on `stack` once it has started."""
        stack.callback(self.pool.close)
        stack.push_async_callback(self.catalog.aclose)
        if self.judges is not None:  # closed late: scoring (and its judge calls) stops first
            stack.push_async_callback(self.judges.aclose)
        # Webhook secrets stored in plain text, or under a rotated-out key: encrypted anew.
        resealed = await self.catalog.reseal_secrets()
        self.pool.start()
        await self.pool.warm_up()
        # Rebuilds the worker pool if it breaks (its forkserver killed, say).
        watcher = asyncio.create_task(self.pool.watch(), name="referee-pool-watch")
        stack.callback(watcher.cancel)
        if self._own_sandbox is not None:
            await self._own_sandbox.start()
            stack.push_async_callback(self._own_sandbox.close)
        # After the sandbox, so stopped before it: every session closed, its container given back.
        await self.code_sessions.start()
        stack.push_async_callback(self.code_sessions.stop)
        # After the sessions, so stopped before them: each episode closes its own session.
        await self.environments.open()
        stack.push_async_callback(self.environments.close)
        if self.stats is not None:
            # After the sandbox: its instance id, claimed at its start, may name this replica.
            if self.scoped_stats is not None:
                self.scoped_stats.replica = self._replica_id()
            if self.shared_stats is not None:
                self.shared_stats.replica = self._replica_id()
            flush_s = self.settings.stats.flush_s
            paths = self.settings.stats_paths()
            await stack.enter_async_context(persisted(self.stats, paths, flush_s, self.shared_stats))
        # Last in, so first out: no audit scores on a stopping pool.
        stack.push_async_callback(self.audits.cancel_all)
        return resealed

    async def stop(self) -> None:
        """Stop what `start` started (a runtime never started has nothing to stop)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> Runtime:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
