"""The Docker engine as the pool sees it: connecting (image checked, strays removed) and its
events for one service's sandbox containers, read in a thread and handed to the event loop.

A warm container can die while nobody uses it (`docker kill`, `docker rm -f`, the engine
restarting, the OOM killer): without being told, the pool would hand it to the next program
and the verdict would come back masked. The engine's event stream says so within milliseconds.

- The stream is filtered on the instance's label and on `kill`, `die` and `destroy` (not `oom`:
  a program over its memory limit triggers it in a container that lives on).
- The Docker SDK's stream blocks, so it is read in a daemon thread; each event is posted to the
  event loop with `call_soon_threadsafe`, where the pool's state lives.
- The stream ends when the engine stops. The thread reconnects (backoff from 0.2 s up to
  `retry_s`) and, once subscribed again, lists the instance's running containers: the pool
  drops any it knows that is not among them, so deaths during the gap are not missed either.
- `stop()` closes the stream from the loop's side, which ends the blocking read at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import structlog

from referee.sandbox.container import SandboxContainer
from referee.sandbox.hardening import LABEL
from referee.sandbox.protocol import SandboxUnavailable
from referee.sandbox.settings import SandboxSettings, docker_module

log = structlog.get_logger(__name__)

WATCHED_ACTIONS = ("kill", "die", "destroy")
FIRST_RETRY_S = 0.2
# After a container's stream ended mid-run: how long to wait for Docker's `die` event, which
# says whether the engine was told to kill it (then not the program's doing).
DEATH_NOTICE_S = 2.0
UNTRACKED_KEPT = 256


def docker_client(settings: SandboxSettings) -> Any:
    """A new `docker.DockerClient` for `settings` (blocking calls; the caller closes it)."""
    docker = docker_module()
    if settings.docker_host:
        return docker.DockerClient(base_url=settings.docker_host, timeout=int(settings.docker_timeout_s))
    return docker.from_env(timeout=int(settings.docker_timeout_s))


def remove_containers(client: Any, instance: str | None) -> None:
    """Force-remove every container of `instance` (best effort: one already gone is fine)."""
    for c in client.api.containers(all=True, filters={"label": f"{LABEL}={instance}"}):
        with contextlib.suppress(Exception):
            client.api.remove_container(c["Id"], force=True)


def connect_engine(settings: SandboxSettings, image: str) -> Any:
    """Blocking: a client to an engine that answers and has `image`, with what an earlier run
    of this instance left behind removed. SandboxUnavailable when the image is missing."""
    docker = docker_module()
    client = docker_client(settings)
    try:
        client.ping()
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            raise SandboxUnavailable(
                f"sandbox image {image} is missing: run `referee sandbox build`"
            ) from None
        remove_containers(client, settings.instance)
    except BaseException:
        client.close()
        raise
    return client


OnEvent = Callable[[str, str], None]  # (container id, action)
OnRunning = Callable[[set[str], float], None]  # (running ids, monotonic time the listing began)


class EngineEvents:
    def __init__(
        self,
        connect: Callable[[], Any],
        instance: str,
        on_event: OnEvent,
        on_running: OnRunning,
        retry_s: float,
    ) -> None:
        """`connect`: a new `docker.DockerClient` (blocking; this thread owns and closes it)."""
        self._connect = connect
        self._label = f"{LABEL}={instance}"
        self._on_event = on_event
        self._on_running = on_running
        self._retry_s = retry_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self.connected = False  # subscribed, and the running containers were listed
        self.reconnects = 0
        self._failing = False  # the last attempt failed: said once, not at every retry

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="referee-docker-events", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()  # ends the thread's blocking read
        if self._thread is not None:
            # Bounded: a thread stuck connecting to a dead engine is a daemon and dies with us.
            await asyncio.to_thread(self._thread.join, 5.0)
        self.connected = False

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None and not self._stopping.is_set():
            with contextlib.suppress(RuntimeError):  # the loop closed under us
                self._loop.call_soon_threadsafe(fn, *args)

    def _run(self) -> None:
        delay = FIRST_RETRY_S
        while not self._stopping.is_set():
            try:
                self._follow()
                delay = FIRST_RETRY_S  # the engine was there: retry quickly after a restart
            except Exception as exc:
                if not self._stopping.is_set() and not self._failing:  # once per outage
                    log.warning("docker events unavailable", error=f"{type(exc).__name__}: {exc}"[:300])
                self._failing = True
            finally:
                self.connected = False
            if self._stopping.wait(delay):
                break
            delay = min(delay * 2, self._retry_s)
            self.reconnects += 1

    def _follow(self) -> None:
        client = self._connect()
        try:
            filters = {"label": self._label, "type": "container", "event": list(WATCHED_ACTIONS)}
            stream = client.api.events(filters=filters, decode=True)
            with self._lock:
                if self._stopping.is_set():
                    stream.close()
                    return
                self._stream = stream
            # Subscribed first, listed second: a death after the listing is in the stream, one
            # before it is missing from the listing.
            listed_at = time.monotonic()
            running = client.api.containers(filters={"label": self._label, "status": "running"})
            self._post(self._on_running, {c["Id"] for c in running}, listed_at)
            self.connected = True
            if self._failing:
                log.info("docker events resumed", reconnects=self.reconnects)
                self._failing = False
            for event in stream:
                action = str(event.get("Action") or event.get("status") or "")
                cid = str(event.get("id") or (event.get("Actor") or {}).get("ID") or "")
                if cid and action in WATCHED_ACTIONS:
                    self._post(self._on_event, cid, action)
        finally:
            with self._lock:
                self._stream = None
            with contextlib.suppress(Exception):
                client.close()


class ContainerWatch:
    """The pool's live containers and what Docker's events say of them. `on_dead(container)`
    is called on the loop when one dies or is removed (the pool drops it if it is warm)."""

    def __init__(
        self,
        connect: Callable[[], Any],
        instance: str,
        retry_s: float,
        on_dead: Callable[[SandboxContainer], None],
    ) -> None:
        self._known: dict[str, SandboxContainer] = {}  # started and not removed by the pool
        # Events of containers not (yet) tracked, the latest few: one killed between its start
        # and `track` is not missed.
        self._untracked: OrderedDict[str, list[str]] = OrderedDict()
        self._on_dead = on_dead
        self._events = EngineEvents(connect, instance, self._on_event, self._on_running, retry_s)

    @property
    def connected(self) -> bool:
        return self._events.connected

    def start(self) -> None:
        self._events.start()

    async def stop(self) -> None:
        await self._events.stop()

    def track(self, container: SandboxContainer) -> None:
        self._known[container.id] = container
        for action in self._untracked.pop(container.id, []):
            self._on_event(container.id, action)

    def forget(self, container: SandboxContainer) -> None:
        self._known.pop(container.id, None)

    def _on_event(self, container_id: str, action: str) -> None:
        container = self._known.get(container_id)
        if container is None:  # one the pool removed itself, or not tracked yet
            self._untracked.setdefault(container_id, []).append(action)
            self._untracked.move_to_end(container_id)
            while len(self._untracked) > UNTRACKED_KEPT:
                self._untracked.popitem(last=False)
            return
        if action == "kill":
            container.killed_by_engine = True  # a signal from outside; `die` follows if fatal
            return
        self.forget(container)
        container.ended.set()
        self._on_dead(container)

    def _on_running(self, running: set[str], listed_at: float) -> None:
        """After the stream (re)connected: a container started before the listing and not
        running then died while nobody listened (an engine restart, most likely)."""
        for container in list(self._known.values()):
            if container.created < listed_at and container.id not in running:
                container.killed_by_engine = True
                self._on_event(container.id, "die")

    async def lost_to_engine(self, container: SandboxContainer) -> bool:
        """A container's stream ended mid-run: True when that was the engine's doing (killed
        from outside, or the engine unreachable), not the program's."""
        if container.alive():
            return False  # still running: its supervisor stopped answering in time
        if not self._events.connected:
            return True  # no word from the engine: do not blame the program
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(container.ended.wait(), DEATH_NOTICE_S)
        return container.killed_by_engine
