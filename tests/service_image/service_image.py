"""The service image for the tests: built once per test session by scripts/build-service-image.sh
(whichever test asks first), and containers of it on the host's network, removed after. The
PostgreSQL image of compose's `shared` profile likewise (scripts/build-postgres-image.sh).

The image is tagged `referee:test`, not `referee:latest` (what `make image` builds), and
containers are started from its id, so that a later build of either tag (`make image`, another
test run) does not swap the image under a running test."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from referee.service.background import free_port
from tests.timing import within

REPO = Path(__file__).resolve().parents[2]
TAG = "referee:test"
# Compose's default REFEREE_PG_IMAGE, what `make postgres-image` builds: the script rebuilds it
# only when its recipe changes, so the test and a user's build agree on its content.
POSTGRES_TAG = "referee-postgres:15"

_lock = threading.Lock()
_built: str | None = None
_postgres_built: str | None = None


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


def postgres_image() -> str:
    """The PostgreSQL image's tag, built (or found up to date) on the first call of the session."""
    global _postgres_built
    with _lock:
        if _postgres_built is None:
            built = subprocess.run(
                [str(REPO / "scripts" / "build-postgres-image.sh"), POSTGRES_TAG],
                capture_output=True,
                text=True,
                timeout=900,
                cwd=REPO,
            )
            assert built.returncode == 0, f"build-postgres-image.sh failed:\n{built.stderr[-4000:]}"
            assert built.stdout.strip().splitlines()[-1] == POSTGRES_TAG
            _postgres_built = POSTGRES_TAG
        return _postgres_built


def logs(name: str) -> str:
    done = subprocess.run(
        ["docker", "logs", "--tail", "60", name], capture_output=True, text=True, timeout=60
    )
    return f"docker logs {name}:\n{done.stdout}{done.stderr}"


def container_running(name: str) -> bool:
    state = subprocess.run(
        ["docker", "inspect", "--format", "{{.State.Running}}", name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return state.stdout.strip() == "true"


def wait_for_200(url: str, running: Callable[[], bool], logs: Callable[[], str], bound_s: float) -> None:
    """Polls `url` until it answers 200; fails, with `logs()`, once `running()` is false (the
    container exited) or after `bound_s` (scaled by tests/timing.py)."""
    deadline = time.monotonic() + within(bound_s)
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert running(), f"the container exited before {url} answered\n{logs()}"
        assert time.monotonic() < deadline, f"no 200 from {url} within {within(bound_s):g} s\n{logs()}"
        time.sleep(0.25)


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
        wait_for_200(f"{url}/livez", lambda: container_running(name), lambda: logs(name), ready_s)
        yield Container(name, url)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
