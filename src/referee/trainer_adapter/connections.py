"""Process-local service connections for the trainer adapters, created on first use.

Trainers copy reward functions across processes: verl ships them to Ray workers with
cloudpickle, forks reward workers, and loads a reward file under a module name of its own
(`custom_module_<hash>`), whose functions cloudpickle then copies *by value*, together with
every global they use. So the adapters' modules keep no clients, locks or loops in their
globals: they ask this module (always imported by name, so pickled by reference) for a
connection, which is made lazily, per process (a client never crosses a fork) and, for the
async ones, per event loop (an httpx async client belongs to the loop it first ran on).

`SampleBatcher` turns many concurrent per-sample awaits (verl's reward loop awaits one
`compute_score_async` per sample) into one `/v1/groups` request per burst.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from referee.grouping import ChunkPolicy, Placement, Sample, group_samples, scatter_verdicts
from referee.models import AdvantageConfig, GroupResult, Verdict

# How long a batcher waits for the rest of a burst of concurrent calls before it sends them
# (a reward loop starts its per-sample calls within microseconds of each other).
BATCH_WINDOW_S = 0.005
MAX_BATCH = 8192

_sync_clients: dict[tuple[Any, ...], Any] = {}
_batchers: dict[tuple[Any, ...], SampleBatcher] = {}
_async_clients: dict[tuple[Any, ...], Any] = {}
_lock: threading.Lock | None = None
_lock_pid = -1


# Connections other than HTTP, by URL scheme: `referee.deploy.verl_reward` registers `ray://`
# (the Serve deployment's handle) when it is imported, so this package never imports `deploy`.
# A factory takes (url, api_key, patience_s=..., retries=...) and returns an object with the
# client's `score_groups`.
ConnectionFactory = Callable[..., Any]
_schemes: dict[str, tuple[ConnectionFactory, ConnectionFactory]] = {}


def register_scheme(scheme: str, sync_factory: ConnectionFactory, async_factory: ConnectionFactory) -> None:
    """Serve URLs `scheme://...` with these clients (sync: `Client`-like, async: `AsyncClient`-like)."""
    _schemes[scheme] = (sync_factory, async_factory)


def _scheme_factories(url: str) -> tuple[ConnectionFactory, ConnectionFactory] | None:
    scheme, sep, _ = url.partition("://")
    return _schemes.get(scheme) if sep else None


def _process_lock() -> threading.Lock:
    """A lock of this process (made after any fork: a lock copied mid-acquire would deadlock)."""
    global _lock, _lock_pid
    if _lock is None or _lock_pid != os.getpid():
        _lock, _lock_pid = threading.Lock(), os.getpid()
    return _lock


class Patience(NamedTuple):
    """How long (how often) a connection waits out a service that is restarting, unreachable or
    overloaded before a call fails: `referee.client`'s `patience_s` and `retries` (None: the
    client's defaults)."""

    patience_s: float | None = None
    retries: int | None = None

    def settings(self) -> dict[str, Any]:
        return {"patience_s": self.patience_s, "retries": self.retries}


def sync_client(url: str, api_key: str | None, patience: Patience = Patience()) -> Any:
    """One pooled `referee.client.Client` per process, service and patience."""
    key = (os.getpid(), url, api_key, patience)
    with _process_lock():
        client = _sync_clients.get(key)
        if client is None:
            from referee.client import Client

            factories = _scheme_factories(url)
            settings = patience.settings()
            made = (
                factories[0](url, api_key, **settings)
                if factories
                else Client(url, api_key=api_key, **settings)
            )
            client = _sync_clients[key] = made
    return client


def use_client(url: str, api_key: str | None, client: Any, patience: Patience = Patience()) -> Any:
    """Make `client` (a `referee.client.Client`, or None to forget it) this process's connection
    to `url`: a custom transport, proxy or TLS setup for functions a trainer calls by name
    (verl's; `patience` as the functions' `patience_s`/`retries` keywords). Returns the client
    it replaces."""
    key = (os.getpid(), url, api_key, patience)
    with _process_lock():
        previous = _sync_clients.pop(key, None)
        if client is not None:
            _sync_clients[key] = client
    return previous


