"""Audits cannot starve scoring (issue 27, defect 5), with the real Docker sandbox.

Two audits of 5,000 `while True` programs from one key held every other key's code scoring at
503 for hours: their programs filled the sandbox lane's estimate and queued in front of
everyone's. Here, at small scale, a key runs two audits of looping programs while another key
scores honest code groups: every honest verdict is right and none is refused, the audits never
hold more than their share of the run slots, and cancelling them drops their queued work."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.sandbox.helpers import run_instance
from tests.timing import wait_until, within

pytestmark = pytest.mark.docker

HOG, TRAINER = "audit-hog-key", "trainer-key"
SLOTS = 4  # audits may hold ⌊4 / 4⌋ = 1
A_PLUS_B = "t = int(input())\nfor _ in range(t):\n    a, b = map(int, input().split())\n    print(a + b)\n"
WRONG = A_PLUS_B.replace("a + b", "a - b")
REFERENCE = {
    "language": "python",
    "test_format": "stdio",
    "tests": [
        {"input": "2\n1 2\n10 20\n", "output": "3\n30\n"},
        {"input": "1\n-5 5\n", "output": "0\n"},
    ],
}


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def service() -> Iterator[BackgroundServer]:
    settings = make_settings(
        sandbox=True,
        sandbox_instance=run_instance("pytest-audit-share"),
        sandbox_max_parallel=SLOTS,
        sandbox_pool_size=SLOTS,
        sandbox_time_limit_s=1.0,
        api_keys=[HOG, TRAINER],
        audit_max_running_per_key=2,
        max_queue_wait_s=5.0,
    )
    with BackgroundServer(settings) as running:
        yield running


def _looping_audit(n: int) -> dict[str, Any]:
    reference = {**REFERENCE, "tests": REFERENCE["tests"][:1]}
    rows = [
        {"response": "while True:\n    pass\n", "reference": reference, "expected": 0.0} for _ in range(n)
    ]
    return {"verifier": "code", "rows": rows, "probes": False}


def test_audits_of_looping_programs_never_starve_another_keys_scoring(service: BackgroundServer) -> None:
    with httpx.Client(base_url=service.url, timeout=120) as http:
        assert http.get("/readyz").json()["checks"]["sandbox"]["ok"]
        audits = []
        for _ in range(2):
            started = http.post("/v1/audits", json=_looping_audit(60), headers=_as(HOG))
            assert started.status_code == 202, started.text
            audits.append(started.json()["id"])

        peak_background = 0.0
        sampling = threading.Event()

        def sample() -> None:
            nonlocal peak_background
            while not sampling.is_set():
                lanes = httpx.get(f"{service.url}/readyz", timeout=30).json()["lanes"]
                peak_background = max(peak_background, lanes["sandbox"]["background"])
                sampling.wait(0.1)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            wait_until(  # (as background work, or as any caller's before issue 27)
                lambda: (
                    sum(
                        http.get("/readyz").json()["lanes"]["sandbox"][k] for k in ("in_flight", "background")
                    )
                    > 0
                ),
                within(60),
                what="the audits' looping programs to run",
            )
            group = {"verifier": "code", "reference": REFERENCE, "responses": [A_PLUS_B] * 3 + [WRONG]}
            statuses, rewards = [], []
            for _ in range(6):
                r = http.post("/v1/groups", json={"groups": [group, group]}, headers=_as(TRAINER))
                statuses.append(r.status_code)
                if r.status_code == 200:
                    rewards += [g["rewards"] for g in r.json()["groups"]]
            running = [http.get(f"/v1/audits/{a}", headers=_as(HOG)).json() for a in audits]
        finally:
            sampling.set()
            sampler.join(timeout=30)
        assert statuses == [200] * 6, statuses
        assert rewards == [[1.0, 1.0, 1.0, 0.0]] * 12
        assert all(job["status"] == "running" for job in running), "the audits outlived the scoring"
        assert 0 < peak_background <= SLOTS // 4

        # Cancelling drops their queued programs: the lane empties, the audits say so.
        for audit_id in audits:
            cancelled = http.delete(f"/v1/audits/{audit_id}", headers=_as(HOG))
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        wait_until(
            lambda: http.get("/readyz").json()["lanes"]["sandbox"]["background"] == 0,
            within(30),
            what="the cancelled audits' programs to leave the sandbox lane",
        )
        listed = http.get("/v1/audits", headers=_as(HOG)).json()["audits"]
        assert {a["id"]: a["status"] for a in listed if a["id"] in audits} == dict.fromkeys(
            audits, "cancelled"
        )
        assert http.get("/v1/audits", headers=_as(TRAINER)).json()["audits"] == []
