"""Per-key concurrency quota (issue 14, defect 9): one trainer's flood is answered 429 with
`Retry-After` while another key is still served."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import wait_until

KEY_A, KEY_B, ADMIN = "trainer-a-key", "trainer-b-key", "admin-key"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    settings = make_settings(
        workers=3,
        verdict_timeout_s=10.0,
        api_keys=[KEY_A, KEY_B],
        admin_keys=[ADMIN],
        max_concurrent_requests_per_key=2,
        db_path=Path(tmp_path_factory.mktemp("quota")) / "r.db",
    )
    with BackgroundServer(settings) as running:
        yield running


def _pending(service: BackgroundServer) -> int:
    pending: int = httpx.get(f"{service.url}/readyz", timeout=30).json()["checks"]["workers"]["pending"]
    return pending


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
