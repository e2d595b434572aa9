"""The service image builds without a registry and serves /livez from a container.

The image is built once per test session (tests/service_image/service_image.py), shared with the
tests of replicas on a PostgreSQL registry (tests/service_image/test_service_image_postgres.py)."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from tests.service_image.service_image import service_container, service_image

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="session")
def image() -> str:
    return service_image()


def test_image_builds_and_livez_answers_from_a_container(image: str) -> None:
    # Host networking: the port is on this machine's loopback, like a compose deployment's.
    with service_container(image) as container:
        assert httpx.get(f"{container.url}/livez", timeout=10).json() == {"status": "alive"}
        verdict = httpx.post(
            f"{container.url}/v1/score",
            json={"verifier": "exact", "response": "a", "reference": "a"},
            timeout=60,
        ).json()
        assert verdict["score"] == 1.0, container.logs()


def test_the_image_carries_the_postgres_extra(image: str) -> None:
    """psycopg with its bundled libpq (the binary wheel): REFEREE_DB_URL works in the image
    without a system library."""
    found = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, "/opt/referee/bin/python", "-c",
         "import psycopg; print(psycopg.pq.__impl__, psycopg.pq.version())"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    impl, libpq = found.stdout.split()
    assert impl == "binary" and int(libpq) >= 140000
