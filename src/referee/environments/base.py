"""What an environment is: a multi-turn task a trainer steps through, judged at the end.

NeMo-Gym's `/seed_session` `/step` `/verify`, PrimeIntellect's multi-turn environments and
SandboxFusion's `/run_jupyter` all come down to the same three calls, and so does this protocol:

- `reset(task, seed)`: the first observation (the prompt) and the tools the model may call;
- `step(action)`: the model's tool call or message; the observation it gets back, whether the
  episode is over, and a little `info`;
- `verify(response)`: the usual `Verdict`, reached through the service's `Scorer` (so a
  registered type, a sandboxed code verifier or a model judge judge an episode exactly as they
  judge a single answer).

An `Environment` object is one episode's: the `EnvironmentKind` (a named environment of
`GET /v1/environments`) makes one per episode. Turn counting, idle expiry and ownership are the
`Episodes` table's, not the environment's.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from referee.errors import DomainError, ErrorKind, InputError
from referee.models import ScoreRequest, Verdict
from referee.scoring import Scorer


@dataclass(frozen=True, slots=True)
class Action:
    """The model's move: a tool call (`name`, `arguments`) or a message (`content`)."""

    type: Literal["tool_call", "message"]
    name: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    content: str = ""


@dataclass(frozen=True, slots=True)
class Reset:
    observation: str
    tools: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Step:
    observation: str
    done: bool
    info: dict[str, Any] = field(default_factory=dict)
    tool_call: bool = False  # counted as a tool call (and, with tool_error, as a failed one)
    tool_error: bool = False


class Environment(Protocol):
    """One episode of a multi-turn task (see the module docstring)."""

    async def reset(self, task: Mapping[str, Any] | None, seed: int | None) -> Reset: ...

    async def step(self, action: Action, turns_left: int) -> Step: ...

    async def verify(self, response: str | None) -> Verdict: ...

    async def close(self) -> None: ...


class EnvironmentKind(Protocol):
    """A named environment: what `GET /v1/environments` lists, and the factory of its episodes."""

    name: str
    description: str
    tools: list[dict[str, Any]]
    max_turns: int

    def make(self, owner: Hashable) -> Environment: ...


class EpisodeNotFound(DomainError):
    """Unknown, expired, or another key's: the same answer for all three (ids are not oracles)."""

    def __init__(self) -> None:
        super().__init__(ErrorKind.not_found, "unknown_episode", "no such episode (unknown or expired)")


class EpisodeDone(DomainError):
    def __init__(self, turns: int) -> None:
        super().__init__(
            ErrorKind.conflict,
            "episode_done",
            f"the episode is over after {turns} turns; verify or delete it",
        )


class UnknownEnvironment(DomainError):
    def __init__(self, name: str, known: list[str]) -> None:
        message = f"unknown environment {name!r}; known: {', '.join(known)}"
        super().__init__(ErrorKind.not_found, "unknown_environment", message, {"known": known})


def task_error(msg: str, *loc: str | int) -> InputError:
    return InputError([{"loc": ["body", "task", *loc], "msg": msg, "type": "value_error"}])


async def check_inputs(scorer: Scorer, verifier: str, reference: Any, options: Mapping[str, Any]) -> None:
    """Refuse a task at reset (422) whose reference or options its verifier would refuse at
    verify time: the trainer learns of a bad dataset row before it spends turns on it."""
    await scorer.prepare([verifier])
    judge = scorer.resolve(verifier)  # UnknownVerifier: 404 naming the known ones
    errors: list[dict[str, Any]] = []
    for what, validate, value in (
        ("reference", judge.validate_reference, reference),
        ("options", judge.validate_options, options),
    ):
        try:
            validate(value)
        except ValidationError as exc:
            for e in exc.errors():
                errors.append({"loc": ["body", "task", what, *e["loc"]], "msg": e["msg"], "type": e["type"]})
    if errors:
        raise InputError(errors)


async def judge(
    scorer: Scorer, owner: Hashable, verifier: str, response: str, reference: Any, options: Mapping[str, Any]
) -> Verdict:
    """One verdict through the scoring path (admission, worker pool, fallbacks, statistics)."""
    item = ScoreRequest(verifier=verifier, response=response, reference=reference, options=dict(options))
    (verdict,) = await scorer.score_items([item], batch=False, owner=owner)
    return verdict


def with_details(verdict: Verdict, **details: Any) -> Verdict:
    return verdict.model_copy(update={"details": {**verdict.details, **details}})
