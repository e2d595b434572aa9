"""Replicas of the service image on one PostgreSQL registry: the compose file's `shared`
profile as Debian's docker-compose (v1) reads it (test_compose_shared.py runs it), and two
containers of the image (built once per session, tests/service_image/service_image.py) on a
real server (tests/support/postgres_server.py): a type registered through one is scored
through the other within REFEREE_DB_REFRESH_S, and concurrent registrations of one name
through both get consecutive versions."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

# The containers bring their own psycopg; this side talks to the server to set it up.
pytest.importorskip("psycopg", reason="needs the `postgres` extra: pip install -e '.[postgres]'")

from tests.registered.test_postgres_store import _r1_math
from tests.service_image.service_image import REPO, Container, service_container, service_image
from tests.support.postgres_server import postgres_server
from tests.timing import within

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REFRESH_S = 0.5


def compose_config(*args: str) -> dict[str, Any]:
    """`docker-compose config` of the repository's file: what compose itself makes of it, with
    the variables' defaults (none of the REFEREE_* of this environment)."""
    binary = shutil.which("docker-compose")
    assert binary, "docker-compose not found: apt-get install docker-compose (Debian's, v1.29)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    done = subprocess.run(
        [binary, "-f", "docker-compose.yml", *args, "config"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)  # type: ignore[no-any-return]


def test_compose_file_parses_with_and_without_the_shared_profile() -> None:
    plain, shared = compose_config(), compose_config("--profile", "shared")
    assert plain == shared  # compose v1 prints every service; profiles only select at `up`
    services = shared["services"]
    assert set(services) == {"referee", "postgres", "referee-replica"}

    # The default service is unchanged: no profile (so `docker-compose up -d` starts it alone),
    # port 8000 on loopback, SQLite in its volume, no database URL.
    referee = services["referee"]
    assert "profiles" not in referee and "REFEREE_DB_URL" not in referee["environment"]
    assert referee["ports"] == ["127.0.0.1:8000:8000/tcp"]
    assert referee["build"]["args"]["EXTRAS"] == "postgres"

    postgres = services["postgres"]
    # The local image (`make postgres-image`, Debian's PostgreSQL): nothing pulled by default.
    assert postgres["profiles"] == ["shared"] and postgres["image"] == "referee-postgres:15"
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    # A slow first start (initdb, a busy host) is not counted as failures.
    assert postgres["healthcheck"]["start_period"] == "1m"
    assert any(v.endswith(":/var/lib/postgresql/data:rw") for v in postgres["volumes"])
    assert "ports" not in postgres  # reachable on the compose network only

    replica = services["referee-replica"]
    assert replica["profiles"] == ["shared"]
    assert replica["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    db = urlsplit(replica["environment"]["REFEREE_DB_URL"])
    assert db.scheme == "postgresql" and db.hostname == "postgres" and db.path == "/referee"
    assert db.username == postgres["environment"]["POSTGRES_USER"]
    assert db.password == postgres["environment"]["POSTGRES_PASSWORD"]
    assert replica["environment"]["REFEREE_DB_REFRESH_S"] == "1"
    # Scalable: no container name, and a host port range on loopback instead of one port.
    assert "container_name" not in replica
    [port] = replica["ports"]
    host_ip, host_ports, container_port = port.split(":")
    first, last = (int(p) for p in host_ports.split("-"))
    assert host_ip == "127.0.0.1" and last > first and container_port == "8000/tcp"
    assert "/var/run/docker.sock:/var/run/docker.sock:rw" in replica["volumes"]
    assert replica["image"] == referee["image"] and replica["build"] == referee["build"]
    # Docker's health check of both: GET /readyz, with a start period (a first start that took
    # 45 s was marked unhealthy by the image's check without one).
    for service in (referee, replica):
        check = service["healthcheck"]
        assert "/readyz" in " ".join(check["test"]) and check["start_period"] == "2m", check


@pytest.fixture(scope="session")
def image() -> str:
    return service_image()


@pytest.fixture(scope="module")
def replicas(image: str) -> Iterator[tuple[Container, Container]]:
    with postgres_server() as url:
        env = {"REFEREE_DB_URL": url, "REFEREE_DB_REFRESH_S": str(REFRESH_S)}
        with service_container(image, env) as a, service_container(image, env) as b:
            yield a, b


def _score(container: Container, verifier: str) -> httpx.Response:
    return httpx.post(
        f"{container.url}/v1/score",
        json={"verifier": verifier, "response": "\\boxed{2}", "reference": {"answer": "2"}},
        timeout=60,
    )


def _wait_for_version(container: Container, version: int, since: float) -> dict[str, Any]:
    """Scores `r1.math` through `container` until its latest version is `version`; fails
    after the refresh bound (plus slack for a request through a container) from `since`."""
    deadline = since + within(REFRESH_S + 2.0)
    while True:
        scored = _score(container, "r1.math")
        if scored.status_code == 200 and scored.json()["verifier"] == f"r1.math@{version}":
            return scored.json()  # type: ignore[no-any-return]
        assert scored.status_code in (200, 404), f"{scored.text}\n{container.logs()}"
        assert time.monotonic() < deadline, f"r1.math@{version} not served: {scored.text}"
        time.sleep(0.05)


def test_both_containers_use_the_postgres_registry(replicas: tuple[Container, Container]) -> None:
    for container in replicas:
        ready = httpx.get(f"{container.url}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["registry"] == {"ok": True, "reason": "ok"}, container.logs()


def test_registered_through_one_container_scored_through_the_other(
    replicas: tuple[Container, Container],
) -> None:
    a, b = replicas
    created = httpx.post(f"{a.url}/v1/verifiers", json=_r1_math(0.9), timeout=60)
    registered = time.monotonic()
    assert created.status_code in (200, 201), f"{created.text}\n{a.logs()}"
    assert created.json()["verifier"] == "r1.math@1"
    verdict = _wait_for_version(b, 1, registered)
    assert verdict["score"] == 0.9 and verdict["status"] == "ok"

    # Concurrent registrations of the same name, one per container at a time: consecutive
    # versions, none given twice; then each container serves the last one within the bound.
    def register(container: Container, weight: float) -> int:
        response = httpx.post(f"{container.url}/v1/verifiers", json=_r1_math(weight), timeout=60)
        assert response.status_code in (200, 201), f"{response.text}\n{container.logs()}"
        return int(response.json()["verifier"].rpartition("@")[2])

    with ThreadPoolExecutor(6) as pool:
        weights = [0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
        versions = list(pool.map(register, [a, b] * 3, weights))
    done = time.monotonic()
    assert sorted(versions) == [2, 3, 4, 5, 6, 7]
    last_weight = weights[versions.index(7)]
    for container in (a, b):
        assert _wait_for_version(container, 7, done)["score"] == last_weight
    assert _score(b, "r1.math@1").json()["score"] == 0.9  # older versions stay addressable
