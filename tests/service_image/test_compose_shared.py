"""docker-compose.yml's `shared` profile run for real, offline, as its header tells a user to:
`docker-compose --profile shared up -d --scale referee-replica=2 referee-replica` on the local
images (the service image, built once per session, and referee-postgres:15 from Debian's
package, tests/service_image/service_image.py). Both replicas become ready and healthy, a type
registered through replica 1 is scored through replica 2, and each replica judges real programs
in sibling sandbox containers it starts through the mounted Docker socket.

One project per test module (a unique name, so nothing collides with a user's stack), taken
down with `down -v --remove-orphans` whatever happened, and the sandbox containers the replicas
started must be gone after it."""

from __future__ import annotations

import functools
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from referee.sandbox.hardening import LABEL
from referee.sandbox.image import build_image
from referee.sandbox.settings import SandboxSettings
from tests.registered.test_postgres_store import _r1_math
from tests.service_image.service_image import (
    REPO,
    TAG,
    container_running,
    postgres_image,
    service_image,
    wait_for_200,
)
from tests.timing import within

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPLICAS = 2
REFRESH_S = 1.0  # the compose file's REFEREE_DB_REFRESH_S
READY_S = 120  # a replica's start: image, workers, registry, sandbox pool, on 2 busy cores
# Where a replica (root in its container, HOME=/root) claims its sandbox instance id.
INSTANCE_FILE = "/root/.local/share/referee/sandbox/instance-0.id"
# The only change to the compose file: 2 warm sandbox containers per replica instead of 16,
# for a shared 2-core machine. Compose merges it into the replica's environment.
OVERRIDE = {
    "version": "3.8",
    "services": {"referee-replica": {"environment": {"REFEREE_SANDBOX_POOL_SIZE": "2"}}},
}

SUM_REFERENCE = {
    "language": "python",
    "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}],
}
CORRECT = "a, b = map(int, input().split())\nprint(a + b)\n"
WRONG = "a, b = map(int, input().split())\nprint(a * b)\n"


@dataclass
class Stack:
    """One compose project of the repository's file (plus OVERRIDE)."""

    project: str
    override: Path
    env: dict[str, str]
    urls: list[str] = field(default_factory=list)
    sandbox_instances: list[str] = field(default_factory=list)

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker-compose", "-p", self.project, "-f", "docker-compose.yml", "-f", str(self.override),
             "--profile", "shared", *args],
            capture_output=True, text=True, timeout=timeout, cwd=REPO, env=self.env,
        )  # fmt: skip

    def logs(self) -> str:
        done = self.compose("logs", "--no-color", "--tail", "40", timeout=60)
        return f"docker-compose logs:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"

    def replica_containers(self) -> list[str]:
        """The replicas' container ids, in compose's index order (1, 2, ...)."""
        listed = subprocess.run(
            ["docker", "ps", "-a",
             "--filter", f"label=com.docker.compose.project={self.project}",
             "--filter", "label=com.docker.compose.service=referee-replica",
             "--format", '{{.Label "com.docker.compose.container-number"}} {{.ID}}'],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout.split("\n")  # fmt: skip
        return [cid for _, cid in sorted(line.split() for line in listed if line.strip())]


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60).stdout.strip()


def _sandbox_containers(instances: list[str]) -> list[str]:
    return [
        cid
        for instance in instances
        for cid in _docker("ps", "-aq", "--filter", f"label={LABEL}={instance}").split()
    ]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    service_image()  # referee:test
    postgres_image()  # referee-postgres:15, compose's default: REFEREE_PG_IMAGE stays unset
    # The replicas start sibling containers of the sandbox image on the host's engine, by the
    # reference their default settings compute (the recipe hash of the same sources).
    build_image(SandboxSettings(), log=lambda _msg: None)

    override = tmp_path_factory.mktemp("compose") / "docker-compose.test.yml"
    override.write_text(yaml.safe_dump(OVERRIDE))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    env |= {"REFEREE_IMAGE": TAG, "REFEREE_PG_PASSWORD": secrets.token_urlsafe(12), "REFEREE_WORKERS": "1"}
    stack = Stack(f"referee-test-{os.getpid()}-{secrets.token_hex(3)}", override, env)
    try:
        # --no-build: the images exist; a build from the file would need a registry.
        up = stack.compose(
            "up", "-d", "--no-build", "--scale", f"referee-replica={REPLICAS}", "referee-replica"
        )
        assert up.returncode == 0, f"{up.stderr[-4000:]}\n{stack.logs()}"
        containers = stack.replica_containers()
        assert len(containers) == REPLICAS, containers
        for index, container in enumerate(containers, start=1):
            port = stack.compose(
                "port", f"--index={index}", "referee-replica", "8000", timeout=60
            ).stdout.strip()
            assert port.startswith("127.0.0.1:"), f"replica {index} publishes {port!r}"
            stack.urls.append(f"http://{port}")
            wait_for_200(
                f"{stack.urls[-1]}/readyz",
                functools.partial(container_running, container),
                stack.logs,
                READY_S,
            )
            instance = _docker("exec", container, "cat", INSTANCE_FILE)
            assert instance, f"replica {index} claimed no sandbox instance\n{stack.logs()}"
            stack.sandbox_instances.append(instance)
        yield stack
    finally:
        down = stack.compose("down", "-v", "--remove-orphans")
        left = _sandbox_containers(stack.sandbox_instances)
        for cid in left:
            _docker("rm", "-f", cid)
        assert down.returncode == 0, down.stderr[-4000:]
        assert _docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={stack.project}") == ""
        assert _docker("volume", "ls", "-q", "--filter", f"name={stack.project}") == ""
        assert left == [], "the replicas left sandbox containers behind after `down`"


