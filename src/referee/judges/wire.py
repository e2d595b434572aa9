"""The chat-completions wire format, as `JudgeClients` speaks it: the request body, and a strict
reader of the reply (a reply that is not a chat completion is said to be so, in words, never
guessed at), Retry-After, and the words of a server's error body.

Pure functions of bytes and dataclasses, so the recorded replies of tests/data/judges can be
read without a server.
"""

from __future__ import annotations

import json
import time
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import BaseModel, Field, StrictInt, StrictStr, ValidationError

from referee.judges.contract import ChatReply, ChatRequest


def request_body(request: ChatRequest) -> dict[str, Any]:
    """The chat-completions request for `request` (its model already resolved)."""
    sampling = request.sampling
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "temperature": sampling.temperature,
        "max_tokens": sampling.max_tokens,
        "n": 1,
        "stream": False,
    }
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    return body


class _Message(BaseModel):
    content: StrictStr | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: StrictStr | None = None


class _Usage(BaseModel):
    prompt_tokens: StrictInt = Field(default=0, ge=0)
    completion_tokens: StrictInt = Field(default=0, ge=0)


class _Completion(BaseModel):
    choices: list[_Choice] = Field(min_length=1)
    model: StrictStr | None = None
    usage: _Usage | None = None


def read_reply(raw: bytes, *, default_model: str) -> ChatReply | str:
    """A chat completion read strictly (`choices[0].message.content` a string; usage optional,
    well-formed when present), or what is wrong with it, in words."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return f"the body is not JSON ({len(raw)} bytes)"
    if not isinstance(data, dict):
        return f"the body is a JSON {type(data).__name__}, not an object"
    if "choices" not in data and isinstance(data.get("error"), dict | str):
        return f"the server answered an error: {_error_text(data['error'])}"
    try:
        completion = _Completion.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        return f"{where}: {first['msg']}"
    choice = completion.choices[0]
    if choice.message.content is None:
        return "choices.0.message.content is null (no text: a tool call or a refusal?)"
    usage = completion.usage or _Usage()
    return ChatReply(
        text=choice.message.content,
        model=completion.model or default_model,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        latency_s=0.0,
        finish_reason=choice.finish_reason,
    )


def retry_after_s(value: str | None) -> float | None:
    """Retry-After as seconds: delay-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_text(error: object) -> str:
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]


def server_says(raw: bytes | None) -> str:
    """`: <the server's error message>` from an error body, when it has one."""
    if not raw:
        return ""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = raw[:300].decode("utf-8", "replace").strip()
        return f": {text}" if text else ""
    if isinstance(data, dict) and "error" in data:
        return f": {_error_text(data['error'])}"
    if isinstance(data, dict) and isinstance(data.get("detail"), str):  # FastAPI servers
        return f": {data['detail'][:300]}"
    return ""
