"""A group's judge calls: cache first, one call per distinct prompt, every reply parsed.

A verdict needs one judge call per (response, criterion). The calls a group needs are keyed
by everything that decides their outcome (the model, the template's name@version, the sampling
settings, the response, the reference, the criterion, the labels); a key found in the
service's verdict cache costs no call, and keys repeated within the group (a converged policy
answers the same thing eight times) are asked once. What is left goes to the endpoint in one
`complete_many`, so the transport can batch it and hold it to the endpoint's concurrency.

Only parsed verdicts are cached: a failure (no reply, an unparseable one) is asked again next
time, since it says nothing lasting about the response.

Each answer says where it came from, so that whoever reads the verdicts (an audit) counts each
call once: `cached` (the verdict cache answered), `shared` (another verdict's call answered: a
key repeated in the group, or an identical call another group had in flight, which the
transport sends once). A failure carries its details too (`judge_error`, the endpoint, and, for
a reply that could not be parsed, the reply and its tokens).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from referee.judges import ChatFailure, ChatReply, ChatRequest, Judges
from referee.verifiers.base import VerifierError
from referee.verifiers.judge.parsers import Parsed, UnparseableReply

RAW_CHARS = 500  # of the judge's reply kept in the verdict's details
REASON_RAW_CHARS = 160  # of an unparseable reply quoted in the error's reason


@dataclass(frozen=True, slots=True)
class Ask:
    """One judge call a verdict needs."""

    key: str  # the cache key (cache_key)
    request: ChatRequest
    parse: Callable[[ChatReply], Parsed]


@dataclass(frozen=True, slots=True)
class Answer:
    """A parsed judge verdict, as cached and as reported in a verdict's details."""

    score: float
    value: str
    raw: str  # the judge's reply, cut to RAW_CHARS
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool = False
    shared: bool = False  # another verdict's call (see the module's docstring)

    def details(self) -> dict[str, Any]:
        return {
            "judge_verdict": self.value,
            **_call_details(self.model, self.raw, self.prompt_tokens, self.completion_tokens, self.latency_s),
            "cached": self.cached,
            "shared": self.shared,
        }

    def stored(self) -> dict[str, Any]:
        """Plain JSON for the cache (which may live outside the process)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _WHENCE}

    @classmethod
    def from_stored(cls, stored: Any) -> Answer | None:
        try:
            return cls(**stored, cached=True)
        except TypeError:  # another version's entry: asked again
            return None


_WHENCE = ("cached", "shared")  # how an answer was had, not what it is: never stored


def _call_details(model: str, raw: str, prompt: int, completion: int, latency_s: float) -> dict[str, Any]:
    return {
        "judge_model": model,
        "judge_reply": raw,
        "tokens": {"prompt": prompt, "completion": completion},
        "latency_s": round(latency_s, 4),
    }


def cache_key(model: str, template: str, sampling: Any, *, endpoint: str, **parts: Any) -> str:
    """The verdict cache's key: a digest of everything that decides the judge's outcome."""
    payload = json.dumps(
        {"endpoint": endpoint, "model": model, "template": template, "sampling": repr(sampling), **parts},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return "judge:" + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _answer(reply: ChatReply | ChatFailure, ask: Ask) -> Answer | VerifierError:
    endpoint = ask.request.endpoint
    if isinstance(reply, ChatFailure):
        return VerifierError(
            f"judge endpoint {endpoint!r} failed ({reply.kind}): {reply.detail}"[:400],
            details={"judge_error": reply.kind, "endpoint": endpoint, "attempts": reply.attempts},
        )
    try:
        parsed = ask.parse(reply)
    except UnparseableReply as exc:
        excerpt = reply.text.strip()[-REASON_RAW_CHARS:]
        # The reply cost what a parsed one does: its tokens are in the details, as a verdict's.
        spent = _call_details(
            reply.model, reply.text[:RAW_CHARS], reply.prompt_tokens, reply.completion_tokens, reply.latency_s
        )
        return VerifierError(
            f"judge reply unparseable: {exc}; the reply ends {excerpt!r}",
            details={
                "judge_error": "unparseable",
                "endpoint": endpoint,
                **spent,
                "cached": False,
                "shared": reply.shared,
            },
        )
    return Answer(
        parsed.score,
        parsed.value,
        reply.text[:RAW_CHARS],
        reply.model,
        reply.prompt_tokens,
        reply.completion_tokens,
        reply.latency_s,
        shared=reply.shared,
    )


def _again(result: Answer | VerifierError) -> Answer | VerifierError:
    """`result` for a later ask of the same key in the group: the first one's call, shared."""
    if isinstance(result, Answer) and not result.cached:
        return dataclasses.replace(result, shared=True)
    if isinstance(result, VerifierError) and "tokens" in result.details:
        return VerifierError(*result.args, details={**result.details, "shared": True})
    return result


async def ask_all(judges: Judges, asks: Sequence[Ask]) -> list[Answer | VerifierError]:
    """One result per ask, in order."""
    cache = judges.cache
    results: dict[str, Answer | VerifierError] = {}
    pending: dict[str, Ask] = {}
    for ask in asks:
        if ask.key in results or ask.key in pending:
            continue
        stored = cache.get(ask.key)
        hit = Answer.from_stored(stored) if stored is not None else None
        if hit is not None:
            results[ask.key] = hit
        else:
            pending[ask.key] = ask
    if pending:
        todo = list(pending.values())
        replies = await judges.complete_many([ask.request for ask in todo])
        if len(replies) != len(todo):
            raise VerifierError(f"the judge transport returned {len(replies)} results for {len(todo)} calls")
        for ask, reply in zip(todo, replies, strict=True):
            answer = _answer(reply, ask)
            results[ask.key] = answer
            if isinstance(answer, Answer):
                cache.put(ask.key, answer.stored())
    out: list[Answer | VerifierError] = []
    seen: set[str] = set()
    for ask in asks:
        result = results[ask.key]
        out.append(_again(result) if ask.key in seen else result)
        seen.add(ask.key)
    return out
