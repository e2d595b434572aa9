"""The service image builds without a registry and serves /livez from a container."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

from referee.service.background import free_port
from tests.timing import within

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_image_builds_and_livez_answers_from_a_container() -> None:
    image = (
        subprocess.run(
            [str(REPO / "scripts" / "build-service-image.sh")],
            check=True,
            capture_output=True,
            text=True,
            timeout=900,
            cwd=REPO,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = free_port()
    name = f"referee-image-test-{port}"
    # Host networking: the port is on this machine's loopback, like a compose deployment's.
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--rm",
            "--name",
            name,
            "--network",
            "host",
            "-e",
            f"REFEREE_PORT={port}",
            "-e",
            "REFEREE_HOST=127.0.0.1",
            "-e",
            "REFEREE_WORKERS=1",
            "-e",
            "REFEREE_SANDBOX=false",
            image,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        deadline = time.monotonic() + within(90)
        body = None
        while time.monotonic() < deadline:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/livez", timeout=2)
                if response.status_code == 200:
                    body = response.json()
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        assert body == {"status": "alive"}, subprocess.run(
            ["docker", "logs", name], capture_output=True, text=True
        ).stderr
        verdict = httpx.post(
            f"http://127.0.0.1:{port}/v1/score", json={"verifier": "exact", "response": "a", "reference": "a"}
        ).json()
        assert verdict["score"] == 1.0
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
