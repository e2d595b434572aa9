"""A scripted stand-in for the service's judge endpoints (`referee.judges.Judges`).

It answers each request with what `answer(request)` returns, counts the calls and keeps a
plain dict as the verdict cache: enough to test prompts, parsing and the verifiers' flow
without a server (the real-server tests use tests/support/openai_server.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.judges import ChatFailure, ChatReply, ChatRequest


class DictCache:
    def __init__(self) -> None:
        self.entries: dict[Hashable, Any] = {}
        self.hits = 0

    def get(self, key: Hashable) -> Any | None:
        value = self.entries.get(key)
        self.hits += value is not None
        return value

    def put(self, key: Hashable, value: Any) -> None:
        self.entries[key] = value


def reply(text: str, finish_reason: str = "stop") -> ChatReply:
    return ChatReply(text, "fake-judge", 100, len(text.split()), 0.01, finish_reason)


Answerer = Callable[[ChatRequest], ChatReply | ChatFailure]


@dataclass
class FakeJudges:
    answer: Answerer
    endpoints: dict[str, str] = field(default_factory=lambda: {"default": "fake-judge"})
    requests: list[ChatRequest] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)  # the size of each complete_many call
    cache: DictCache = field(default_factory=DictCache)

    def endpoint_model(self, endpoint: str) -> str | None:
        return self.endpoints.get(endpoint)

    async def complete_many(self, requests: Sequence[ChatRequest]) -> list[ChatReply | ChatFailure]:
        self.batches.append(len(requests))
        self.requests.extend(requests)
        return [self.answer(r) for r in requests]


def response_of(request: ChatRequest) -> str:
    """The fenced response inside a request's user message."""
    user = request.messages[-1].content
    start = user.index("<<<RESPONSE-")
    start = user.index("\n", start) + 1
    end = user.index("\n<<<END-RESPONSE-", start)
    return user[start:end]


def criterion_of(request: ChatRequest) -> str:
    user = request.messages[-1].content
    start = user.index("\n", user.index("<<<CRITERION-")) + 1
    return user[start : user.index("\n<<<END-CRITERION-", start)]
