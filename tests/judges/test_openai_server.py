"""The suite's real OpenAI-compatible server (tests/support/openai_server.py) does what the
judge tests rely on: non-streaming chat completions with usage, concurrent requests,
`max_tokens`, deterministic greedy answers, and a stop and start on the same port.

`slow`: the server takes ~10 s or more to start (it imports torch twice)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest

from tests.support.openai_server import OpenAIServer, require_serving
from tests.timing import wait_until

require_serving()
pytestmark = pytest.mark.slow


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def chat(content: str, **sampling: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "temperature": 0, "seed": 0, **sampling}


def post(server: OpenAIServer, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def test_a_chat_completion_has_string_content_and_usage(openai_server: OpenAIServer) -> None:
    body = chat("Is 2 + 2 = 4? Answer yes or no.", max_tokens=16)
    answer = post(openai_server, {**body, "model": openai_server.model})
    assert answer["object"] == "chat.completion" and answer["model"] == openai_server.model
    (choice,) = answer["choices"]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"]
    usage = answer["usage"]
    assert usage["prompt_tokens"] > len(body["messages"][0]["content"])  # the template's tokens too
    assert usage["completion_tokens"] == 16
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # Greedy decoding over fixed weights: the same messages, the same answer.
    assert post(openai_server, body)["choices"][0]["message"]["content"] == choice["message"]["content"]


def test_max_tokens_bounds_the_answer_which_never_ends_early(openai_server: OpenAIServer) -> None:
    # The model never emits its end of turn (tests/support/openai_server.py): even sampled, an
    # answer is exactly max_tokens long, cut off.
    for max_tokens in (1, 5, 300):  # unmasked, 300 sampled tokens would almost surely end the turn
        answer = post(openai_server, chat("hello", max_tokens=max_tokens, temperature=1.0, seed=max_tokens))
        assert answer["usage"]["completion_tokens"] == max_tokens
        assert answer["choices"][0]["finish_reason"] == "length"
    short = post(openai_server, chat("hello", max_tokens=4))["choices"][0]["message"]["content"]
    long = post(openai_server, chat("hello", max_tokens=12))["choices"][0]["message"]["content"]
    assert long.startswith(short) and len(short) < len(long)


def test_a_model_it_does_not_serve_is_refused(openai_server: OpenAIServer) -> None:
    reply = httpx.post(
        f"{openai_server.base_url}/chat/completions", json={**chat("hi"), "model": "gpt-judge"}, timeout=60
    )
    assert reply.status_code == 400 and "gpt-judge" in reply.text


async def test_sixteen_concurrent_requests_all_answer(openai_server: OpenAIServer) -> None:
    async with httpx.AsyncClient(base_url=openai_server.base_url, timeout=60) as client:
        replies = await asyncio.gather(
            *(client.post("/chat/completions", json=chat(f"question {i}", max_tokens=8)) for i in range(16))
        )
    assert [r.status_code for r in replies] == [200] * 16
    assert all(r.json()["usage"]["completion_tokens"] == 8 for r in replies)


async def test_a_stop_cuts_requests_in_flight_and_a_start_serves_again(openai_server: OpenAIServer) -> None:
    async with httpx.AsyncClient(base_url=openai_server.base_url, timeout=60) as client:
        answer = await client.post("/chat/completions", json=chat("still there?", max_tokens=6))
        before = answer.json()["choices"][0]["message"]["content"]
        # That answer left the connection open: the long request goes out on it, so it is on the
        # server, generating (4000 tokens take seconds), when the server is killed.
        request = asyncio.create_task(client.post("/chat/completions", json=chat("go", max_tokens=4000)))
        await asyncio.sleep(0.5)
        assert not request.done()
        process = openai_server.process
        openai_server.stop(abrupt=True)
        try:
            assert process is not None and process.poll() is not None
            # The model's process (the server spawns one) went with it.
            wait_until(lambda: not group_alive(process.pid), 10, what="the server's process group to end")
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                await request
            with pytest.raises(httpx.ConnectError):  # nothing listens on the port any more
                await client.post("/chat/completions", json=chat("hi", max_tokens=4))
        finally:
            openai_server.start()
        assert openai_server.process is not process
        answer = await client.post("/chat/completions", json=chat("still there?", max_tokens=6))
    assert answer.json()["choices"][0]["message"]["content"] == before  # the same model, on the same port