def async_client(
    url: str, api_key: str | None, patience: Patience = Patience(), timeout: float = 60.0
) -> Any:
    """One `referee.client.AsyncClient` per process, running event loop, service, patience and
    timeout: the code sessions and episodes of the tool and environment adapters (not batched:
    each call is a step of its own rollout)."""
    key = (os.getpid(), id(asyncio.get_running_loop()), url, api_key, patience, timeout)
    found = _async_clients.get(key)
    if found is None:
        from referee.client import AsyncClient

        found = _async_clients[key] = AsyncClient(
            url, api_key=api_key, timeout=timeout, **patience.settings()
        )
    return found


def batcher(url: str, api_key: str | None, patience: Patience = Patience()) -> SampleBatcher:
    """The batcher of this process, running event loop, service and patience."""
    key = (os.getpid(), id(asyncio.get_running_loop()), url, api_key, patience)
    found = _batchers.get(key)
    if found is None:
        found = _batchers[key] = SampleBatcher(url, api_key, patience=patience)
    return found


class Judged(NamedTuple):
    """A sample's verdict, and whether the group it was scored in had no reward spread
    (`GroupResult.zero_variance`; False for a sample that was not sent, see `unsendable`)."""

    verdict: Verdict
    zero_variance: bool


def judged(results: list[GroupResult], where: list[Placement]) -> list[Judged]:
    """`scatter_verdicts`, with each sample's group zero-variance flag."""
    verdicts = scatter_verdicts(results, where)
    flags = [not isinstance(w, Verdict) and results[w[0]].zero_variance for w in where]
    return [Judged(v, f) for v, f in zip(verdicts, flags, strict=True)]


class SampleBatcher:
    """Concurrent `judge(sample)` awaits on one loop -> one grouped request per burst."""

    def __init__(
        self,
        url: str,
        api_key: str | None,
        chunks: ChunkPolicy | None = None,
        patience: Patience = Patience(),
    ) -> None:
        from referee.client import AsyncClient

        factories = _scheme_factories(url)
        settings = patience.settings()
        self.client = (
            factories[1](url, api_key, **settings)
            if factories
            else AsyncClient(url, api_key=api_key, chunks=chunks, **settings)
        )
        self._pending: list[tuple[Sample, asyncio.Future[Judged]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()  # strong references while in flight
        self.requests = 0  # bursts sent (each one score_groups call, chunked if large)

    async def judge(self, sample: Sample) -> Judged:
        """The sample's verdict, scored with the rest of its burst: samples of one burst that
        share verifier, reference and prompt_id form one group."""
        future: asyncio.Future[Judged] = asyncio.get_running_loop().create_future()
        self._pending.append((sample, future))
        if len(self._pending) >= MAX_BATCH:
            self._send_now()
        elif self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_after_window())
        return await future

    async def _flush_after_window(self) -> None:
        await asyncio.sleep(BATCH_WINDOW_S)
        self._send_now()

    def _send_now(self) -> None:
        batch, self._pending = self._pending, []
        if self._flusher is not None and self._flusher is not asyncio.current_task():
            self._flusher.cancel()
        self._flusher = None
        if batch:
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[tuple[Sample, asyncio.Future[Judged]]]) -> None:
        self.requests += 1
        specs, where = group_samples([sample for sample, _ in batch])
        try:
            groups = (
                (await self.client.score_groups(specs, AdvantageConfig(), on_invalid="error_verdict")).groups
                if specs
                else []
            )
            outcomes = judged(groups, where)
        except Exception as exc:  # every waiter sees the failure; none is left hanging
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if not future.done():
                future.set_result(outcome)
