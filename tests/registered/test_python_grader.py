"""Sandboxed Python graders: partial scores; hostile graders stay contained with the right verdict.

Needs the Docker engine and the sandbox image (built here if missing, as tests/sandbox does).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from referee.sandbox.image import build_image
from referee.sandbox.settings import SandboxSettings
from referee.service.background import BackgroundServer
from tests.registered.conftest import register, registered_settings

pytestmark = pytest.mark.docker

PARTIAL = """
def grade(response, reference):
    want = set(reference["keywords"])
    got = want & set(response.lower().split())
    return {"score": len(got) / len(want), "reason": f"{len(got)}/{len(want)} keywords",
            "details": {"found": sorted(got)}}
"""

# One grader, many behaviours chosen by the response: each probe returns 1.0 only when it was
# blocked, so a leak shows up as a wrong score.
HOSTILE = """
import os, socket

def grade(response, reference):
    if response == "network":
        for host in ("1.1.1.1", "127.0.0.1", "172.17.0.1"):
            try:
                socket.create_connection((host, 80), timeout=1).close()
                return 0.0
            except OSError:
                pass
        try:
            socket.getaddrinfo("example.com", 80)
            return 0.0
        except OSError:
            return 1.0
    if response == "environment":
        leaked = [k for k in os.environ if k.startswith("REFEREE") or k == "GRADER_TEST_SECRET"]
        return {"score": 0.0 if leaked else 1.0, "reason": ",".join(sorted(os.environ))}
    if response == "loop":
        while True:
            pass
    if response == "memory":
        block = b"x" * (4 << 30)  # 4 GB, written (not just reserved)
        return len(block)
    if response == "raise":
        raise ValueError("grader bug")
    if response == "junk":
        return "not a score"
    return 1.0
"""


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REFEREE_SANDBOX_INSTANCE", "pytest-registered")
        env.setenv("REFEREE_SANDBOX_POOL_SIZE", "2")
        env.setenv("GRADER_TEST_SECRET", "hunter2")
        build_image(SandboxSettings(), log=lambda _msg: None)
        db = Path(tmp_path_factory.mktemp("py")) / "r.db"
        with BackgroundServer(registered_settings(db, sandbox=True)) as running:
            yield running


@pytest.fixture()
def client(sandboxed: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sandboxed.url, timeout=120) as c:
        yield c


def test_partial_score_grader(client: httpx.Client) -> None:
    body = {
        "name": "py.keywords",
        "kind": "python",
        "spec": {"source": PARTIAL},
        "reference_schema": {"type": "object", "required": ["keywords"]},
        "examples": [
            {"response": "Red and blue", "reference": {"keywords": ["red", "green"]}, "expected_score": 0.5}
        ],
    }
    r = register(client, body)
    assert r.status_code == 201, r.text
    group = client.post(
        "/v1/groups",
        json={
            "groups": [
                {
                    "verifier": "py.keywords",
                    "reference": {"keywords": ["a", "b", "c", "d"]},
                    "responses": ["a b c d", "a", "a b", "x", "b c d"] * 4,
                }
            ]
        },
    ).json()["groups"][0]
    assert group["rewards"] == [1.0, 0.25, 0.5, 0.0, 0.75] * 4
    assert group["verdicts"][1]["reason"] == "1/4 keywords" and group["verdicts"][1]["details"] == {
        "found": ["a"]
    }


def test_hostile_grader_is_contained(client: httpx.Client) -> None:
    body = {
        "name": "py.hostile",
        "kind": "python",
        "spec": {"source": HOSTILE, "time_limit_s": 1.0, "memory_mb": 128},
        "examples": [{"response": "fine", "expected_score": 1.0}],
    }
    assert register(client, body).status_code == 201
    items = [
        {"verifier": "py.hostile", "response": r}
        for r in ("network", "environment", "loop", "memory", "raise", "junk")
    ]
    verdicts = client.post("/v1/score", json={"items": items}).json()["verdicts"]
    network, environment, loop, memory, raised, junk = verdicts
    assert (network["status"], network["score"]) == ("ok", 1.0)
    assert (environment["status"], environment["score"]) == ("ok", 1.0), environment["reason"]
    assert (loop["status"], loop["score"]) == ("ok", 0.0) and "time limit" in loop["reason"]
    assert (memory["status"], memory["score"]) == ("ok", 0.0) and "memory" in memory["reason"]
    assert (
        raised["status"] == "error"
        and raised["score"] is None
        and "ValueError: grader bug" in raised["reason"]
    )
    assert junk["status"] == "error" and junk["score"] is None
    assert client.get("/livez").status_code == 200


def test_broken_grader_is_refused_at_activation(client: httpx.Client) -> None:
    for source in ("def grade(r, ref) oops", "def grade(r, ref):\n    return 2.0\n"):
        body = {
            "name": "py.broken",
            "kind": "python",
            "spec": {"source": source},
            "examples": [{"response": "x", "expected_score": 1.0}],
        }
        r = register(client, body)
        assert r.status_code == 422
        assert r.json()["detail"]["failing"][0]["status"] == "error"
    r = register(client, {**body, "spec": {"source": "print(1)"}})
    assert r.status_code == 422 and r.json()["error"] == "invalid_spec"
