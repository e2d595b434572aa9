"""The service image for the tests: built once per test session by scripts/build-service-image.sh
(whichever test asks first), and containers of it on the host's network, removed after.

The image is tagged `referee:test`, not `referee:latest` (what `make image` builds), and
containers are started from its id, so that a later build of either tag (`make image`, another
test run) does not swap the image under a running test."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from referee.service.background import free_port
from tests.timing import within

REPO = Path(__file__).resolve().parents[2]
TAG = "referee:test"

_lock = threading.Lock()
_built: str | None = None


def service_image() -> str:
    """The image id, built on the first call of the session (offline: debootstrap base, local
    wheelhouse with the `postgres` extra)."""
    global _built
    with _lock:
        if _built is None:
            built = subprocess.run(
                [str(REPO / "scripts" / "build-service-image.sh")],
                capture_output=True,
                text=True,
                timeout=900,
                cwd=REPO,
                env={**os.environ, "REFEREE_IMAGE": TAG},
            )
            assert built.returncode == 0, f"build-service-image.sh failed:\n{built.stderr[-4000:]}"
            assert built.stdout.strip().splitlines()[-1] == TAG
            _built = subprocess.run(
                ["docker", "image", "inspect", "--format", "{{.Id}}", TAG],
                check=True,
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout.strip()
        return _built


def logs(name: str) -> str:
    done = subprocess.run(
        ["docker", "logs", "--tail", "60", name], capture_output=True, text=True, timeout=60
    )
    return f"docker logs {name}:\n{done.stdout}{done.stderr}"


def _running(name: str) -> bool:
    state = subprocess.run(
        ["docker", "inspect", "--format", "{{.State.Running}}", name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return state.stdout.strip() == "true"


@dataclass(frozen=True)
class Container:
    name: str
    url: str

    def logs(self) -> str:
        return logs(self.name)


@contextmanager
def service_container(
    image: str, env: Mapping[str, str] | None = None, ready_s: float = 90
) -> Iterator[Container]:
    """A container of `image` with host networking (its port is on this machine's loopback,
    so it reaches servers the tests start there), the sandbox off and one worker unless `env`
    says otherwise; yields it once /livez answers, and removes it after."""
    port = free_port()
    name = f"referee-image-test-{os.getpid()}-{port}"
    settings = {
        "REFEREE_HOST": "127.0.0.1",
        "REFEREE_WORKERS": "1",
        "REFEREE_SANDBOX": "false",
        **(env or {}),
        "REFEREE_PORT": str(port),
    }
    flags = [arg for key, value in settings.items() for arg in ("-e", f"{key}={value}")]
    try:
        subprocess.run(
            ["docker", "run", "-d", "--name", name, "--network", "host", *flags, image],
            check=True,
            capture_output=True,
            timeout=60,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + within(ready_s)
        while True:
            try:
                if httpx.get(f"{url}/livez", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert _running(name), f"the container exited before /livez answered\n{logs(name)}"
            assert time.monotonic() < deadline, f"no /livez within {within(ready_s):g} s\n{logs(name)}"
            time.sleep(0.25)
        yield Container(name, url)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
