"""The client against the app in-process (ASGITransport), a real uvicorn subprocess, and faults."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from referee.client import AsyncClient, Client, RefereeHTTPError, RefereeUnavailable
from referee.models import GroupSpec, ScoreRequest
from referee.runtime import Runtime
from referee.service.app import create_app
from referee.service.background import free_port
from tests.conftest import make_settings
from tests.timing import wait_until, within

GROUP = GroupSpec(verifier="exact", reference="4", responses=["4", "5", "4"])


async def test_async_client_in_process() -> None:
    app = create_app(Runtime(make_settings()))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with AsyncClient("http://referee", transport=transport) as client:
            verdict = await client.score("exact", "a", "a")
            assert verdict.score == 1.0
            batch = await client.score_batch([ScoreRequest(verifier="exact", response="b", reference="a")])
            assert [v.score for v in batch] == [0.0]
            groups = await client.score_groups([GROUP])
            assert groups.groups[0].rewards == [1.0, 0.0, 1.0]
            names = {v.name for v in await client.verifiers()}
            assert {"exact", "regex"} <= names
            with pytest.raises(RefereeHTTPError) as info:
                await client.score("missing", "a", "a")
            assert info.value.status_code == 404 and info.value.error == "unknown_verifier"
            rewards = await client.openrlhf_reward(
                {"query": ["Q: A:4", "Q: A:5"], "prompts": ["Q: A:", "Q: A:"], "labels": ["4", "4"]},
                params={"verifier": "exact"},
            )
            assert rewards.rewards == [1.0, 0.0]


@pytest.fixture(scope="module")
def uvicorn_subprocess() -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "REFEREE_WORKERS": "1", "REFEREE_SANDBOX": "false", "REFEREE_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, "-m", "referee", "serve"], env=env)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/readyz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(ready, 60, interval_s=0.2, what="referee serve to become ready")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_sync_client_against_real_uvicorn(uvicorn_subprocess: str) -> None:
    with Client(uvicorn_subprocess) as client:
        assert client.score("numeric", "\\boxed{2.50}", 2.5).score == 1.0
        result = client.score_groups([GROUP]).groups[0]
        assert result.mean == pytest.approx(2 / 3)
        with pytest.raises(RefereeHTTPError) as info:
            client.score("exact", "a", {"not": "a string"})
        assert info.value.status_code == 422 and info.value.detail[0]["loc"] == ["reference"]


def test_unreachable_service_raises_after_retries() -> None:
    start = time.monotonic()
    with Client(f"http://127.0.0.1:{free_port()}", retries=2, backoff_s=0.01) as client:
        with pytest.raises(RefereeUnavailable):
            client.score("exact", "a", "a")
    assert time.monotonic() - start < within(5)


def _flaky_transport(statuses: list[int]) -> tuple[httpx.MockTransport, list[int]]:
    seen: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        status = statuses[min(len(seen), len(statuses) - 1)]
        seen.append(status)
        if status == 200:
            return httpx.Response(200, json={"score": 1.0, "status": "ok", "verifier": "exact@1"})
        return httpx.Response(status, json={"error": "x", "message": "y"}, headers={"Retry-After": "0"})

    return httpx.MockTransport(handler), seen


@pytest.mark.parametrize("status", [503, 429])
def test_retries_on_overload_then_succeeds(status: int) -> None:
    transport, seen = _flaky_transport([status, status, 200])
    with Client("http://referee", transport=transport, retries=3, backoff_s=0.001) as client:
        assert client.score("exact", "a", "a").score == 1.0
    assert seen == [status, status, 200]


@pytest.mark.parametrize("status", [400, 404, 422, 500])
def test_no_retry_on_other_errors(status: int) -> None:
    transport, seen = _flaky_transport([status, 200])
    with Client("http://referee", transport=transport, retries=3, backoff_s=0.001) as client:
        with pytest.raises(RefereeHTTPError):
            client.score("exact", "a", "a")
    assert seen == [status]


def test_gives_up_when_overload_persists() -> None:
    transport, seen = _flaky_transport([503])
    with Client("http://referee", transport=transport, retries=2, backoff_s=0.001) as client:
        with pytest.raises(RefereeHTTPError) as info:
            client.score("exact", "a", "a")
    assert info.value.status_code == 503 and len(seen) == 3


def test_read_timeouts_are_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ReadTimeout("slow", request=request)

    with Client(
        "http://referee", transport=httpx.MockTransport(handler), retries=3, backoff_s=0.001
    ) as client:
        with pytest.raises(RefereeUnavailable, match="no answer in time"):
            client.score("exact", "a", "a")
    assert len(calls) == 1


def _overloaded_transport(refusals: int) -> tuple[httpx.MockTransport, list[float]]:
    """A service whose admission refuses the first `refusals` requests (503 "overloaded")."""
    seen: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(time.monotonic())
        if len(seen) <= refusals:
            body = {"error": "overloaded", "message": "the cpu lane is busy", "detail": {"lane": "cpu"}}
            return httpx.Response(503, json=body, headers={"Retry-After": "1"})
        return httpx.Response(200, json={"score": 1.0, "status": "ok", "verifier": "exact@1"})

    return httpx.MockTransport(handler), seen


@pytest.mark.slow
def test_an_overloaded_lane_is_waited_out_beyond_the_retry_count() -> None:
    """Admission's 503 asks for patience: honoured (Retry-After) past `retries`, within
    `overload_patience_s`, so a trainer's big batch waits its turn instead of failing."""
    transport, seen = _overloaded_transport(refusals=2)
    with Client("http://referee", transport=transport, retries=1, backoff_s=0.001) as client:
        assert client.score("exact", "a", "a").score == 1.0
    assert len(seen) == 3 and seen[1] - seen[0] >= 1.0 and seen[2] - seen[1] >= 1.0


def test_overload_patience_is_bounded() -> None:
    transport, seen = _overloaded_transport(refusals=100)
    with Client("http://referee", transport=transport, overload_patience_s=0.5) as client:
        with pytest.raises(RefereeHTTPError) as info:
            client.score("exact", "a", "a")
    assert info.value.status_code == 503 and info.value.error == "overloaded" and len(seen) == 1
