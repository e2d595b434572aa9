"""One trainer cannot starve another (issue 14, defect 9).

Per-key concurrency quota: a key with too many requests in flight is answered 429 with
`Retry-After` while another key is still served. Fair turns: each key's checks take turns at
the workers, and admission counts a key's own backlog, so a flood from one key is refused (503)
while another key's request is admitted and answered before the flood drains."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import wait_until

KEY_A, KEY_B, ADMIN = "trainer-a-key", "trainer-b-key", "admin-key"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _serve(factory: pytest.TempPathFactory, **overrides: Any) -> BackgroundServer:
    db = Path(factory.mktemp("keys")) / "r.db"
    return BackgroundServer(make_settings(db_path=db, **overrides))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    quota = {"api_keys": [KEY_A, KEY_B], "admin_keys": [ADMIN], "max_concurrent_requests_per_key": 2}
    with _serve(tmp_path_factory, workers=3, verdict_timeout_s=10.0, **quota) as running:
        yield running


@pytest.fixture(scope="module")
def fair_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    with _serve(tmp_path_factory, workers=2, api_keys=[KEY_A, KEY_B], max_queue_wait_s=1.0) as running:
        yield running


def _pending(service: BackgroundServer) -> int:
    pending: int = httpx.get(f"{service.url}/readyz", timeout=30).json()["checks"]["workers"]["pending"]
    return pending


@pytest.mark.slow
def test_a_key_over_its_quota_gets_429_and_others_are_served(service: BackgroundServer) -> None:
    slow = {"verifier": "test.sleepy", "response": "2", "reference": None}
    answers: list[httpx.Response] = []

    def flood() -> None:
        answers.append(httpx.post(f"{service.url}/v1/score", json=slow, headers=_auth(KEY_A), timeout=60))

    senders = [threading.Thread(target=flood) for _ in range(2)]
    for sender in senders:
        sender.start()
    wait_until(lambda: _pending(service) == 2, 10, what="key A's two requests in flight")

    r = httpx.post(f"{service.url}/v1/score", json=slow, headers=_auth(KEY_A), timeout=60)
    assert r.status_code == 429, r.text
    assert r.json()["error"] == "too_many_requests" and set(r.json()) == {"error", "message", "detail"}
    assert int(r.headers["retry-after"]) >= 1
    # Any route under /v1/ counts, reads included.
    assert httpx.get(f"{service.url}/v1/verifiers", headers=_auth(KEY_A), timeout=60).status_code == 429

    # Another key is served meanwhile, and probes stay open.
    ok = {"verifier": "exact", "response": "4", "reference": "4"}
    r = httpx.post(f"{service.url}/v1/score", json=ok, headers=_auth(KEY_B), timeout=60)
    assert r.status_code == 200 and r.json()["score"] == 1.0
    assert httpx.get(f"{service.url}/readyz", timeout=30).status_code == 200

    for sender in senders:
        sender.join(timeout=60)
    assert [a.status_code for a in answers] == [200, 200]
    # The quota is of requests in flight: once they are answered, key A is served again.
    r = httpx.post(f"{service.url}/v1/score", json=ok, headers=_auth(KEY_A), timeout=60)
    assert r.status_code == 200


def test_an_unknown_key_is_401_not_429(service: BackgroundServer) -> None:
    r = httpx.post(f"{service.url}/v1/score", json={}, headers=_auth("nope"), timeout=60)
    assert r.status_code == 401


CHECKS, CHECK_S = 48, "0.25"  # 12 s of work for the flooding key on 2 workers: 6 s


def _lanes(service: BackgroundServer) -> dict[str, Any]:
    lanes: dict[str, Any] = httpx.get(f"{service.url}/readyz", timeout=30).json()["lanes"]
    return lanes


@pytest.mark.slow
def test_a_flooding_key_does_not_starve_another(fair_service: BackgroundServer) -> None:
    service = fair_service
    # A batch of independent items: each completes on its own, so the lane measures its rate.
    flood = {"items": [{"verifier": "test.sleepy", "response": CHECK_S, "reference": None}] * CHECKS}
    done: dict[str, httpx.Response] = {}

    def send() -> None:
        done["flood"] = httpx.post(f"{service.url}/v1/score", json=flood, headers=_auth(KEY_A), timeout=120)

    sender = threading.Thread(target=send)
    sender.start()
    # Once the lane has measured its rate, the flood's backlog is seconds of queueing.
    wait_until(lambda: _lanes(service)["cpu"]["wait_s"] > 1.0, 20, what="the cpu lane to be backed up")

    # More from the flooder is refused: its own backlog is over the queueing bound.
    one = {"verifier": "test.sleepy", "response": "0", "reference": None}
    r = httpx.post(f"{service.url}/v1/score", json=one, headers=_auth(KEY_A), timeout=60)
    assert r.status_code == 503 and r.json()["error"] == "overloaded" and "retry-after" in r.headers

    # The other key is admitted, and its check takes its turn: answered while the flood runs.
    r = httpx.post(f"{service.url}/v1/score", json=one, headers=_auth(KEY_B), timeout=60)
    assert r.status_code == 200 and r.json()["score"] == 1.0
    assert "flood" not in done, "the other key's check waited for the whole flood"

    sender.join(timeout=120)
    assert done["flood"].status_code == 200
    assert [v["score"] for v in done["flood"].json()["verdicts"]] == [1.0] * CHECKS
