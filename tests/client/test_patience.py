"""The clients wait out a service that is restarting, unreachable or busy (issue 27, item 1):
transport failures and 502/503/504 sequences on httpx's MockTransport, patience exhaustion,
and one log line per outage."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from referee.client import AsyncClient, Client, RefereeHTTPError, RefereeUnavailable
from referee.client._patience import Attempts, Outage, RetryPolicy

OK_BODY = {"score": 1.0, "status": "ok", "verifier": "exact@1"}
GROUP = {"verifier": "exact", "reference": "4", "responses": ["4", "5"]}

Step = Callable[[httpx.Request], httpx.Response]


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


def reset(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)


def closed_early(request: httpx.Request) -> httpx.Response:
    raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)


def status(code: int, error: str | None = None) -> Step:
    def step(request: httpx.Request) -> httpx.Response:
        if error is None:  # a gateway's own page, not Referee's JSON
            return httpx.Response(code, text="<html>Bad Gateway</html>")
        return httpx.Response(code, json={"error": error, "message": "not now"})

    return step


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=OK_BODY)


class Script:
    """A transport that plays `steps` in order (the last one repeats), recording each call."""

    def __init__(self, *steps: Step) -> None:
        self.steps = steps
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        return step(request)


OUTAGES: dict[str, list[Step]] = {
    "refused": [refused, refused, refused, refused, refused],
    "reset_then_refused": [reset, closed_early, refused, refused],
    "gateway": [status(502), status(504), status(502)],
    "unavailable": [status(503, "starting"), status(503), status(503, "replica_lost")],
    "mixed": [refused, status(502), reset, status(503, "no_workers"), status(504), refused],
}


@pytest.mark.parametrize("outage", sorted(OUTAGES))
def test_the_sync_client_waits_out_an_outage(outage: str, caplog: pytest.LogCaptureFixture) -> None:
    """More failures in a row than the former 3 retries, each kind the service may go through
    while it restarts: the call still returns the verdict, with one warning and one info line."""
    script = Script(*OUTAGES[outage], ok)
    caplog.set_level(logging.INFO, logger="referee.client")
    with Client("http://referee", transport=httpx.MockTransport(script), backoff_s=0.001) as client:
        assert client.score("exact", "a", "a").score == 1.0
    assert script.calls == len(OUTAGES[outage]) + 1
    assert _messages(caplog, logging.WARNING) == ["Referee service at http://referee unavailable"], (
        "one warning for the whole outage"
    )
    assert _messages(caplog, logging.INFO) == ["Referee service at http://referee answers again"]


@pytest.mark.parametrize("outage", sorted(OUTAGES))
async def test_the_async_client_waits_out_an_outage(outage: str, caplog: pytest.LogCaptureFixture) -> None:
    script = Script(*OUTAGES[outage], ok)
    caplog.set_level(logging.INFO, logger="referee.client")
    async with AsyncClient(
        "http://referee", transport=httpx.MockTransport(script), backoff_s=0.001
    ) as client:
        assert (await client.score("exact", "a", "a")).score == 1.0
    assert script.calls == len(OUTAGES[outage]) + 1
    assert len(_messages(caplog, logging.WARNING)) == 1
    assert len(_messages(caplog, logging.INFO)) == 1


def test_patience_exhausted_on_a_refused_connection_names_the_wait() -> None:
    script = Script(refused)
    start = time.monotonic()
    with Client(
        "http://referee", transport=httpx.MockTransport(script), patience_s=0.3, backoff_s=0.02
    ) as client:
        with pytest.raises(RefereeUnavailable, match=r"gave up after waiting 0 s \(patience_s=0.3\)") as info:
            client.score("exact", "a", "a")
    assert time.monotonic() - start >= 0.3
    assert "Connection refused" in str(info.value) and script.calls >= 3


async def test_async_patience_exhausted_on_a_gateway_error_raises_its_status() -> None:
    script = Script(status(502))
    async with AsyncClient(
        "http://referee", transport=httpx.MockTransport(script), patience_s=0.2, backoff_s=0.02
    ) as client:
        with pytest.raises(RefereeHTTPError, match=r"patience_s=0.2") as info:
            await client.score("exact", "a", "a")
    assert info.value.status_code == 502 and script.calls >= 2


@pytest.mark.parametrize("error", ["starting", None])
def test_any_503_is_waited_out_not_only_overloaded(error: str | None) -> None:
    script = Script(status(503, error), status(503, error), status(503, error), status(503, error), ok)
    with Client("http://referee", transport=httpx.MockTransport(script), backoff_s=0.001) as client:
        assert client.score("exact", "a", "a").score == 1.0
    assert script.calls == 5


def test_retries_caps_the_resends_for_a_tool_that_must_fail_fast() -> None:
    script = Script(refused)
    with Client(
        "http://referee", transport=httpx.MockTransport(script), retries=2, backoff_s=0.001
    ) as client:
        with pytest.raises(RefereeUnavailable, match=r"after 2 resend\(s\) \(retries=2\)"):
            client.score("exact", "a", "a")
    assert script.calls == 3


def test_a_write_timeout_is_resent_a_read_timeout_is_not() -> None:
    """The request never reached the service whole: sent again. The service has it and is still
    working: not sent again (it would double the work of a slow service)."""

    def write_timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.WriteTimeout("slow upload", request=request)

    def read_timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow answer", request=request)

    sent = Script(write_timeout, ok)
    with Client("http://referee", transport=httpx.MockTransport(sent), backoff_s=0.001) as client:
        assert client.score("exact", "a", "a").score == 1.0
    held = Script(read_timeout, ok)
    with Client("http://referee", transport=httpx.MockTransport(held), backoff_s=0.001) as client:
        with pytest.raises(RefereeUnavailable, match="no answer in time"):
            client.score("exact", "a", "a")
    assert (sent.calls, held.calls) == (2, 1)


def test_concurrent_chunks_log_one_outage_once(caplog: pytest.LogCaptureFixture) -> None:
    """`score_groups` sends chunks from several threads; all of them meet the same outage."""
    down = threading.Event()
    down.set()

    def handler(request: httpx.Request) -> httpx.Response:
        if down.is_set():
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        body = {"groups": [_group_result()]}
        return httpx.Response(200, json=body)

    threading.Timer(0.3, down.clear).start()
    caplog.set_level(logging.INFO, logger="referee.client")
    from referee.grouping import ChunkPolicy

    with Client(
        "http://referee",
        transport=httpx.MockTransport(handler),
        backoff_s=0.01,
        chunks=ChunkPolicy(max_groups=1, max_concurrency=4),
    ) as client:
        result = client.score_groups([GROUP] * 8)
    assert len(result.groups) == 8
    assert len(_messages(caplog, logging.WARNING)) == 1
    assert len(_messages(caplog, logging.INFO)) == 1


def test_a_request_sent_before_the_service_came_back_does_not_start_a_new_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="referee.client")
    outage = Outage("http://referee", 60)
    stale_sent_at = time.monotonic()
    outage.failed("ConnectError", stale_sent_at)
    outage.answered()
    outage.failed("ReadError", stale_sent_at)  # in flight across the recovery
    assert not outage.down
    outage.failed("ConnectError", time.monotonic())  # a new outage
    assert outage.down
    assert len(_messages(caplog, logging.WARNING)) == 2


def test_a_retry_after_is_never_cut_short_by_patience() -> None:
    """Told to come back in 30 s with 1 s of patience left: it fails now instead of returning
    early (the service would refuse it again) or waiting past its patience."""
    attempts = Attempts(RetryPolicy(patience_s=1.0), Outage("http://referee", 1.0), "POST /v1/score")
    busy = httpx.Response(503, json={"error": "overloaded", "message": "busy"}, headers={"Retry-After": "30"})
    with pytest.raises(RefereeHTTPError, match="patience_s=1"):
        attempts.after_response(busy, time.monotonic())


def test_back_pressure_is_waited_out_without_an_outage_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A 503 `overloaded` (or 429) with Retry-After is the service's everyday answer under load:
    many of them must not each warn of an outage that is not one; a 503 without it does."""
    caplog.set_level(logging.DEBUG, logger="referee.client")
    outage = Outage("http://referee", 60.0)
    busy = httpx.Response(503, json={"error": "overloaded", "message": "busy"}, headers={"Retry-After": "0"})
    limited = httpx.Response(
        429, json={"error": "rate_limited", "message": "slow"}, headers={"Retry-After": "0"}
    )
    for response in (busy, limited, busy):
        assert Attempts(RetryPolicy(), outage, "POST /v1/groups").after_response(response, time.monotonic())
    assert not outage.down and _messages(caplog, logging.WARNING) == []
    unavailable = httpx.Response(503, json={"error": "sandbox_unavailable", "message": "down"})
    Attempts(RetryPolicy(), outage, "POST /v1/groups").after_response(unavailable, time.monotonic())
    assert outage.down and len(_messages(caplog, logging.WARNING)) == 1


def test_former_overload_patience_keyword_is_the_patience() -> None:
    assert RetryPolicy.of(overload_patience_s=12).patience_s == 12
    assert RetryPolicy.of(patience_s=5, overload_patience_s=12).patience_s == 5
    assert RetryPolicy.of().patience_s == 900
    with pytest.raises(ValueError):
        RetryPolicy.of(patience_s=-1)


def _group_result() -> dict[str, object]:
    verdicts = [dict(OK_BODY), {**OK_BODY, "score": 0.0}]
    return {
        "verdicts": verdicts,
        "rewards": [1.0, 0.0],
        "advantages": [0.7, -0.7],
        "mean": 0.5,
        "std": 0.7,
        "zero_variance": False,
    }


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    """The records of `referee.client` at `level`, cut before their first parenthesis or "after"."""
    found = []
    for record in caplog.records:
        if record.name == "referee.client" and record.levelno == level:
            text = record.getMessage()
            found.append(text.split(" (")[0].split(" after ")[0])
    return found
