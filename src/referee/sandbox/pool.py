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
runtime_error; a container that cannot even be obtained is an infrastructure error.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from referee.sandbox.container import SandboxContainer, StreamLost
from referee.sandbox.hardening import LABEL, container_create_kwargs
from referee.sandbox.image import image_ref
from referee.sandbox.instance import InstanceClaim, claim_instance
from referee.sandbox.protocol import Job, RunResult, SandboxUnavailable, TestRun, encode_request
from referee.sandbox.settings import SandboxSettings, docker_module

log = structlog.get_logger(__name__)

# Slack on top of the limits before the host gives up on a supervisor (kills, pipes, transfer).
PER_TEST_SLACK_S = 3.0
MAX_TEST_ATTEMPTS = 2
# Output kept per test once it has been judged (for the verdict's details).
KEPT_BYTES = 512
# A test whose output (base64, as it arrived) is at most this is decoded and judged on the event
# loop: microseconds, against a thread hop per test that costs more than the judging itself.
INLINE_JUDGE_BYTES = 4096


def _output_size(msg: dict[str, Any]) -> int:
    return sum(len(msg.get(key) or "") for key in ("stdout", "stderr", "result"))


def _finish_test(job: Job, index: int, msg: dict[str, Any]) -> TestRun:
    """One test's TestRun; judged at once when the job has a judge, after which only a short
    prefix of its output is kept (a group holds at most one test's full output at a time)."""
    run = TestRun.from_message(msg)
    if run.tampered:
        run.status, run.note = "lost", "the program tampered with the sandbox supervisor"
    if job.judge is not None:
        run.verdict = job.judge(index, run)
        run.stdout, run.stderr, run.result = run.stdout[:KEPT_BYTES], run.stderr[-KEPT_BYTES:], None
    return run


