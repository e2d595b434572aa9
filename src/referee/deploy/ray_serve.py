"""Referee on Ray Serve: the FastAPI app of `referee.service` as the Serve ingress.

Each replica is one Ray actor that builds the app with `create_app(Settings())`, so it owns
its own worker pool (`REFEREE_WORKERS` processes, children of the replica) and, where the node
has Docker and `REFEREE_SANDBOX` is on, its own warm sandbox pool. Serve's proxy routes HTTP to
the replicas; trainers on the same cluster call a replica's `groups` method through a
`DeploymentHandle` (`referee.deploy.RayGroupRewarder`), which runs the same FastAPI route
in-process (no network hop, same validation, admission and verdicts).

Configuration: the service's `REFEREE_*` settings (read in each replica; the ones set where the
application is built are forwarded to the replicas) and the deployment's `REFEREE_RAY_*`
settings (`RayServeSettings`). Start it with `referee serve --ray` or
`serve run referee.deploy.ray_serve:app`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from typing import Any, cast

import httpx
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from ray import serve
from ray.serve.handle import DeploymentHandle

from referee.settings import Settings

DEPLOYMENT_NAME = "Referee"
# A replica whose worker pool stays down this long is reported unhealthy to Serve, which then
# replaces it; shorter outages are the pool rebuilding itself (`WorkerPool.watch`).
UNHEALTHY_AFTER_S = 30.0


class RayServeSettings(BaseSettings):
    """The deployment's shape (`REFEREE_RAY_*`); the service's own settings stay `REFEREE_*`."""

    model_config = SettingsConfigDict(env_prefix="REFEREE_RAY_", extra="ignore")

    app_name: str = Field(default="referee", description="Serve application name.")
    route_prefix: str = Field(default="/", description="HTTP route prefix of the application.")
    replicas: int = Field(default=1, ge=1, description="Fixed number of replicas (no autoscaling).")
    max_replicas: int | None = Field(
        default=None, ge=1, description="Set to autoscale between min_replicas and this on ongoing requests."
    )
    min_replicas: int = Field(default=1, ge=0)
    target_ongoing_requests: float = Field(
        default=4.0, gt=0, description="Autoscaling target of in-flight requests per replica."
    )
    max_ongoing_requests: int = Field(
        default=64, ge=1, description="Requests one replica accepts at once (its admission queues them)."
    )
    num_cpus: float = Field(
        default=1.0,
        ge=0,
        description="CPUs Ray reserves per replica; give it REFEREE_WORKERS so replicas do not share cores.",
    )
    node_resource: str | None = Field(
        default=None,
        description="A custom resource (e.g. `docker`) that places replicas only on nodes started with it.",
    )
    address: str | None = Field(
        default=None,
        description="Ray cluster to join (`auto`, `ray://…`); none: RAY_ADDRESS, else a local cluster.",
    )
    http_host: str | None = Field(default=None, description="Proxy bind address (default REFEREE_HOST).")
    http_port: int | None = Field(default=None, description="Proxy port (default REFEREE_PORT).")


# Never forwarded: the application's arguments are stored by Serve's controller (in the GCS) and
# shown by `serve status`; keys reach the replicas through their nodes' environment instead.
# REFEREE_DB_URL (postgresql://user:password@host/db) usually carries a password.
SECRET_MARKERS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "DB_URL")


def forwarded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `REFEREE_*` variables of the building process that every replica adopts (a remote
    node's replica would otherwise see only its own node's environment); secrets excepted."""
    env = os.environ if environ is None else environ
    return {
        k: v
        for k, v in env.items()
        if k.startswith("REFEREE_")
        and not k.startswith("REFEREE_RAY_")
        and not any(marker in k for marker in SECRET_MARKERS)
    }


@serve.deployment(name=DEPLOYMENT_NAME)
@serve.ingress()
class RefereeDeployment:
    """One replica: the whole FastAPI app, its worker pool and its sandbox pool."""

    async def __init__(  # type: ignore[misc]  # Serve awaits an async constructor
        self, env: dict[str, str] | None = None, overrides: dict[str, Any] | None = None
    ) -> None:
        from referee.service import create_app

        os.environ.update(env or {})  # this actor's process only; its workers inherit it
        self.settings = Settings(**(overrides or {}))
        self._app = create_app(self.settings)
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


def deployment_options(ray_settings: RayServeSettings) -> dict[str, Any]:
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


def build_app(
    ray_settings: RayServeSettings | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> serve.Application:
    """The bound Serve application. `overrides` are `Settings` fields set in every replica
    (after the forwarded environment, `env`, which defaults to this process's `REFEREE_*`)."""
    ray_settings = ray_settings or RayServeSettings()
    deployment = cast(serve.Deployment, RefereeDeployment).options(**deployment_options(ray_settings))
    return deployment.bind(dict(forwarded_env() if env is None else env), dict(overrides or {}))


def run(
    ray_settings: RayServeSettings | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    blocking: bool = False,
) -> DeploymentHandle:
    """Start Serve's proxy on the settings' host and port (in the Ray cluster `ray.init` joined
    or started) and deploy the application; returns its handle."""
    ray_settings = ray_settings or RayServeSettings()
    settings = Settings(**dict(overrides or {}))
    serve.start(
        http_options={
            "host": ray_settings.http_host or settings.host,
            "port": ray_settings.http_port if ray_settings.http_port is not None else settings.port,
        }
    )
    handle: DeploymentHandle = serve.run(
        build_app(ray_settings, overrides=overrides),
        name=ray_settings.app_name,
        route_prefix=ray_settings.route_prefix,
        blocking=blocking,
    )
    return handle


def serve_forever(
    ray_settings: RayServeSettings | None = None, *, overrides: Mapping[str, Any] | None = None
) -> None:
    """`referee serve --ray`: join (or start) the Ray cluster, deploy, serve until interrupted.
    A cluster started here loads the proxy's replica-loss middleware (`referee.deploy.proxy`);
    a cluster started with `ray start` needs it in its nodes' environment (docs/ray.md)."""
    import ray

    from referee.deploy.proxy import CALLBACK_ENV, CALLBACK_PATH

    ray_settings = ray_settings or RayServeSettings()
    os.environ.setdefault(CALLBACK_ENV, CALLBACK_PATH)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (a container stop, systemd) shuts down as Ctrl-C does

    signal.signal(signal.SIGTERM, stop)
    ray.init(address=ray_settings.address)
    try:
        run(ray_settings, overrides=overrides, blocking=True)
    except KeyboardInterrupt:
        pass
    finally:
        # The application goes; a cluster this process started goes with it.
        with contextlib.suppress(Exception):
            serve.delete(ray_settings.app_name)
        ray.shutdown()


def get_handle(app_name: str = "referee") -> DeploymentHandle:
    """The deployment's handle from any process of the cluster."""
    return serve.get_deployment_handle(DEPLOYMENT_NAME, app_name=app_name)


def app(args: dict[str, str]) -> serve.Application:
    """The builder `serve run referee.deploy.ray_serve:app [replicas=2 ...]` calls: its
    arguments are `RayServeSettings` fields, over `REFEREE_RAY_*`; `REFEREE_*` configure the service."""
    fields: dict[str, Any] = dict(args)
    return build_app(RayServeSettings(**fields))
