"""`JudgeClients` against a scripted chat-completions server on a loopback socket: replies,
retries, timeouts, refusals, malformed bodies, the breaker, concurrency and single flight."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from referee.judges import ChatFailure, ChatReply, ChatRequest, JudgeClients, Message, Sampling
from tests.judges.scripted_server import API_KEY, MALFORMED, SLOW_S, ChatServer, clients, refused_port
from tests.timing import FakeClock, within


@pytest.fixture()
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def ask(endpoint: str = "e", text: str = "Is 2+2=4?", **kwargs: object) -> ChatRequest:
    messages = (Message("system", "You are a strict grader."), Message("user", text))
    return ChatRequest(endpoint, messages, **kwargs)  # type: ignore[arg-type]


async def one(judges: JudgeClients, request: ChatRequest) -> ChatReply | ChatFailure:
    (result,) = await judges.complete_many([request])
    return result


async def call_once(
    endpoint: dict[str, Any], request: ChatRequest
) -> tuple[ChatReply | ChatFailure, JudgeClients]:
    """`request` sent through clients of one endpoint "e", closed afterwards."""
    judges = clients({"e": endpoint})
    try:
        return await one(judges, request), judges
    finally:
        await judges.aclose()


async def test_a_reply_with_usage(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("ok")}})
    try:
        sampling = Sampling(temperature=0.0, max_tokens=64, top_p=0.9, seed=7, stop=("</verdict>",))
        reply = await one(judges, ask(text="grade this", sampling=sampling))
    finally:
        await judges.aclose()
    assert isinstance(reply, ChatReply), reply
    assert (reply.text, reply.model, reply.finish_reason) == ("grade this", "judge-model", "stop")
    assert (reply.prompt_tokens, reply.completion_tokens, reply.attempts) == (11, 3, 1)
    assert reply.latency_s > 0
    (body,) = chat_server.bodies("ok")
    assert body == {
        "model": "judge-model",
        "messages": [
            {"role": "system", "content": "You are a strict grader."},
            {"role": "user", "content": "grade this"},
        ],
        "temperature": 0.0,
        "max_tokens": 64,
        "n": 1,
        "stream": False,
        "top_p": 0.9,
        "seed": 7,
        "stop": ["</verdict>"],
    }
    assert chat_server.seen[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert judges.calls == {("e", "ok"): 1}
    assert judges.tokens == {("e", "prompt"): 11, ("e", "completion"): 3}


async def test_usage_is_optional_and_a_request_may_name_another_model(chat_server: ChatServer) -> None:
    reply, _ = await call_once({"url": chat_server.url("nousage"), "api_key": None}, ask(model="other-model"))
    assert isinstance(reply, ChatReply) and (reply.prompt_tokens, reply.completion_tokens) == (0, 0)
    assert chat_server.bodies("nousage")[0]["model"] == "other-model"
    assert "authorization" not in chat_server.seen[0].headers  # no key configured: none sent


async def test_429_waits_out_retry_after_then_succeeds(chat_server: ChatServer) -> None:
    chat_server.retry_after = "1"
    reply, judges = await call_once({"url": chat_server.url("limited")}, ask())
    assert isinstance(reply, ChatReply) and reply.attempts == 2
    first, second = (s.at for s in chat_server.seen)
    # The backoff is 0.01 s here: only the server's Retry-After explains the pause.
    assert second - first >= 0.95
    assert judges.calls == {("e", "ok"): 1}


async def test_server_errors_exhaust_the_retries(chat_server: ChatServer) -> None:
    failure, judges = await call_once({"url": chat_server.url("fail"), "retries": 2}, ask())
    assert isinstance(failure, ChatFailure) and failure.kind == "server_error"
    assert failure.attempts == 3 and chat_server.hits["fail"] == 3
    assert "HTTP 500" in failure.detail and "CUDA out of memory" in failure.detail
    assert "'e'" in failure.detail and "127.0.0.1" not in failure.detail  # named, not located
    assert judges.calls == {("e", "server_error"): 1}


async def test_a_hanging_server_times_out_within_the_bound(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("hang"), "timeout_s": 0.3, "retries": 1}})
    start = time.monotonic()
    try:
        failure = await one(judges, ask())
    finally:
        await judges.aclose()
    elapsed = time.monotonic() - start
    assert isinstance(failure, ChatFailure) and failure.kind == "timeout", failure
    assert failure.attempts == 2 and chat_server.hits["hang"] == 2
    assert "no reply within 0.3 s" in failure.detail
    assert 0.6 <= elapsed < within(0.6 + 1.0)


async def test_connection_refused_is_unreachable() -> None:
    failure, _ = await call_once({"url": f"http://127.0.0.1:{refused_port()}/v1", "retries": 1}, ask())
    assert isinstance(failure, ChatFailure) and failure.kind == "unreachable"
    assert failure.attempts == 2 and "connection failed" in failure.detail


async def test_a_reset_connection_is_unreachable_and_retried(chat_server: ChatServer) -> None:
    failure, _ = await call_once({"url": chat_server.url("reset"), "retries": 1}, ask())
    assert isinstance(failure, ChatFailure) and failure.kind == "unreachable", failure
    assert chat_server.hits["reset"] == 2


@pytest.mark.parametrize("shape", sorted(MALFORMED))
async def test_a_malformed_body_is_a_bad_reply_not_retried(chat_server: ChatServer, shape: str) -> None:
    failure, _ = await call_once({"url": chat_server.url(f"malformed-{shape}")}, ask())
    assert isinstance(failure, ChatFailure) and failure.kind == "bad_reply", failure
    assert failure.attempts == 1 and chat_server.hits[f"malformed-{shape}"] == 1
    assert failure.detail.startswith("judge endpoint 'e' sent no chat completion: ")
    if shape == "error-object":
        assert "model overloaded" in failure.detail


async def test_a_4xx_is_refused_at_once_with_the_servers_words(chat_server: ChatServer) -> None:
    failure, _ = await call_once({"url": chat_server.url("refuse")}, ask())
    assert isinstance(failure, ChatFailure) and failure.kind == "refused"
    assert failure.attempts == 1 and chat_server.hits["refuse"] == 1
    assert "HTTP 400" in failure.detail and "maximum context length" in failure.detail


async def test_an_unknown_endpoint_is_named_and_nothing_is_sent(chat_server: ChatServer) -> None:
    failure, judges = await call_once({"url": chat_server.url("ok")}, ask(endpoint="nope"))
    assert isinstance(failure, ChatFailure) and failure.kind == "unknown_endpoint"
    assert "'nope'" in failure.detail and "e" in failure.detail and not chat_server.seen
    assert judges.endpoint_model("e") == "judge-model" and judges.endpoint_model("nope") is None


async def test_the_breaker_opens_after_failures_and_closes_after_a_trial(chat_server: ChatServer) -> None:
    clock = FakeClock()
    config = {"url": chat_server.url("switch"), "retries": 0, "breaker_failures": 2, "breaker_reset_s": 10.0}
    judges = clients({"e": config}, clock=clock)
    try:
        for n in range(2):
            failure = await one(judges, ask(text=f"call {n}"))
            assert isinstance(failure, ChatFailure) and failure.kind == "server_error"
        # Open: refused at once, the server is not called.
        failure = await one(judges, ask(text="call 2"))
        assert isinstance(failure, ChatFailure) and failure.kind == "breaker_open", failure
        assert failure.retry_in_s == 10.0 and chat_server.hits["switch"] == 2
        assert judges.health()["e"]["state"] == "open" and not judges.health()["e"]["ok"]
        # After the cool-down one trial goes through; it fails: open again.
        clock.advance(10.0)
        assert judges.health()["e"]["state"] == "half_open"
        failure = await one(judges, ask(text="trial 1"))
        assert isinstance(failure, ChatFailure) and failure.kind == "server_error"
        assert chat_server.hits["switch"] == 3 and judges.health()["e"]["state"] == "open"
        # The next trial succeeds: closed, calls flow again.
        clock.advance(10.0)
        chat_server.down = False
        assert isinstance(await one(judges, ask(text="trial 2")), ChatReply)
        assert judges.health()["e"] == {
            "ok": True,
            "model": "judge-model",
            "state": "closed",
            "retry_in_s": 0.0,
            "in_flight": 0,
        }
        assert isinstance(await one(judges, ask(text="after")), ChatReply)
    finally:
        await judges.aclose()
    assert judges.calls[("e", "breaker_open")] == 1


async def test_a_refusal_does_not_open_the_breaker(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("refuse"), "breaker_failures": 1}})
    try:
        results = [await one(judges, ask(text=f"{n}")) for n in range(3)]
    finally:
        await judges.aclose()
    assert [r.kind for r in results if isinstance(r, ChatFailure)] == ["refused"] * 3
    assert chat_server.hits["refuse"] == 3


async def test_at_most_max_concurrency_calls_are_in_flight(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("slow"), "max_concurrency": 3}})
    start = time.monotonic()
    try:
        results = await judges.complete_many([ask(text=f"response {n}") for n in range(9)])
    finally:
        await judges.aclose()
    assert [r.text for r in results if isinstance(r, ChatReply)] == [f"response {n}" for n in range(9)]
    assert chat_server.most_active == 3 and chat_server.hits["slow"] == 9
    assert time.monotonic() - start >= 3 * SLOW_S * 0.9  # three waves of three


async def test_identical_requests_in_flight_are_sent_once(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("slow")}})
    try:
        group = await judges.complete_many([ask(text="same"), ask(text="other"), ask(text="same")])
        # Two callers at once (two groups holding the same response): one call.
        a, b = await asyncio.gather(one(judges, ask(text="again")), one(judges, ask(text="again")))
    finally:
        await judges.aclose()
    assert [r.text for r in group if isinstance(r, ChatReply)] == ["same", "other", "same"]
    assert isinstance(a, ChatReply) and isinstance(b, ChatReply)
    # The same reply; the caller that got it second is told it shares another's call.
    assert sorted([a.shared, b.shared]) == [False, True]
    assert dataclasses.replace(a, shared=False) == dataclasses.replace(b, shared=False)
    assert [r.shared for r in group if isinstance(r, ChatReply)].count(True) == 1  # "same" twice
    assert sorted(b["messages"][-1]["content"] for b in chat_server.bodies("slow")) == [
        "again",
        "other",
        "same",
    ]
    assert judges.calls == {("e", "ok"): 3}


async def test_a_cancelled_caller_leaves_the_shared_call_to_the_other(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("slow")}})
    try:
        first = asyncio.create_task(one(judges, ask(text="shared")))
        second = asyncio.create_task(one(judges, ask(text="shared")))
        await asyncio.sleep(SLOW_S / 3)
        first.cancel()
        reply = await second
    finally:
        await judges.aclose()
    assert first.cancelled() and isinstance(reply, ChatReply) and reply.text == "shared"
    assert not reply.shared  # the only caller that got the reply: its call, counted once
    assert chat_server.hits["slow"] == 1


async def test_the_key_is_sent_as_a_bearer_and_never_logged_or_echoed(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("echo-auth")}, "down": {"url": chat_server.url("fail")}})
    try:
        with capture_logs() as logs:
            refused = await one(judges, ask())
            failed = await one(judges, ask(endpoint="down"))
    finally:
        await judges.aclose()
    assert chat_server.seen[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert isinstance(refused, ChatFailure) and refused.kind == "refused"
    # The server said the key back; the detail keeps what it said, without the key.
    assert "bad key: Bearer [api key]" in refused.detail and API_KEY not in refused.detail
    assert isinstance(failed, ChatFailure) and API_KEY not in failed.detail
    assert {entry["event"] for entry in logs} == {"judge_call_failed"} and len(logs) == 2
    assert all(API_KEY not in repr(entry) for entry in logs)
    assert API_KEY not in repr(judges.health())


async def test_the_key_may_come_from_a_named_variable(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-from-the-environment")
    judges = clients({"e": {"url": chat_server.url("ok"), "api_key": None, "api_key_env": "JUDGE_TEST_KEY"}})
    try:
        assert isinstance(await one(judges, ask()), ChatReply)
    finally:
        await judges.aclose()
    assert chat_server.seen[0].headers["authorization"] == "Bearer sk-from-the-environment"


async def test_an_unset_key_variable_is_logged_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    with capture_logs() as logs:
        judges = clients(
            {"e": {"url": "http://127.0.0.1:9/v1", "api_key": None, "api_key_env": "JUDGE_TEST_KEY"}}
        )
    await judges.aclose()
    assert [(e["event"], e["variable"]) for e in logs] == [("judge_api_key_unset", "JUDGE_TEST_KEY")]


async def test_calls_after_close_fail_at_once(chat_server: ChatServer) -> None:
    judges = clients({"e": {"url": chat_server.url("hang")}})
    pending = asyncio.create_task(one(judges, ask()))
    await asyncio.sleep(0.1)
    await judges.aclose()  # cancels the call in flight
    with pytest.raises(asyncio.CancelledError):
        await pending
    failure = await one(judges, ask())
    assert isinstance(failure, ChatFailure) and "closed" in failure.detail
