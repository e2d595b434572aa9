"""The chat-completions wire format without a server: Retry-After and the strict reader."""

from __future__ import annotations

import json
import time
from email.utils import formatdate

import pytest

from referee.judges import ChatReply, read_reply
from referee.judges.wire import retry_after_s


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    assert retry_after_s("3") == 3.0 and retry_after_s("0") == 0.0 and retry_after_s("-5") == 0.0
    in_ten = retry_after_s(formatdate(time.time() + 10, usegmt=True))
    assert in_ten is not None and 8.0 <= in_ten <= 10.0
    assert retry_after_s(formatdate(time.time() - 60, usegmt=True)) == 0.0
    assert retry_after_s(None) is None and retry_after_s("soon") is None


def test_a_cut_reply_keeps_its_finish_reason_and_the_servers_model() -> None:
    raw = json.dumps(
        {
            "model": "served-name",
            "choices": [{"message": {"content": "VERDICT: EQ"}, "finish_reason": "length"}],
        }
    ).encode()
    reply = read_reply(raw, default_model="configured")
    assert isinstance(reply, ChatReply)
    assert (reply.text, reply.model, reply.finish_reason, reply.prompt_tokens) == (
        "VERDICT: EQ",
        "served-name",
        "length",
        0,
    )
    unnamed = read_reply(
        json.dumps({"choices": [{"message": {"content": ""}}]}).encode(), default_model="configured"
    )
    assert isinstance(unnamed, ChatReply) and (unnamed.text, unnamed.model) == ("", "configured")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"\xff\xfe", "not JSON"),
        (b'"text"', "a JSON str"),
        (
            json.dumps({"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": -1}}).encode(),
            "usage.prompt_tokens",
        ),
        (json.dumps({"error": "overloaded"}).encode(), "the server answered an error: overloaded"),
    ],
)
def test_what_is_wrong_is_said_in_words(body: bytes, says: str) -> None:
    problem = read_reply(body, default_model="m")
    assert isinstance(problem, str) and says in problem
