"""What the clients share for code sessions and environments: results, bodies, and which
failures of which request may be sent again.

Scoring is free of side effects, so the clients resend a scoring request after any failure
(`referee.client._patience`). Sessions and episodes are not: a `run` that reached the service
ran, and its effects (a variable set, a file written, a turn counted) stay, so a call whose
answer was lost must not run twice. Each request therefore says what may be resent (`Resend`):

- reads and deletes (`IDEMPOTENT`): everything the patience allows, as for scoring;
- creations (`CREATE`: a session, an episode): a connection that never reached the service,
  and 429/503, which the service answers *before* it creates anything (a quota, every slot
  taken); a creation whose answer was lost is not resent (its session would be left open
  until its idle TTL);
- calls (`ONCE`: `run`, `step`): only a connection that never reached the service; an answer
  lost after the request was sent raises `RefereeUnavailable` saying so;
- `verify` (`BACKPRESSURE`): as `ONCE`, and a 429/503 that asks to come back (Retry-After).

The result types are plain frozen dataclasses read leniently from the JSON (unknown fields
are ignored), so a service that adds a field does not break a trainer's client.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from referee.client._common import RefereeUnavailable
from referee.client._patience import RESEND_STATUSES, Attempts

# Failures before any byte reached the service: resending them cannot run anything twice.
UNSENT_EXCEPTIONS: tuple[type[Exception], ...] = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Resend:
    """What a request may be sent again after: transport failures once it may have been sent
    (`after_sent`), and which error statuses (`statuses`; with `retry_after`, only those that
    carry Retry-After, the service's "come back later")."""

    after_sent: bool
    statuses: frozenset[int]
    retry_after: bool = False

    def after_error(self, exc: Exception, attempts: Attempts, sent_at: float, what: str) -> float:
        """Seconds to wait before resending after `exc`, or raise `RefereeUnavailable`."""
        if not self.after_sent and not isinstance(exc, UNSENT_EXCEPTIONS):
            raise RefereeUnavailable(
                f"{what}: the connection failed after the request was sent ({exc!r}); not resent, since "
                "it may have run (a call is not repeated)"
            ) from exc
        return attempts.after_error(exc, sent_at)

    def after_response(self, response: httpx.Response, attempts: Attempts, sent_at: float) -> float | None:
        """Seconds to wait before resending, or None when `response` is the answer."""
        if response.status_code not in self.statuses:
            if response.status_code < 500:
                attempts.outage.answered()
            return None
        if self.retry_after and "Retry-After" not in response.headers:
            return None
        return attempts.after_response(response, sent_at)


# An idle pooled connection is dropped well before the service closes it (its `keep_alive_s`,
# 5 s by default): a request sent on a connection the service is closing at that moment fails
# with no answer, which a `run` may not resend. A new connection costs a handshake.
KEEPALIVE_EXPIRY_S = 2.0
POOL_LIMITS = httpx.Limits(
    max_connections=64, max_keepalive_connections=16, keepalive_expiry=KEEPALIVE_EXPIRY_S
)

IDEMPOTENT = Resend(after_sent=True, statuses=RESEND_STATUSES)
CREATE = Resend(after_sent=False, statuses=frozenset({429, 503}))
ONCE = Resend(after_sent=False, statuses=frozenset())
BACKPRESSURE = Resend(after_sent=False, statuses=frozenset({429, 503}), retry_after=True)

T = TypeVar("T")


def _read(cls: type[T], body: Any, **extra: Any) -> T:
    """`cls` from a JSON object, ignoring fields it does not know."""
    if not isinstance(body, Mapping):
        raise ValueError(f"expected a JSON object for {cls.__name__}, got {type(body).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in body.items() if k in names and k not in extra}, **extra)


@dataclass(frozen=True)
class SessionInfo:
    """`POST /v1/sessions`' answer: the session's id and the limits it got."""

    id: str
    language: str = "python"
    limits: dict[str, Any] = field(default_factory=dict)
    idle_ttl_s: float | None = None
    max_lifetime_s: float | None = None
    created_at: Any = None


@dataclass(frozen=True)
class SessionState:
    """`GET /v1/sessions/{id}`: how far a session is (calls, restarts) and when it expires."""

    id: str
    language: str = "python"
    calls: int = 0
    restarts: int = 0
    created_at: Any = None
    last_used_at: Any = None
    idle_ttl_s: float | None = None
    expires_at: Any = None


@dataclass(frozen=True)
class RunResult:
    """One call's outcome. `status` ok|error|timeout|memory_limit_exceeded|killed; `value` is
    the repr of the last expression (as a notebook shows it); `restarted`: the kernel's state
    was lost (the next call starts afresh; files in the work dir are kept); `call` numbers it."""

    status: str
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    duration_s: float = 0.0
    truncated: bool = False
    restarted: bool = False
    call: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def text(self) -> str:
        """What a model is shown: stdout, stderr, the value, the error, as a notebook cell would."""
        parts = [self.stdout.rstrip("\n"), self.stderr.rstrip("\n")]
        if self.value is not None:
            parts.append(self.value)
        if self.status != "ok":
            parts.append(self.error or self.status)
        if self.restarted:
            parts.append("(the interpreter was restarted: variables and imports are lost)")
        text = "\n".join(p for p in parts if p)
        return text + ("\n(output truncated)" if self.truncated else "")


@dataclass(frozen=True)
class EnvironmentInfo:
    """`GET /v1/environments`: one environment, its tools (OpenAI tool schemas) and turn limit."""

    name: str
    description: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_turns: int | None = None


@dataclass(frozen=True)
class Episode:
    """An episode just started: `observation` is what the model is shown first."""

    environment: str
    episode_id: str
    observation: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    turn: int = 0
    max_turns: int | None = None


@dataclass(frozen=True)
class StepResult:
    """The environment's answer to an action: what the model sees next, and whether it is over."""

    observation: str = ""
    done: bool = False
    turn: int = 0
    info: dict[str, Any] = field(default_factory=dict)


class SessionHandle:
    """What `Session` and `AsyncSession` share: the client, what the service answered, and
    whether this handle closed it."""

    def __init__(self, client: Any, info: SessionInfo) -> None:
        self.client = client
        self.info = info
        self.closed = False

    @property
    def id(self) -> str:
        return self.info.id


def session_body(
    language: str,
    limits: Mapping[str, Any] | None,
    files: Mapping[str, str] | None,
    idle_ttl_s: float | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"language": language}
    if limits:
        body["limits"] = dict(limits)
    if files:
        body["files"] = dict(files)
    if idle_ttl_s is not None:
        body["idle_ttl_s"] = idle_ttl_s
    return body


def run_body(code: str, time_s: float | None) -> dict[str, Any]:
    return {"code": code} if time_s is None else {"code": code, "time_s": time_s}


def episode_body(task: Mapping[str, Any] | None, seed: int | None) -> dict[str, Any]:
    return {"task": None if task is None else dict(task), "seed": seed}


def tool_call(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The action of calling tool `name` (`step(..., tool_call("python", {"code": ...}))`)."""
    return {"type": "tool_call", "name": name, "arguments": dict(arguments)}


def message(content: str) -> dict[str, Any]:
    """The action of answering (the model's final message)."""
    return {"type": "message", "content": content}


def session_path(session_id: str) -> str:
    return f"/v1/sessions/{_segment(session_id)}"


def episode_path(environment: str, episode_id: str | None = None) -> str:
    path = f"/v1/environments/{_segment(environment)}/episodes"
    return path if episode_id is None else f"{path}/{_segment(episode_id)}"


def _segment(value: str) -> str:
    # Ids are url-safe tokens; anything else is refused here rather than sent to another route.
    if not value or any(ch in value for ch in "/?#%") or value in (".", ".."):
        raise ValueError(f"not an id: {value!r}")
    return value


def parse_session(response: httpx.Response) -> SessionInfo:
    return _read(SessionInfo, response.json())


def parse_state(response: httpx.Response) -> SessionState:
    return _read(SessionState, response.json())


def parse_states(response: httpx.Response) -> list[SessionState]:
    body = response.json()
    items = body.get("sessions", []) if isinstance(body, Mapping) else body
    return [_read(SessionState, item) for item in items]


def parse_run(response: httpx.Response) -> RunResult:
    return _read(RunResult, response.json())


def parse_environments(response: httpx.Response) -> list[EnvironmentInfo]:
    body = response.json()
    items = body.get("environments", []) if isinstance(body, Mapping) else body
    return [_read(EnvironmentInfo, item) for item in items]


def parse_episode(environment: str, response: httpx.Response) -> Episode:
    return _read(Episode, response.json(), environment=environment)


def parse_step(response: httpx.Response) -> StepResult:
    return _read(StepResult, response.json())
