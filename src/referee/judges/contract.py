"""What a judge verifier asks of the service's model endpoints, and what it gets back.

Model-graded rewards (LLM judges, rubrics) call an OpenAI-compatible chat-completions server
(vLLM, SGLang, TGI, `transformers serve`, OpenAI). The verifiers (`referee.verifiers.judge`)
build the messages and parse the replies; the service's long-lived `JudgeClients`
(`referee.judges.client`) owns the connections, the per-endpoint concurrency limits, retries,
circuit breakers and the verdict cache. This module is the seam between the two: plain data
and a Protocol, so a verifier can be tested with any object that has these methods.

Endpoints are named in the service's settings (`REFEREE_JUDGE_ENDPOINTS`); a request names one
(`options.endpoint`), never a URL: callers cannot make the service call an address of their
choosing, and the endpoint's API key stays in the service's configuration.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant"]
# Why no reply came back. All of them are infrastructure: the verdict is an error (masked),
# never a 0 or a 1.
FailureKind = Literal[
    "unknown_endpoint",  # no endpoint of that name is configured
    "unreachable",  # connection refused/reset, DNS, TLS
    "timeout",  # no complete reply within the endpoint's timeout (after retries)
    "rate_limited",  # 429 after retries
    "server_error",  # 5xx after retries
    "refused",  # 4xx other than 429: the request itself is wrong (model name, context length)
    "breaker_open",  # the endpoint failed repeatedly: calls are refused until a trial succeeds
    "bad_reply",  # 2xx whose body is not a chat completion
    "no_key",  # the endpoint's api_key_file cannot be read: nothing was sent
]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Sampling:
    """Sampling settings sent with each call. Judges want determinism: temperature 0 and a
    seed by default (servers that ignore `seed` still get temperature 0)."""

    temperature: float = 0.0
    max_tokens: int = 512
    top_p: float | None = None
    seed: int | None = 0
    stop: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChatRequest:
    endpoint: str  # a configured endpoint's name
    messages: tuple[Message, ...]
    sampling: Sampling = field(default_factory=Sampling)
    # The model name sent; None: the endpoint's configured model.
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ChatReply:
    text: str
    model: str  # the model that answered (as the server names it)
    prompt_tokens: int  # 0 where the server reports no usage
    completion_tokens: int
    latency_s: float  # the successful attempt's round trip
    finish_reason: str | None = None  # "stop", "length" (cut off: parsers may refuse it), ...
    attempts: int = 1
    # Another caller's call: identical requests in flight together are sent once, and every
    # caller but one gets the reply marked shared (its tokens were spent once, for that one).
    shared: bool = False


@dataclass(frozen=True, slots=True)
class ChatFailure:
    kind: FailureKind
    detail: str  # for the verdict's reason and the log; never contains the API key
    attempts: int = 0
    retry_in_s: float | None = None  # breaker_open: when a trial call will be allowed


class JudgeCache(Protocol):
    """Parsed judge outcomes keyed by everything that determines them: (model, template
    version, response, reference, criterion) hashed by the verifier. Repeated samples of a
    group and re-scoring cost no call."""

    def get(self, key: Hashable) -> Any | None: ...

    def put(self, key: Hashable, value: Any) -> None: ...


class Judges(Protocol):
    """The service's model endpoints, as judge verifiers use them (`Resources.judges`)."""

    @property
    def cache(self) -> JudgeCache: ...

    def endpoint_model(self, endpoint: str) -> str | None:
        """The model an endpoint is configured with (part of the cache key); None if unknown."""
        ...

    async def complete_many(self, requests: Sequence[ChatRequest]) -> list[ChatReply | ChatFailure]:
        """One result per request, in order: a group's calls go out together, at most the
        endpoint's `max_concurrency` in flight (servers like vLLM batch concurrent requests);
        identical requests in flight are sent once, and all the replies but one say `shared`."""
        ...
