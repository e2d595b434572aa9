"""Limits, stuck and crashing checkers: the service answers within bounds and stays up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import wait_until_async, within

STUCK_S = within(30.0)  # a stuck checker's computation: far beyond any budget of these tests


@pytest.fixture(scope="module")
def small() -> Iterator[BackgroundServer]:
    settings = make_settings(
        max_body_bytes=64 * 1024,
        max_items=8,
        max_group_size=8,
        max_groups=2,
        max_response_chars=1000,
        verdict_timeout_s=within(1.0),
        worker_memory_mb=512,
    )
    with BackgroundServer(settings) as running:
        yield running


@pytest.fixture()
def http(small: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=small.url, timeout=60) as c:
        yield c


def test_body_over_limit_is_413_json(http: httpx.Client) -> None:
    r = http.post("/v1/score", json={"verifier": "exact", "response": "a" * 100_000, "reference": "a"})
    assert r.status_code == 413
    assert r.json()["error"] == "payload_too_large"


def test_chunked_body_over_limit_is_413(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"verifier": "exact", "reference": "a", "response": "'
        for _ in range(100):
            yield b"a" * 1024
        yield b'"}'

    r = http.post("/v1/score", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


@pytest.mark.parametrize(
    ("payload", "loc"),
    [
        ({"items": [{"verifier": "exact", "response": "a", "reference": "a"}] * 9}, ["items"]),
        (
            {"groups": [{"verifier": "exact", "reference": "a", "responses": ["a"] * 9}]},
            ["groups", 0, "responses"],
        ),
        ({"groups": [{"verifier": "exact", "reference": "a", "responses": ["a"]}] * 3}, ["groups"]),
        ({"verifier": "exact", "reference": "a", "response": "a" * 1001}, ["response"]),
        (
            {"groups": [{"verifier": "exact", "reference": "a", "responses": ["a", "b" * 1001]}]},
            ["groups", 0, "responses", 1],
        ),
    ],
)
def test_count_and_length_limits_name_the_field(http: httpx.Client, payload: dict, loc: list) -> None:
    path = "/v1/groups" if "groups" in payload else "/v1/score"
    r = http.post(path, json=payload)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == loc


@pytest.mark.slow
def test_stuck_checker_gets_zero_within_budget_and_the_pool_carries_on(http: httpx.Client) -> None:
    start = time.monotonic()
    body = http.post("/v1/score", json={"verifier": "test.spinner", "response": f"{STUCK_S:g}"}).json()
    elapsed = time.monotonic() - start
    assert body["status"] == "ok" and body["score"] == 0.0
    assert "s of CPU time" in body["reason"] and body["details"]["timed_out"] is True
    assert elapsed < STUCK_S / 3  # answered at the 1 s CPU budget, not when the checker ended
    # The pool still has its workers: a normal verdict follows.
    assert http.post("/v1/score", json={"verifier": "test.sleepy", "response": "0"}).json()["score"] == 1.0


@pytest.mark.slow
def test_spinning_checker_is_killed(http: httpx.Client) -> None:
    body = http.post("/v1/score", json={"verifier": "test.spinner", "response": "60"}).json()
    assert body["score"] == 0.0 and body["details"]["timed_out"] is True


def test_crashed_worker_is_an_error_verdict_and_replaced(http: httpx.Client) -> None:
    body = http.post("/v1/score", json={"verifier": "test.crashing", "response": "crash"}).json()
    assert body["status"] == "error" and body["score"] is None
    assert "worker died" in body["reason"]
    assert http.post("/v1/score", json={"verifier": "test.crashing", "response": "ok"}).json()["score"] == 1.0


def test_memory_hog_gets_zero_not_a_dead_service(http: httpx.Client) -> None:
    body = http.post("/v1/score", json={"verifier": "test.hungry", "response": "4096"}).json()
    assert body["status"] == "ok" and body["score"] == 0.0 and "memory" in body["reason"]
    assert http.post("/v1/score", json={"verifier": "test.hungry", "response": "1"}).json()["score"] == 1.0


@pytest.mark.slow
async def test_service_stays_responsive_while_checks_are_stuck(small: BackgroundServer) -> None:
    async with httpx.AsyncClient(base_url=small.url, timeout=60) as c:
        stuck_check = {"verifier": "test.spinner", "response": f"{STUCK_S:g}"}
        stuck = [asyncio.create_task(c.post("/v1/score", json=stuck_check)) for _ in range(4)]

        async def all_admitted() -> bool:
            return bool((await c.get("/readyz")).json()["lanes"]["cpu"]["in_flight"] == 4)

        await wait_until_async(all_admitted, 10, what="the 4 stuck checks to be admitted")
        start = time.monotonic()
        live = await c.get("/livez")
        # Well inside the budget the stuck checks hold their workers for: nothing waited on them.
        assert (
            live.status_code == 200
            and time.monotonic() - start < small.settings.workers.verdict_timeout_s / 2
        )
        results = await asyncio.gather(*stuck)
        assert all(r.json()["score"] == 0.0 for r in results)
        normal = await c.post("/v1/score", json={"verifier": "exact", "response": "a", "reference": "a"})
        assert normal.json()["score"] == 1.0


def test_metrics_report_timeouts_statuses_and_pool(http: httpx.Client) -> None:
    http.post("/v1/score", json={"verifier": "exact", "response": "a", "reference": "a"})
    text = http.get("/metrics").text
    assert 'referee_verdicts_total{status="ok",verifier="exact"}' in text
    assert "referee_verdict_seconds_bucket" in text
    assert "referee_pool_saturation" in text
    assert "referee_pool_starved 0.0" in text  # checks the load kept from a CPU: none here
    assert 'referee_http_requests_total{method="POST",route="/v1/score",status="200"}' in text


def test_readyz_reports_workers_and_disabled_sandbox(http: httpx.Client) -> None:
    r = http.get("/readyz")
    assert r.status_code == 200
    body = r.json()
    assert body["ready"] is True and body["checks"]["workers"]["size"] == 2
    assert body["checks"]["sandbox"]["ok"] is False


def test_a_request_that_can_never_fit_is_422_not_503() -> None:
    settings = make_settings(max_pending_verdicts=10)
    with BackgroundServer(settings) as server:
        body = {"groups": [{"verifier": "exact", "reference": "a", "responses": ["a"] * 11}]}
        r = httpx.post(f"{server.url}/v1/groups", json=body)
        assert r.status_code == 422 and "limit 10" in r.json()["message"]
