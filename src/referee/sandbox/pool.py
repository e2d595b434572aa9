"""A pool of warm, pre-started sandbox containers.

- `start()` connects to Docker (in a thread), removes stray containers carrying this service's
  label and starts filling the pool. It never raises: if Docker is unreachable or the image is
  missing it records the reason, reports unhealthy, and retries in the background.
- `run(job)` takes a warm container (waiting while replacements start), sends the submission
  and collects one result per test. The container then scrubs itself (the supervisor kills
  the program's processes and removes its files and IPC objects; the next program runs under
  a uid never used in it before) and comes back warm, unless it reported anything unclean,
  served `max_runs_per_container` programs or grew older than `max_container_age_s`: then it
  is removed and replaced asynchronously.
- At most `max_parallel` submissions run at once (wall-clock limits need a free core), and
  never more than `max(pool_size, max_parallel)` containers exist, whatever the queue.

If the supervisor dies or reports tampering during test i, the tests not yet run go to a new
container. A test that kills the supervisor twice in a row is the candidate's doing and gets
runtime_error; a container that cannot even be obtained is an infrastructure error, and so is
one the engine killed (`docker kill`, `rm -f`, a restart): the run moves to a new container once.

Dead warm containers are never handed out: Docker's events (engine.py) drop a container
that dies or is removed from the warm set at once, and every checkout (and the maintainer, each
second) checks the container's attach stream is still open, in case the events were missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import structlog

from referee.sandbox.compile_cache import CachedCompile, CompileCache
from referee.sandbox.container import SandboxContainer, StreamLost
from referee.sandbox.engine import ContainerWatch, connect_engine, docker_client, remove_containers
from referee.sandbox.hardening import container_create_kwargs
from referee.sandbox.image import image_ref
from referee.sandbox.instance import InstanceClaim, claim_instance
from referee.sandbox.protocol import Job, RunResult, SandboxUnavailable, TestRun
from referee.sandbox.session import SESSION_LANGUAGES, SandboxSession, SessionSpec
from referee.sandbox.settings import SandboxSettings
from referee.sandbox.submission import run_tests

log = structlog.get_logger(__name__)

MAX_TEST_ATTEMPTS = 2


class SandboxPool:
    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings()
        self.image = image_ref(self.settings)
        self._client: Any = None
        self._executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="referee-sandbox")
        self._warm: list[SandboxContainer] = []
        self._watch: ContainerWatch | None = None  # Docker's events, once started
        self._starting = 0
        self._in_use = 0  # containers handed to a submission
        self._recycling = 0  # containers scrubbing themselves after a submission
        self._waiting = 0
        self._queued = 0  # submissions waiting for a run slot
        self._sessions = 0  # code sessions open (or opening), each holding one container
        self._active = 0  # submissions holding a run slot
        self._changed = asyncio.Event()
        self._running_sem = asyncio.Semaphore(self.settings.max_parallel)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._maintainer: asyncio.Task[None] | None = None
        self._healthy = False
        self._reason = "not started"
        self._closed = False
        self.stats = {"started": 0, "removed": 0, "runs": 0, "reused": 0, "found_dead": 0, "sessions": 0}
        self._claim: InstanceClaim | None = None  # the instance slot, when this pool claimed one
        self.compile_cache = CompileCache(self.settings.compile_cache_bytes)

    # -- lifecycle ---------------------------------------------------------------------------

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    async def _connect(self) -> bool:
        try:
            self._client = await self._call(connect_engine, self.settings, self.image)
        except SandboxUnavailable as exc:
            self._set_unhealthy(str(exc))
            return False
        except Exception as exc:
            self._set_unhealthy(f"Docker engine unreachable: {type(exc).__name__}: {exc}"[:500])
            return False
        self._healthy, self._reason = True, "ok"
        self._changed.set()
        return True

    def _set_unhealthy(self, reason: str) -> None:
        if self._healthy or reason != self._reason:
            log.warning("sandbox unavailable", reason=reason)
        self._healthy, self._reason = False, reason
        self._changed.set()

    async def start(self) -> None:
        if not self.settings.enabled:
            self._reason = "sandbox disabled (REFEREE_SANDBOX=false)"
            return
        if self.settings.instance is None:
            try:
                self._claim = claim_instance(self.settings.state_dir)
            except (OSError, RuntimeError) as exc:
                self._set_unhealthy(f"no sandbox instance id: {exc}"[:500])
                return
            self.settings = self.settings.model_copy(update={"instance": self._claim.instance})
        assert self.settings.instance is not None
        self._watch = ContainerWatch(
            partial(docker_client, self.settings),
            self.settings.instance,
            self.settings.retry_interval_s,
            self._on_dead,
        )
        self._watch.start()
        await self._connect()
        self._maintainer = asyncio.create_task(self._maintain())

    async def close(self) -> None:
        self._closed = True
        await self._stop_events()
        if self._maintainer is not None:
            self._maintainer.cancel()
            with contextlib.suppress(BaseException):
                await self._maintainer
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        warm, self._warm = self._warm, []
        await asyncio.gather(*(self._remove(c) for c in warm), return_exceptions=True)
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._call(remove_containers, self._client, self.settings.instance)
            self._client.close()
            self._client = None
        self._healthy, self._reason = False, "closed"
        self._executor.shutdown(wait=False)
        if self._claim is not None:
            self._claim.release()

    async def abandon(self) -> None:
        """Stop looking after the containers and drop the Docker connection, leaving every
        container where it is: what a crashed service leaves behind (the next `start()` of
        this instance removes them). For tests of that recovery, and nothing else."""
        self._closed = True
        await self._stop_events()
        if self._maintainer is not None:
            self._maintainer.cancel()
            with contextlib.suppress(BaseException):
                await self._maintainer
        if self._client is not None:
            self._client.close()
            self._client = None
        self._healthy, self._reason = False, "abandoned"
        if self._claim is not None:
            self._claim.release()  # as a crash would

    @property
    def queued(self) -> int:
        """Submissions waiting for a run slot (all `max_parallel` slots are busy)."""
        return self._queued

    async def _stop_events(self) -> None:
        if self._watch is not None:
            await self._watch.stop()

    def health(self) -> tuple[bool, str]:
        """Healthy while Docker is reachable and the image is there. The reason counts only warm
        containers that are alive, and says when the pool is short of `pool_size` warm."""
        if not self._healthy:
            return False, self._reason
        snap = self.readiness()
        refilling = f" of {snap['pool_size']} (refilling)" if snap["refilling"] else ""
        return True, f"ok: {snap['warm']} warm{refilling}, {snap['starting']} starting, image {self.image}"

    def readiness(self) -> dict[str, Any]:
        """What /readyz reports: warm counts only live containers (a cheap peek at each)."""
        warm = sum(1 for c in self._warm if c.alive())
        return {
            "warm": warm,
            "starting": self._starting,
            "busy": self._in_use + self._recycling,
            "pool_size": self.settings.pool_size,
            "refilling": self._healthy and warm < self.settings.pool_size,
            "events": self._watch is not None and self._watch.connected,
        }

    @property
    def sessions_open(self) -> int:
        """Code sessions open now (each holds one container, not counted in `containers`)."""
        return self._sessions

    @property
    def containers(self) -> int:
        """Containers that exist now for submissions: warm, starting, running one or
        scrubbing (a session's container is counted by `sessions_open` instead)."""
        return len(self._warm) + self._starting + self._in_use + self._recycling

    @property
    def max_containers(self) -> int:
        return max(self.settings.pool_size, self.settings.max_parallel)

    @property
    def warm(self) -> int:
        """Containers started and idle, ready for the next submission."""
        return len(self._warm)

    async def until_warm(self, n: int | None = None, timeout_s: float = 120.0) -> bool:
        """Wait until `n` containers (default: pool_size) are warm and none is starting or
        being scrubbed; False if that did not happen within `timeout_s`. For benchmarks and
        tests that must start from a full pool, without polling private state."""
        want = self.settings.pool_size if n is None else n
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self.warm < want or self._starting or self._recycling:
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    # -- keeping containers warm ---------------------------------------------------------------

    async def _maintain(self) -> None:
        while not self._closed:
            if not self._healthy:
                await asyncio.sleep(self.settings.retry_interval_s)
                if not self._closed and self._client is None:
                    await self._connect()
                elif not self._closed:
                    # A client exists but starting failed: check the engine again.
                    self._client.close()
                    self._client = None
                    await self._connect()
                continue
            self._drop_dead_warm()  # in case Docker's events were missed (stream reconnecting)
            # Containers needed now: submissions queued or waiting for one. Refilling up to
            # pool_size waits until no submission runs, so container starts (CPU-heavy in
            # dockerd/runc) do not slow tests that are judged on wall-clock time.
            needed = self._queued + self._waiting
            want = needed if self._active else max(needed, self.settings.pool_size)
            while (
                self._healthy
                and len(self._warm) + self._starting + self._recycling < want
                and self.containers < self.max_containers
                and self._starting < self.settings.max_starting
            ):
                self._starting += 1
                self._spawn(self._start_one())
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=1.0)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start_one(self) -> None:
        container: SandboxContainer | None = None
        try:
            kwargs = container_create_kwargs(self._client.api, self.settings, self.image)
            container = await self._call(SandboxContainer.create, self._client.api, kwargs)
            if self._watch is not None:
                self._watch.track(container)
            if not await container.wait_ready(self.settings.start_timeout_s):
                raise StreamLost("a new container reported itself unclean")
            container.memory_mb = self.settings.container_memory_mb()
            self.stats["started"] += 1
            if len(self._warm) >= max(self.settings.pool_size, self._queued + self._waiting):
                # Containers returned meanwhile (sessions closing) filled the warm set: this
                # one is surplus, and a warm set above its bound would hold memory for nothing.
                self._spawn(self._remove(container))
                return
            self._warm.append(container)
        except Exception as exc:
            if container is not None:
                self._spawn(self._remove(container))
            why = f"cannot start a sandbox container: {type(exc).__name__}: {exc}"[:500]
            if (
                container is not None
                and self._watch is not None
                and await self._watch.lost_to_engine(container)
            ):
                # Killed from outside while starting (a `docker kill` of everything, say): the
                # engine works, so the next start is tried at once, not after retry_interval_s.
                log.info("sandbox container killed while starting", reason=why)
            else:
                self._set_unhealthy(why)
        finally:
            self._starting -= 1
            self._changed.set()

    async def _remove(self, container: SandboxContainer) -> None:
        if self._watch is not None:
            self._watch.forget(container)
        container.close_stream()
        with contextlib.suppress(Exception):
            await self._call(self._client.api.remove_container, container.id, force=True)
        self.stats["removed"] += 1

    # -- noticing dead containers ---------------------------------------------------------------

    def _on_dead(self, container: SandboxContainer) -> None:
        """Docker said `container` died or was removed."""
        if container in self._warm:
            self._warm.remove(container)
            self._discard_dead(container)

    def _drop_dead_warm(self) -> None:
        dead = [c for c in self._warm if not c.alive()]
        for container in dead:
            self._warm.remove(container)
            self._discard_dead(container)

    def _discard_dead(self, container: SandboxContainer) -> None:
        self.stats["found_dead"] += 1
        log.info("sandbox container found dead", container=container.id[:12])
        self._spawn(self._remove(container))  # gone already, or dying: removal is best effort
        self._changed.set()  # the maintainer starts a replacement

    async def _acquire(self, *, for_session: bool = False) -> SandboxContainer:
        deadline = time.monotonic() + self.settings.acquire_timeout_s
        self._waiting += 1
        self._changed.set()
        try:
            while True:
                if not self._healthy:
                    raise SandboxUnavailable(self._reason)
                while self._warm:
                    container = self._warm.pop(0)
                    if container.alive():
                        if not for_session:  # a session's container leaves the pool's count
                            self._in_use += 1
                        return container
                    self._discard_dead(container)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SandboxUnavailable("no sandbox container became ready in time")
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout=min(remaining, 1.0))
        finally:
            self._waiting -= 1

    # -- running a submission ------------------------------------------------------------------

    async def run(self, job: Job) -> RunResult:
        """Run every test of one submission; raise SandboxUnavailable on infrastructure failure."""
        if not self.settings.enabled:
            raise SandboxUnavailable(self._reason)
        if self._queued >= self.settings.max_queued:
            raise SandboxUnavailable(
                f"sandbox overloaded: {self._queued} submissions already waiting (max_queued)"
            )
        self._queued += 1
        self._changed.set()
        try:
            await self._running_sem.acquire()
        finally:
            self._queued -= 1
        self._active += 1
        try:
            return await self._run_slot(job)
        finally:
            self._active -= 1
            self._running_sem.release()
            self._changed.set()

    async def _run_slot(self, job: Job) -> RunResult:
        self.stats["runs"] += 1
        result = RunResult(tests=[None] * len(job.tests))
        attempts: dict[int, int] = {}
        infra_failures = 0
        cached = self.compile_cache.for_job(job, self.image)
        while True:
            pending = [i for i, t in enumerate(result.tests) if t is None]
            container = await self._acquire()
            result.containers += 1
            state = {"compiled": False}
            finished = to_engine = False
            try:
                finished = await self._run_in(container, job, pending, result, state, cached)
                lost = ""
            except StreamLost as exc:
                lost = str(exc)
                to_engine = self._watch is None or await self._watch.lost_to_engine(container)
            finally:
                self._in_use -= 1
                if finished:
                    self._recycling += 1
                    self._spawn(self._recycle(container))
                else:
                    self._spawn(self._remove(container))
                self._changed.set()
            pending = [i for i, t in enumerate(result.tests) if t is None]
            if finished or not result.compile_ok or not pending:
                return result
            if not state["compiled"] or to_engine:
                # Nothing of the candidate ran in that container, or the engine killed it: not
                # the program's doing. One more container, then an infrastructure error.
                infra_failures += 1
                if infra_failures >= MAX_TEST_ATTEMPTS:
                    raise SandboxUnavailable(f"sandbox container lost: {lost}")
                continue
            current = pending[0]
            attempts[current] = attempts.get(current, 0) + 1
            log.info("sandbox supervisor lost", test=current, attempt=attempts[current], reason=lost)
            if attempts[current] >= MAX_TEST_ATTEMPTS:
                result.tests[current] = TestRun(
                    status="lost", note=f"the program disrupted the sandbox supervisor: {lost}"[:300]
                )

    async def _recycle(self, container: SandboxContainer, *, make_room: bool = False) -> None:
        """Back to the warm pool once the supervisor says it scrubbed itself, or removed.
        If the pool is full (`_full`), its youngest warm container goes instead."""
        try:
            container.runs += 1
            retire = (
                container.runs >= self.settings.max_runs_per_container
                or time.monotonic() - container.created > self.settings.max_container_age_s
            )
            ready = False
            if not retire:
                with contextlib.suppress(StreamLost):
                    ready = await container.wait_ready(self.settings.scrub_timeout_s)
            if ready and not self._closed and self._healthy and container.alive():
                self.stats["reused"] += 1
                if self._full(make_room) and self._warm:
                    self._spawn(self._remove(self._warm.pop()))
                self._warm.append(container)
            else:
                await self._remove(container)
        finally:
            self._recycling -= 1
            self._changed.set()

    def _full(self, make_room: bool) -> bool:
        """Whether a container coming back (counted in `_recycling`) would overfill the pool:
        the others would make `max_containers`, or (`make_room`, a session's) the warm set is
        at `pool_size`. Sessions' containers come back on top of the ones the pool started
        behind them, so a scoring container scrubbed meanwhile finds the pool full too."""
        others = len(self._warm) + self._starting + self._in_use + self._recycling - 1
        at_size = make_room and len(self._warm) >= self.settings.pool_size
        return at_size or others >= self.max_containers

    async def _run_in(
        self,
        container: SandboxContainer,
        job: Job,
        pending: list[int],
        result: RunResult,
        state: dict[str, bool],
        cached: CachedCompile | None = None,
    ) -> bool:
        """Run the pending tests in one container. True when every test got a result."""
        await self._fit_memory(container, job.limits.memory_mb)
        return await run_tests(container, job, pending, result, state, cached)

    async def _fit_memory(self, container: SandboxContainer, memory_limit_mb: int) -> None:
        """A container keeps the limit of its last program or session: set it whenever it
        differs. StreamLost when it cannot be set (nothing has run in it yet)."""
        memory_mb = self.settings.container_memory_mb(memory_limit_mb)
        if container.memory_mb == memory_mb:
            return
        mem = f"{memory_mb}m"
        try:
            await self._call(
                self._client.api.update_container, container.id, mem_limit=mem, memswap_limit=mem
            )
        except Exception as exc:  # gone (404), or the engine unreachable
            raise StreamLost(f"cannot set the container's memory limit: {exc}"[:300]) from exc
        container.memory_mb = memory_mb

    # -- code sessions ---------------------------------------------------------------------------

    async def open_session(self, spec: SessionSpec) -> SandboxSession:
        """A code session pinned to one container (session.py); SandboxUnavailable when the
        sandbox cannot run it or all `max_sessions` slots are taken. The pool refills behind
        it, so open sessions never take warm containers from scoring for long."""
        if not self.settings.enabled:
            raise SandboxUnavailable(self._reason)
        if spec.language not in SESSION_LANGUAGES:
            raise ValueError(f"sessions run {', '.join(SESSION_LANGUAGES)}, not {spec.language!r}")
        if self._sessions >= self.settings.max_sessions:
            raise SandboxUnavailable(f"every code session slot is taken ({self.settings.max_sessions} open)")
        self._sessions += 1
        try:
            container = await self._acquire(for_session=True)
        except BaseException:
            self._sessions -= 1
            raise
        self._changed.set()  # the maintainer replaces it in the warm set
        session = SandboxSession(container, spec, self._end_session)
        try:
            await self._fit_memory(container, spec.limits.memory_mb)
            await session.open(self.settings.start_timeout_s)
        except BaseException as exc:
            self._sessions -= 1
            self._spawn(self._remove(container))
            if isinstance(exc, Exception):
                raise SandboxUnavailable(f"cannot open a code session: {exc}"[:500]) from exc
            raise
        self.stats["sessions"] += 1
        return session

    async def _end_session(self, container: SandboxContainer, reusable: bool) -> None:
        """A session ended: its container scrubs itself back into the pool, or is removed."""
        self._sessions -= 1
        if reusable and not self._closed:
            self._recycling += 1
            self._spawn(self._recycle_session(container))
        else:
            self._spawn(self._remove(container))
        self._changed.set()

    async def _recycle_session(self, container: SandboxContainer) -> None:
        """After the session's `done`: back to the warm set like any container. The pool
        refilled while the session held it, so the youngest warm container (started meanwhile,
        never used) makes room: one more warm container is one more idle supervisor, not a
        faster group, and the container that served the session is the one reused."""
        try:
            deadline = time.monotonic() + self.settings.scrub_timeout_s
            async for msg in container.messages(deadline):
                if msg.get("type") == "done":
                    break
                if msg.get("type") != "result":  # a reply still on its way is dropped
                    raise StreamLost(f"the session's supervisor said {str(msg)[:200]}")
        except StreamLost as exc:
            log.info("sandbox session container discarded", reason=str(exc))
            self._recycling -= 1
            await self._remove(container)
            self._changed.set()
            return
        await self._recycle(container, make_room=True)