def _json(response: httpx.Response, stack: Stack) -> Any:
    assert response.status_code in (200, 201), f"{response.status_code} {response.text}\n{stack.logs()}"
    return response.json()


def test_the_stack_uses_the_local_postgres_image(stack: Stack) -> None:
    [postgres] = _docker(
        "ps", "--filter", f"label=com.docker.compose.project={stack.project}",
        "--filter", "label=com.docker.compose.service=postgres", "--format", "{{.Image}} {{.Status}}",
    ).splitlines()  # fmt: skip
    assert postgres.startswith("referee-postgres:15 ") and "(healthy)" in postgres, postgres
    # The server runs as the postgres user, not root.
    user = stack.compose("exec", "-T", "postgres", "id", "-un", timeout=60)
    assert user.stdout.strip() == "postgres", user.stderr


def test_both_replicas_are_ready_on_the_registry_and_become_healthy(stack: Stack) -> None:
    assert len(set(stack.urls)) == REPLICAS
    for url in stack.urls:
        ready = _json(httpx.get(f"{url}/readyz", timeout=10), stack)
        assert ready["checks"]["registry"] == {"ok": True, "reason": "ok"}, ready
        assert ready["checks"]["sandbox"]["ok"], ready["checks"]["sandbox"]
    assert len(set(stack.sandbox_instances)) == REPLICAS  # one sandbox owner each, no clash
    # Docker's own health check (the compose file's, GET /readyz): healthy once the first check
    # after the start has passed (interval 10 s).
    deadline = time.monotonic() + within(60)
    for container in stack.replica_containers():
        while (status := _docker("inspect", "--format", "{{.State.Health.Status}}", container)) != "healthy":
            assert status == "starting" and time.monotonic() < deadline, (
                f"{container}: {status}\n{stack.logs()}"
            )
            time.sleep(1)


def test_a_type_registered_through_one_replica_is_scored_through_the_other(stack: Stack) -> None:
    first, second = stack.urls
    created = _json(httpx.post(f"{first}/v1/verifiers", json=_r1_math(0.9), timeout=60), stack)
    registered = time.monotonic()
    assert created["verifier"] == "r1.math@1"
    deadline = registered + within(REFRESH_S + 2.0)
    request = {"verifier": "r1.math", "response": "\\boxed{2}", "reference": {"answer": "2"}}
    while True:
        scored = httpx.post(f"{second}/v1/score", json=request, timeout=60)
        if scored.status_code == 200:
            break
        assert scored.status_code == 404, f"{scored.text}\n{stack.logs()}"
        assert time.monotonic() < deadline, f"r1.math not served by replica 2 within the bound: {scored.text}"
        time.sleep(0.05)
    verdict = scored.json()
    assert verdict["verifier"] == "r1.math@1" and verdict["status"] == "ok" and verdict["score"] == 0.9


@pytest.mark.parametrize("replica", range(REPLICAS))
def test_each_replica_judges_programs_in_sandbox_containers(stack: Stack, replica: int) -> None:
    url = stack.urls[replica]
    verdicts = {
        name: _json(
            httpx.post(
                f"{url}/v1/score",
                json={"verifier": "code", "response": program, "reference": SUM_REFERENCE},
                timeout=120,
            ),
            stack,
        )
        for name, program in (("correct", CORRECT), ("wrong", WRONG))
    }
    assert verdicts["correct"]["status"] == "ok" and verdicts["correct"]["score"] == 1.0, verdicts
    assert verdicts["wrong"]["status"] == "ok" and verdicts["wrong"]["score"] == 0.0, verdicts
    # Judged in this replica's own sandbox containers, siblings on the host's engine.
    assert _sandbox_containers([stack.sandbox_instances[replica]]), "no sandbox container of this replica"


def test_every_replica_shows_every_replicas_verifier_statistics(stack: Stack) -> None:
    """After the code verdicts above (2 on each replica), each replica's verifier statistics sum
    both replicas' (published through PostgreSQL at each flush, every 5 s by default), and the
    page says whose figures they are."""
    deadline = time.monotonic() + within(30)
    for url in stack.urls:
        while True:
            page = _json(httpx.get(f"{url}/v1/stats/verifiers", timeout=30), stack)
            code = {v["verifier"]: v for v in page["verifiers"]}.get("code")
            if (
                code is not None
                and code["verdicts"] == 2 * REPLICAS
                and len(page["scope"]["replicas"]) == REPLICAS
            ):
                break
            assert time.monotonic() < deadline, f"{url}: {page['scope']} {code}\n{stack.logs()}"
            time.sleep(0.5)
        assert page["scope"]["kind"] == "all" and page["scope"]["reason"] is None, page["scope"]
        # The correct program passed on each replica, the wrong one failed; the breakdown
        # names each replica by the sandbox instance it claimed.
        assert code["pass_rate"] == 0.5, code
        assert {r["replica"]: r["verdicts"] for r in code["replicas"]} == dict.fromkeys(
            stack.sandbox_instances, 2
        )