class SandboxPool:
    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings()
        self.image = image_ref(self.settings)
        self._client: Any = None
        self._executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="referee-sandbox")
        self._warm: list[SandboxContainer] = []
        self._starting = 0
        self._in_use = 0  # containers handed to a submission
        self._recycling = 0  # containers scrubbing themselves after a submission
        self._waiting = 0
        self._queued = 0  # submissions waiting for a run slot
        self._active = 0  # submissions holding a run slot
        self._changed = asyncio.Event()
        self._running_sem = asyncio.Semaphore(self.settings.max_parallel)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._maintainer: asyncio.Task[None] | None = None
        self._healthy = False
        self._reason = "not started"
        self._closed = False
        self.stats = {"started": 0, "removed": 0, "runs": 0, "reused": 0}
        self._claim: InstanceClaim | None = None  # the instance slot, when this pool claimed one

    # -- lifecycle ---------------------------------------------------------------------------

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    def _connect_blocking(self) -> Any:
        docker = docker_module()

        s = self.settings
        client = (
            docker.DockerClient(base_url=s.docker_host, timeout=int(s.docker_timeout_s))
            if s.docker_host
            else docker.from_env(timeout=int(s.docker_timeout_s))
        )
        try:
            client.ping()
            try:
                client.images.get(self.image)
            except docker.errors.ImageNotFound:
                raise SandboxUnavailable(
                    f"sandbox image {self.image} is missing: run `referee sandbox build`"
                ) from None
            for c in client.api.containers(all=True, filters={"label": f"{LABEL}={s.instance}"}):
                with contextlib.suppress(docker.errors.APIError):
                    client.api.remove_container(c["Id"], force=True)
        except BaseException:
            client.close()
            raise
        return client

    async def _connect(self) -> bool:
        try:
            self._client = await self._call(self._connect_blocking)
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
        await self._connect()
        self._maintainer = asyncio.create_task(self._maintain())

    async def close(self) -> None:
        self._closed = True
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
                await self._call(self._sweep_blocking)
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

    def _sweep_blocking(self) -> None:
        for c in self._client.api.containers(
            all=True, filters={"label": f"{LABEL}={self.settings.instance}"}
        ):
            with contextlib.suppress(Exception):
                self._client.api.remove_container(c["Id"], force=True)

    def health(self) -> tuple[bool, str]:
        if not self._healthy:
            return False, self._reason
        return True, f"ok: {len(self._warm)} warm, {self._starting} starting, image {self.image}"

    @property
    def containers(self) -> int:
        """Containers that exist now: warm, starting, running a submission or scrubbing."""
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
            if not await container.wait_ready(self.settings.start_timeout_s):
                raise StreamLost("a new container reported itself unclean")
            container.memory_mb = self.settings.container_memory_mb()
            self.stats["started"] += 1
            self._warm.append(container)
        except Exception as exc:
            if container is not None:
                self._spawn(self._remove(container))
            self._set_unhealthy(f"cannot start a sandbox container: {type(exc).__name__}: {exc}"[:500])
        finally:
            self._starting -= 1
            self._changed.set()

    async def _remove(self, container: SandboxContainer) -> None:
        container.close_stream()
        with contextlib.suppress(Exception):
            await self._call(self._client.api.remove_container, container.id, force=True)
        self.stats["removed"] += 1

    async def _acquire(self) -> SandboxContainer:
        deadline = time.monotonic() + self.settings.acquire_timeout_s
        self._waiting += 1
        self._changed.set()
        try:
            while True:
                if not self._healthy:
                    raise SandboxUnavailable(self._reason)
                if self._warm:
                    self._in_use += 1
                    return self._warm.pop(0)
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
        while True:
            pending = [i for i, t in enumerate(result.tests) if t is None]
            container = await self._acquire()
            result.containers += 1
            state = {"compiled": False}
            finished = False
            try:
                finished = await self._run_in(container, job, pending, result, state)
                lost = ""
            except StreamLost as exc:
                lost = str(exc)
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
            if not state["compiled"]:
                # Nothing of the candidate ran in that container: not its doing.
                infra_failures += 1
                if infra_failures >= MAX_TEST_ATTEMPTS:
                    raise SandboxUnavailable(f"sandbox container failed before running the program: {lost}")
                continue
            current = pending[0]
            attempts[current] = attempts.get(current, 0) + 1
            log.info("sandbox supervisor lost", test=current, attempt=attempts[current], reason=lost)
            if attempts[current] >= MAX_TEST_ATTEMPTS:
                result.tests[current] = TestRun(
                    status="lost", note=f"the program disrupted the sandbox supervisor: {lost}"[:300]
                )

    async def _recycle(self, container: SandboxContainer) -> None:
        """Back to the warm pool once the supervisor says it scrubbed itself, or removed."""
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
            if ready and not self._closed and self._healthy:
                self.stats["reused"] += 1
                self._warm.append(container)
            else:
                await self._remove(container)
        finally:
            self._recycling -= 1
            self._changed.set()

    async def _run_in(
        self,
        container: SandboxContainer,
        job: Job,
        pending: list[int],
        result: RunResult,
        state: dict[str, bool],
    ) -> bool:
        """Run the pending tests in one container. True when every test got a result."""
        lim = job.limits
        # A container keeps the limit of its last program: set it whenever it differs.
        memory_mb = self.settings.container_memory_mb(lim.memory_mb)
        if container.memory_mb != memory_mb:
            mem = f"{memory_mb}m"
            await self._call(
                self._client.api.update_container, container.id, mem_limit=mem, memswap_limit=mem
            )
            container.memory_mb = memory_mb
        budget = lim.compile_timeout_s + 5.0 + len(pending) * (lim.time_s + PER_TEST_SLACK_S)
        await container.send(encode_request(job, pending))
        async for msg in container.messages(time.monotonic() + budget):
            kind = msg.get("type")
            if kind == "compiled":
                state["compiled"] = True
                result.compile_ok = bool(msg["ok"])
                result.compile_output = str(msg.get("output", ""))
                result.compile_time_s = float(msg.get("time_s") or 0.0)
            elif kind == "test":
                index = int(msg["index"])
                if job.judge is not None and _output_size(msg) > INLINE_JUDGE_BYTES:
                    # decode + judge (up to MBs of output) off the event loop
                    result.tests[index] = await asyncio.to_thread(_finish_test, job, index, msg)
                else:
                    result.tests[index] = _finish_test(job, index, msg)
            elif kind == "done":
                return True
            elif kind == "error":
                raise StreamLost(f"supervisor error: {msg.get('message')}")
            elif kind == "unclean":
                raise StreamLost(f"the program left traces the sandbox could not remove: {msg.get('reason')}")
        return False
