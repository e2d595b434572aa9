"""Referee on Ray Serve: the FastAPI app of `referee.service` as the Serve ingress.

Each replica is one Ray actor that builds a `Runtime` and serves it with `create_app`, so it
owns its own worker pool (`REFEREE_WORKERS` processes, children of the replica) and, where the node has
Docker and `REFEREE_SANDBOX` is on, its own warm sandbox pool. Serve's proxy routes HTTP to
the replicas; trainers on the same cluster call a replica's `groups` method through a
`DeploymentHandle` (`referee.deploy.RayGroupRewarder`), which runs the same FastAPI route
in-process (no network hop, same validation, admission and verdicts).

Configuration: one `Settings`, read where the application is built. The values set there
(arguments, `REFEREE_*` variables), secrets excepted, are forwarded to every replica, which
reads the rest, secrets included, from its own node's environment (`Settings.shared`). Its
`ray` section (`REFEREE_RAY_*`) is the deployment's shape. Start it with `referee serve --ray`
or `serve run referee.deploy.ray_serve:app`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from types import TracebackType
from typing import Any, cast

import httpx
import psutil
import ray
from ray import serve
from ray.serve.handle import DeploymentHandle

from referee.deploy.cluster_reaper import Watchdog, driver_files, reap, session_processes, start_watchdog
from referee.settings import RaySettings, Settings

logger = logging.getLogger(__name__)

DEPLOYMENT_NAME = "Referee"
# How long `RayConnection.close` lets Serve and Ray shut down before reaping regardless: Serve
# gives replicas `graceful_shutdown_timeout_s` (30 s) to drain; a hung (e.g. stopped) raylet
# would make `ray.shutdown()` wait forever.
SHUTDOWN_TIMEOUT_S = 60.0
# A replica whose worker pool stays down this long is reported unhealthy to Serve, which then
# replaces it; shorter outages are the pool rebuilding itself (`WorkerPool.watch`).
UNHEALTHY_AFTER_S = 30.0


@serve.deployment(name=DEPLOYMENT_NAME)
@serve.ingress()
class RefereeDeployment:
    """One replica: a whole runtime (worker pool, sandbox pool...) and the FastAPI app serving it."""

    async def __init__(  # type: ignore[misc]  # Serve awaits an async constructor
        self, shared: dict[str, Any] | None = None
    ) -> None:
        """`shared`: the building process's `Settings.shared()`, over this node's environment.
        Serve stores it with the application (in the GCS): it holds no secret."""
        from referee.runtime import Runtime
        from referee.service import create_app

        self.runtime = Runtime(Settings(**(shared or {})))
        self._app = create_app(self.runtime)
        self._local = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self._app), base_url="http://referee.replica"
        )
        self._down_since: float | None = None

    def __serve_build_asgi_app__(self) -> Any:
        return self._app

    async def call(
        self, method: str, path: str, body: bytes | None = None, api_key: str | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """The app's route for `method path`, run in this replica without a network hop:
        `(status, headers, body)`. The handle path of `RayGroupRewarder`."""
        headers = {"content-type": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        response = await self._local.request(method, path, content=body, headers=headers)
        return response.status_code, dict(response.headers), response.content

    async def groups(self, body: bytes, api_key: str | None = None) -> tuple[int, dict[str, str], bytes]:
        """`POST /v1/groups` with a JSON `GroupsRequest` body."""
        return await self.call("POST", "/v1/groups", body, api_key)

    async def ready(self) -> dict[str, Any]:
        """This replica's `/readyz` body (workers decide; sandbox and registry are reported),
        with its Serve replica id and process id."""
        _status, _headers, body = await self.call("GET", "/readyz")
        result: dict[str, Any] = json.loads(body)
        result["replica"] = serve.get_replica_context().replica_id.unique_id
        result["pid"] = os.getpid()
        return result

    async def check_health(self) -> None:
        """Serve's per-replica health check: unhealthy only when the worker pool has been down
        for `UNHEALTHY_AFTER_S` (Serve then replaces the replica). A node without Docker is not
        unhealthy: its `code` verdicts are `status: "error"` (see docs/ray.md)."""
        status, _headers, _body = await self.call("GET", "/readyz")
        if status == 200:
            self._down_since = None
            return
        now = time.monotonic()
        self._down_since = self._down_since or now
        if now - self._down_since > UNHEALTHY_AFTER_S:
            raise RuntimeError(f"worker pool down for {now - self._down_since:.0f}s")

    async def __del__(self) -> None:
        await self._local.aclose()


def deployment_options(ray_settings: RaySettings) -> dict[str, Any]:
    """`Deployment.options(...)` for the settings: fixed replicas or autoscaling, CPUs, placement."""
    actor: dict[str, Any] = {"num_cpus": ray_settings.num_cpus}
    if ray_settings.node_resource:
        actor["resources"] = {ray_settings.node_resource: 0.001}
    options: dict[str, Any] = {
        "ray_actor_options": actor,
        "max_ongoing_requests": ray_settings.max_ongoing_requests,
        # The worker pool warms up before the replica takes traffic.
        "health_check_period_s": 5.0,
        "graceful_shutdown_timeout_s": 30.0,
    }
    if ray_settings.max_replicas is not None:
        options["autoscaling_config"] = {
            "min_replicas": ray_settings.min_replicas,
            "max_replicas": ray_settings.max_replicas,
            "target_ongoing_requests": ray_settings.target_ongoing_requests,
        }
    else:
        options["num_replicas"] = ray_settings.replicas
    return options


def build_app(settings: Settings | None = None) -> serve.Application:
    """The bound Serve application: shaped by `settings.ray`, its replicas configured by the
    rest (`Settings.shared`: what was set here, secrets excepted)."""
    settings = settings or Settings()
    deployment = cast(serve.Deployment, RefereeDeployment).options(**deployment_options(settings.ray))
    return deployment.bind(settings.shared())


def run(settings: Settings | None = None, *, blocking: bool = False) -> DeploymentHandle:
    """Start Serve's proxy on the settings' host and port (in the Ray cluster `ray.init` joined
    or started) and deploy the application; returns its handle."""
    settings = settings or Settings()
    ray_settings = settings.ray
    port = ray_settings.http_port if ray_settings.http_port is not None else settings.service.port
    serve.start(http_options={"host": ray_settings.http_host or settings.service.host, "port": port})
    handle: DeploymentHandle = serve.run(
        build_app(settings),
        name=ray_settings.app_name,
        route_prefix=ray_settings.route_prefix,
        blocking=blocking,
    )
    return handle


class RayConnection:
    """Ray for this process: the cluster `ray_settings.address` (or `RAY_ADDRESS`, or one
    running on this machine) names, else a single-node cluster started here and owned by it.

    A cluster started here listens on `node_ip_address` and `dashboard_host` (loopback by
    default). `close()` shuts Serve and Ray down, waiting at most `shutdown_timeout_s`, and
    then reaps every process that cluster started (GCS, raylet, agents, workers, the replicas'
    worker pools): each gets `teardown_grace_s` to exit, then SIGKILL, so that no agent outlives
    the run. Should this process die without closing (SIGKILL, a crash), a watchdog process
    (`referee.deploy.cluster_reaper`) reaps them. Processes of a cluster this process only
    joined are never touched."""

    def __init__(
        self,
        ray_settings: RaySettings,
        *,
        shutdown_timeout_s: float = SHUTDOWN_TIMEOUT_S,
        **init_options: Any,
    ) -> None:
        self.ray_settings = ray_settings
        self.shutdown_timeout_s = shutdown_timeout_s
        self.init_options = init_options
        self.started_cluster = False
        self.session_dir: str | None = None
        self.watchdog: Watchdog | None = None

    def __enter__(self) -> RayConnection:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        from ray._common.network_utils import is_localhost
        from ray._private import ray_constants, services

        address = self.ray_settings.address
        # None and "auto": RAY_ADDRESS, else a cluster running on this machine, as `ray.init`.
        joins = address is not None and address.startswith("ray://")
        if joins or services.canonicalize_bootstrap_address(address) is not None:  # type: ignore[arg-type]
            ray.init(address=address, **self.init_options)
            return
        options = {"dashboard_host": self.ray_settings.dashboard_host, **self.init_options}
        node_ip = self.ray_settings.node_ip_address
        # Ray replaces a loopback node address by the host's routable one, so that other nodes
        # can join, unless it believes it runs on a single-machine platform
        # (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`, read once at import). A cluster started here
        # on loopback is single-machine by construction: say so while it starts.
        multi_node = ray_constants.ENABLE_RAY_CLUSTER
        ray_constants.ENABLE_RAY_CLUSTER = not is_localhost(node_ip)
        try:
            ray.init(address="local", _node_ip_address=node_ip, **options)
        finally:
            ray_constants.ENABLE_RAY_CLUSTER = multi_node
        self.started_cluster = True
        node: Any = ray._private.worker._global_node  # typed None until ray.init sets it
        self.session_dir = node.get_session_dir_path()
        try:
            self.watchdog = start_watchdog(self.session_dir, self.ray_settings.teardown_grace_s)
        except OSError as error:  # the cluster still serves; only a killed driver would leak it
            logger.warning("no watchdog for the Ray cluster started here: %s", error)

    def processes(self) -> list[psutil.Process]:
        """The processes of the cluster started here and all their descendants (none for a
        cluster joined)."""
        node = ray._private.worker._global_node
        if not self.started_cluster or node is None:
            return []
        found: dict[int, psutil.Process] = {}
        for infos in node.all_processes.values():
            for info in infos:
                with contextlib.suppress(psutil.Error):
                    root = psutil.Process(info.process.pid)
                    for process in [root, *root.children(recursive=True)]:
                        found[process.pid] = process
        return list(found.values())

    def close(self) -> None:
        # Found by ancestry before shutting down, by the session directory after (orphans).
        tree = self.processes()
        own_files = driver_files(self.session_dir) if self.session_dir else set()
        # In a thread of its own: a hung raylet (stopped, deadlocked) makes `ray.shutdown()`
        # wait forever; the reaping below ends it, and the shutdown with it.
        shutdown = threading.Thread(target=self._shutdown, name="ray-shutdown", daemon=True)
        shutdown.start()
        shutdown.join(self.shutdown_timeout_s)
        if shutdown.is_alive():
            logger.warning(
                "Ray did not shut down within %.0fs: reaping its processes", self.shutdown_timeout_s
            )
        if self.session_dir is not None:
            exclude = {os.getpid(), self.watchdog.process.pid if self.watchdog else -1}
            tree += session_processes(self.session_dir, own_files, exclude)
        reap(tree, self.ray_settings.teardown_grace_s)
        shutdown.join(5.0)
        if self.watchdog is not None:  # last: had this process died on the way, it would reap
            self.watchdog.stop()
            self.watchdog = None

    def _shutdown(self) -> None:
        if self.started_cluster:  # Serve on a cluster joined belongs to its owner
            with contextlib.suppress(Exception):
                serve.shutdown()
        ray.shutdown()


def serve_forever(settings: Settings | None = None) -> None:
    """`referee serve --ray`: join (or start) the Ray cluster, deploy, serve until interrupted.
    A cluster started here loads the proxy's replica-loss middleware (`referee.deploy.proxy`);
    a cluster started with `ray start` needs it in its nodes' environment (docs/ray.md)."""
    from referee.deploy.proxy import CALLBACK_ENV, CALLBACK_PATH

    settings = settings or Settings()
    ray_settings = settings.ray
    # Ray's own configuration, which the proxies of a cluster `ray.init` starts below read from
    # the environment (tests/test_no_environ.py lists this write).
    os.environ.setdefault(CALLBACK_ENV, CALLBACK_PATH)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (a container stop, systemd) shuts down as Ctrl-C does

    signal.signal(signal.SIGTERM, stop)
    with RayConnection(ray_settings) as connection:
        try:
            run(settings, blocking=True)
        except KeyboardInterrupt:
            pass
        finally:
            # The application goes; a cluster this process started goes with it (`close`).
            if not connection.started_cluster:
                with contextlib.suppress(Exception):
                    serve.delete(ray_settings.app_name)


def get_handle(app_name: str = "referee") -> DeploymentHandle:
    """The deployment's handle from any process of the cluster."""
    return serve.get_deployment_handle(DEPLOYMENT_NAME, app_name=app_name)


def app(args: dict[str, str]) -> serve.Application:
    """The builder `serve run referee.deploy.ray_serve:app [replicas=2 ...]` calls: its
    arguments are fields of the `ray` section, over `REFEREE_RAY_*`; `REFEREE_*` configure the
    service."""
    return build_app(Settings(ray=dict(args)))
