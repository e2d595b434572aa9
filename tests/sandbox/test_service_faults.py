"""Faults of the sandbox's infrastructure, injected into a running service under load (issue 14).

Docker engine restarted, sandbox containers killed, the service itself killed with SIGKILL
while containers run: every affected verdict is masked (`status: error`, score null), never
a fake score (an honest program that could not be judged is never a 0); the service recovers
without a restart; `/readyz` says the sandbox is degraded, then that it is back; and after a
crash, the next start removes what the dead service left (no orphaned containers) and its
registry is intact.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.sandbox.hardening import LABEL
from referee.service.background import BackgroundServer, free_port
from tests.conftest import REPO, make_settings
from tests.registered.test_api import r1_math
from tests.sandbox.helpers import docker_client
from tests.support.load import ThreadedLoad
from tests.timing import wait_until, within

pytestmark = pytest.mark.docker

HONEST = "a, b = map(int, input().split())\nprint(a + b)\n"
CODE_GROUP = {
    "verifier": "code",
    "reference": {"language": "python", "tests": [{"input": "1 2\n", "output": "3\n"}] * 3},
    "responses": [HONEST] * 4,
}


def _containers(instance: str) -> set[str]:
    client = docker_client()
    try:
        return {c["Id"] for c in client.api.containers(all=True, filters={"label": f"{LABEL}={instance}"})}
    finally:
        client.close()


def _instance(state_dir: Path) -> str:
    return (state_dir / "instance-0.id").read_text().strip()


def _sandbox_ready(http: httpx.Client) -> bool:
    try:
        return bool(http.get("/readyz").json()["checks"]["sandbox"]["ok"])
    except (httpx.TransportError, KeyError, ValueError):
        return False


class Load(ThreadedLoad):
    """Clients posting code groups of honest programs until stopped; every verdict is kept."""

    def __init__(self, url: str, clients: int = 3) -> None:
        super().__init__(url, clients)
        self.verdicts: list[tuple[float, str, Any]] = []  # (time, status, score)
        self.http_errors: list[str] = []

    def step(self, http: httpx.Client, i: int) -> None:
        try:
            response = http.post("/v1/groups", json={"groups": [CODE_GROUP]})
        except httpx.TransportError as exc:
            self.http_errors.append(repr(exc))
            return
        if response.status_code != 200:
            self.http_errors.append(f"{response.status_code} {response.text[:200]}")
            return
        for result in response.json()["groups"][0]["verdicts"]:
            self.verdicts.append((time.monotonic(), result["status"], result["score"]))

    def fake_scores(self) -> list[tuple[float, str, Any]]:
        """Verdicts that are neither right (1.0) nor masked (error, null): must be none."""
        return [v for v in self.verdicts if not (v[1:] == ("ok", 1.0) or v[1:] == ("error", None))]


@pytest.fixture
def sandbox_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BackgroundServer]:
    monkeypatch.setenv("REFEREE_SANDBOX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("REFEREE_SANDBOX_POOL_SIZE", "2")
    monkeypatch.setenv("REFEREE_SANDBOX_RETRY_INTERVAL_S", "0.5")
    with BackgroundServer(make_settings(sandbox=True, verdict_timeout_s=30.0)) as running:
        with httpx.Client(base_url=running.url, timeout=30) as http:
            wait_until(lambda: _sandbox_ready(http), within(60), what="the sandbox to be ready")
        yield running


def _restart_dockerd() -> None:
    assert os.geteuid() == 0, "restarting dockerd needs root (CI runs the suite as root)"
    subprocess.run(["pkill", "-TERM", "-x", "dockerd"], check=True)

    def engine_gone() -> bool:  # the process itself, not just its socket: it cleans up after
        return subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode != 0

    wait_until(engine_gone, within(60), interval_s=0.2, what="dockerd to exit")
    subprocess.run([str(REPO / "scripts" / "ensure-docker.sh")], check=True, capture_output=True)


def test_docker_engine_restart_under_load(sandbox_service: BackgroundServer) -> None:
    """dockerd is stopped and started again while clients score code: the verdicts in between
    are masked, /readyz reports the sandbox down and then back, and scoring resumes by itself."""
    with httpx.Client(base_url=sandbox_service.url, timeout=30) as http, Load(sandbox_service.url) as load:
        wait_until(lambda: len(load.verdicts) >= 8, within(60), what="verdicts before the fault")
        _restart_dockerd()
        restarted = time.monotonic()
        wait_until(lambda: _sandbox_ready(http), within(90), interval_s=0.2, what="the sandbox to come back")
        back = time.monotonic()
        wait_until(
            lambda: sum(1 for t, s, _ in load.verdicts if t > back and s == "ok") >= 8,
            within(90),
            what="verdicts after recovery",
        )
    assert load.fake_scores() == []
    assert any(s == "error" for t, s, _ in load.verdicts if t >= restarted - 1), "the outage was never seen"
    assert load.http_errors == []


def test_sandbox_containers_killed_under_load(sandbox_service: BackgroundServer) -> None:
    """Every container of the service is killed, three times, while clients score code."""
    instance = _instance(Path(os.environ["REFEREE_SANDBOX_STATE_DIR"]))
    client = docker_client()
    try:
        with Load(sandbox_service.url) as load:
            wait_until(lambda: len(load.verdicts) >= 8, within(60), what="verdicts before the fault")
            for _ in range(3):
                for cid in _containers(instance):
                    with contextlib.suppress(Exception):  # already gone: the pool retired it
                        client.api.kill(cid)
                time.sleep(0.5)
            killed = time.monotonic()
            wait_until(
                lambda: sum(1 for t, s, _ in load.verdicts if t > killed and s == "ok") >= 8,
                within(90),
                what="verdicts after the kills",
            )
    finally:
        client.close()
    assert load.fake_scores() == []
    assert load.http_errors == []


def test_kill_9_of_the_service_leaves_no_orphans_and_an_intact_registry(tmp_path: Path) -> None:
    """`referee serve` is killed with SIGKILL while a code request runs and its containers are
    warm: they outlive it; the next start with the same state sweeps them, and the registered
    type (in SQLite) is still there and the database passes its integrity check."""
    port = free_port()
    env = {
        **os.environ,
        "REFEREE_PORT": str(port),
        "REFEREE_WORKERS": "1",
        "REFEREE_DB_PATH": str(tmp_path / "referee.db"),
        "REFEREE_SANDBOX_STATE_DIR": str(tmp_path / "state"),
        "REFEREE_SANDBOX_POOL_SIZE": "2",
    }
    url = f"http://127.0.0.1:{port}"

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-m", "referee", "serve"], env=env)
        with httpx.Client(base_url=url, timeout=10) as http:
            wait_until(lambda: _sandbox_ready(http), within(90), interval_s=0.2, what="referee serve")
        return proc

    first = start()
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            assert http.post("/v1/verifiers", json=r1_math("crash.safe")).status_code == 201
            instance = _instance(tmp_path / "state")
            slow = {**CODE_GROUP, "responses": ["import time\ntime.sleep(1.5)\n" + HONEST]}
            in_flight = threading.Thread(
                target=lambda: _quietly(lambda: http.post("/v1/groups", json={"groups": [slow]})), daemon=True
            )
            in_flight.start()
            time.sleep(0.5)
            orphans = _containers(instance)
            assert orphans, "no container was running"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert _containers(instance) >= orphans  # a dead service sweeps nothing
    finally:
        if first.poll() is None:
            first.kill()
    second = start()
    try:
        assert not (_containers(instance) & orphans), "the dead service's containers were not removed"
        with httpx.Client(base_url=url, timeout=60) as http:
            body = {"verifier": "crash.safe", "response": "<think>x</think><answer>\\boxed{4}</answer>"}
            scored = http.post("/v1/score", json={**body, "reference": {"answer": "4"}})
            assert scored.status_code == 200 and scored.json()["score"] == pytest.approx(1.0)
    finally:
        second.terminate()
        second.wait(timeout=60)
    with sqlite3.connect(tmp_path / "referee.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert _containers(instance) == set(), "a clean stop leaves no container"


def _quietly(call: Any) -> None:
    with contextlib.suppress(httpx.TransportError):  # the service is killed under this request
        call()
