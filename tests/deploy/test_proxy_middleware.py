"""The proxy middleware on its own: a scoring request the proxy lost (its replica died) is sent
again while a replica lives (bounded by a patience), and answered 503 `replica_lost` +
Retry-After only when none does, which `referee.client` retries; the app's own answers, 500s
included, and non-scoring routes pass through untouched."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

# referee.deploy's package imports Ray Serve (its app), though the middleware itself does not.
pytest.importorskip("ray.serve", reason="needs the `ray` extra: pip install -e '.[ray]'")

from referee.client import AsyncClient
from referee.deploy.proxy import ReplicaLossRetry, middlewares
from referee.models import GroupResult, GroupsResponse, Verdict, VerdictStatus


class FakeProxy:
    """Stands in for Serve's proxy app: loses the first `lose` requests (in one of the two
    ways Serve's proxy does), then answers with the app's JSON."""

    def __init__(
        self, lose: int, how: str = "silent", status: int = 200, answer: bytes | None = None
    ) -> None:
        self.lose = lose
        self.how = how
        self.status = status
        self.answer = answer
        self.calls: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.calls.append(body)
        if len(self.calls) <= self.lose:
            if self.how == "text500":
                await send(
                    {
                        "type": "http.response.start",
                        "status": 500,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"Internal Server Error"})
            elif self.how == "raise":
                raise RuntimeError("replica died")
            return  # "silent": nothing sent, the server answers a bare 500
        payload = self.answer or json.dumps({"echo": json.loads(body or b"null")}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": self.status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _replicas(alive: bool) -> Any:
    async def replicas_alive() -> bool:
        return alive

    return replicas_alive


def _retry(inner: Any, alive: bool = True, **options: Any) -> ReplicaLossRetry:
    return ReplicaLossRetry(inner, backoff_s=0.001, replicas_alive=_replicas(alive), **options)


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy")


@pytest.mark.parametrize("how", ["silent", "text500", "raise"])
async def test_a_lost_scoring_request_is_sent_again(how: str) -> None:
    inner = FakeProxy(lose=2, how=how)
    wrapped = _retry(inner)
    async with _client(wrapped) as http:
        response = await http.post("/v1/groups", json={"groups": [1]})
    assert response.status_code == 200
    assert response.json() == {"echo": {"groups": [1]}}
    assert inner.calls == [b'{"groups":[1]}'] * 3 and wrapped.replayed == 2


async def test_lost_requests_are_sent_again_while_a_replica_lives() -> None:
    """The case of issue 27: 19 of 64 requests answered 503 `replica_lost` after 4 quick
    attempts, although the other replica was alive."""
    inner = FakeProxy(lose=12)
    wrapped = _retry(inner, max_backoff_s=0.002)
    async with _client(wrapped) as http:
        response = await http.post("/v1/groups", json={"groups": [1]})
    assert response.status_code == 200 and response.json() == {"echo": {"groups": [1]}}
    assert len(inner.calls) == 13 and wrapped.replayed == 12


async def test_no_replica_left_is_a_retryable_503() -> None:
    inner = FakeProxy(lose=10_000)
    async with _client(_retry(inner, alive=False, no_replica_s=0.05)) as http:
        response = await http.post("/prefix/v1/score", json={})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"] == "replica_lost"
    assert "no replica is alive" in response.json()["message"]
    assert 2 <= len(inner.calls) < 10_000


async def test_the_patience_bounds_the_resends_even_with_a_replica_alive() -> None:
    inner = FakeProxy(lose=10_000)
    async with _client(_retry(inner, patience_s=0.05, max_backoff_s=0.002)) as http:
        response = await http.post("/v1/groups", json={})
    assert response.status_code == 503 and response.json()["error"] == "replica_lost"
    assert "within" in response.json()["message"]
    assert 2 <= len(inner.calls) < 10_000


async def test_an_unknown_replica_state_counts_as_alive() -> None:
    async def broken() -> bool:
        raise ConnectionError("GCS unreachable")

    inner = FakeProxy(lose=3)
    wrapped = ReplicaLossRetry(inner, backoff_s=0.001, no_replica_s=0.0, replicas_alive=broken)
    async with _client(wrapped) as http:
        response = await http.post("/v1/groups", json={})
    assert response.status_code == 200 and len(inner.calls) == 4


async def test_the_client_retries_replica_lost_until_a_replica_answers() -> None:
    result = GroupResult(
        verdicts=[Verdict(score=1.0, status=VerdictStatus.ok, verifier="exact@1")],
        rewards=[1.0],
        advantages=[0.0],
        mean=1.0,
        std=0.0,
        zero_variance=True,
    )
    answer = GroupsResponse(groups=[result]).model_dump_json().encode()
    inner = FakeProxy(lose=2, answer=answer)  # none alive: a 503 at each loss
    transport = httpx.ASGITransport(app=_retry(inner, alive=False, no_replica_s=0.0))
    async with AsyncClient("http://proxy", retries=3, backoff_s=0.001, transport=transport) as client:
        got = await client.score_groups([{"verifier": "exact", "reference": "a", "responses": ["a"]}])
    assert got.groups == [result]
    assert len(inner.calls) == 3  # two 503 replica_lost, each retried by the client


async def test_the_apps_own_answers_and_other_routes_pass_through() -> None:
    app_500 = FakeProxy(lose=0, status=500)  # the app's own JSON 500: not retried
    async with _client(_retry(app_500)) as http:
        response = await http.post("/v1/groups", json={})
    assert response.status_code == 500 and len(app_500.calls) == 1

    registration = FakeProxy(lose=1, how="text500")  # not idempotent: never sent twice
    async with _client(_retry(registration)) as http:
        response = await http.post("/v1/verifiers", json={})
    assert response.status_code == 500 and len(registration.calls) == 1


def test_the_callback_returns_starlette_middleware() -> None:
    (middleware,) = middlewares()
    assert middleware.cls is ReplicaLossRetry
