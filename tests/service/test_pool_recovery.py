"""The verifier worker pool survives the death of its forkserver (issue 14, defect 6).

Workers are forked from a forkserver; when it is killed with SIGKILL, pebble can no longer
start workers and the pool goes into its error state. The service must rebuild the pool by
itself, answer the verdicts caught in it as masked errors (`status: error`, score null),
never as HTTP 500, and be ready again without a restart.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import wait_until


def _forkservers() -> list[int]:
    """Children of this (test) process that are multiprocessing forkservers."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"forkserver" in cmdline:
            found.append(int(entry.name))
    return found


def _kill_forkserver() -> int:
    (pid,) = _forkservers()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: pid not in _forkservers(), 10, what="the forkserver to die")
    return pid


@pytest.fixture(scope="module")
def service() -> Iterator[BackgroundServer]:
    with BackgroundServer(make_settings(workers=2, verdict_timeout_s=10.0)) as running:
        yield running


def _score(service: BackgroundServer, verifier: str, response: str, reference: Any = None) -> httpx.Response:
    body = {"verifier": verifier, "response": response, "reference": reference}
    return httpx.post(f"{service.url}/v1/score", json=body, timeout=60)


def _ready(service: BackgroundServer) -> dict[str, Any]:
    r = httpx.get(f"{service.url}/readyz", timeout=30)
    body: dict[str, Any] = r.json()
    body["status_code"] = r.status_code
    return body


def test_idle_pool_is_rebuilt_after_its_forkserver_is_killed(service: BackgroundServer) -> None:
    assert _score(service, "exact", "4", "4").json()["score"] == 1.0
    before = _ready(service)["checks"]["workers"]["rebuilds"]
    _kill_forkserver()
    # Without any request, the pool is found broken and rebuilt: /readyz says ready again.
    wait_until(
        lambda: _ready(service)["checks"]["workers"]["rebuilds"] > before,
        10,
        what="the pool to be rebuilt",
    )
    wait_until(lambda: _ready(service)["status_code"] == 200, 10, what="readiness")
    # Verdicts are real again, from fresh workers (a new forkserver started).
    r = _score(service, "math", "so the answer is \\boxed{4}", "4")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["score"] == 1.0
    assert len(_forkservers()) == 1


def test_requests_right_after_the_kill_are_answered_never_500(service: BackgroundServer) -> None:
    _kill_forkserver()
    # Immediately, before the watcher runs: each request finds the pool broken, rebuilds it
    # (or gets a masked verdict), and is answered.
    for _ in range(20):
        r = _score(service, "exact", "4", "4")
        assert r.status_code == 200, r.text
        verdict = r.json()
        assert (verdict["status"], verdict["score"]) in {("ok", 1.0), ("error", None)}
    r = _score(service, "exact", "4", "4")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["score"] == 1.0


def test_in_flight_verdicts_come_back_masked(service: BackgroundServer) -> None:
    # As many checks as workers, each running for 3 s: the kill lands while they run.
    group = {"groups": [{"verifier": "test.sleepy", "responses": ["3"] * 2}]}
    answer: dict[str, httpx.Response] = {}

    def send() -> None:
        answer["r"] = httpx.post(f"{service.url}/v1/groups", json=group, timeout=120)

    sender = threading.Thread(target=send)
    sender.start()
    wait_until(lambda: _ready(service)["checks"]["workers"]["pending"] == 2, 10, what="verdicts in flight")
    _kill_forkserver()
    sender.join(timeout=120)
    r = answer["r"]
    assert r.status_code == 200, r.text
    verdicts = r.json()["groups"][0]["verdicts"]
    # A check whose worker died with the forkserver has no verdict and is masked; a check that
    # still completed is real. Never a fake 0.
    outcomes = [(v["status"], v["score"]) for v in verdicts]
    assert set(outcomes) <= {("error", None), ("ok", 1.0)}, verdicts
    assert ("error", None) in outcomes
    assert [reward is None for reward in r.json()["groups"][0]["rewards"]] == [
        o == ("error", None) for o in outcomes
    ]
    wait_until(lambda: _ready(service)["status_code"] == 200, 10, what="readiness")
    assert _score(service, "exact", "4", "4").json()["score"] == 1.0
