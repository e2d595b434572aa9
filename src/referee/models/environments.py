"""Multi-turn environments: `GET /v1/environments`, episodes (start, step, verify, delete) and
registered environments (`POST /v1/environments`, `DELETE /v1/environments/{name}`).

The step's action is a discriminated union on `type`: a tool call (`name`, `arguments`) or a
message (`content`), as a chat template's assistant turn is one or the other.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from referee.models.common import JSONObject, StrictModel, json_numbers
from referee.models.verifiers import REGISTERED_NAME_PATTERN

MAX_ACTION_CHARS = 1_000_000
MAX_TURNS_CAP = 64


class EnvironmentInfo(BaseModel):
    name: str
    description: str
    tools: list[JSONObject] = Field(description="OpenAI tool schemas of the tools the model may call")
    max_turns: int


class EpisodeRequest(StrictModel):
    task: JSONObject | None = Field(
        default=None,
        description=(
            "Environment-specific. `python`: {prompt, verifier, reference, options}; "
            "`logic.*` games: {puzzle, prompt?, options?} (or none, with a seed)."
        ),
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        le=2**63 - 1,
        description="Makes the puzzle of the games that have a generator (instead of a task).",
    )

    _numbers = json_numbers("seed")


class EpisodeStarted(BaseModel):
    episode_id: str
    observation: str
    tools: list[JSONObject]
    done: bool = False
    turn: int = 0
    max_turns: int


class ToolCallAction(StrictModel):
    type: Literal["tool_call"]
    name: str = Field(min_length=1, max_length=64)
    arguments: JSONObject = Field(default_factory=dict)


class MessageAction(StrictModel):
    type: Literal["message"]
    content: str = Field(max_length=MAX_ACTION_CHARS)


Action = Annotated[ToolCallAction | MessageAction, Field(discriminator="type")]


class StepRequest(StrictModel):
    action: Action


class StepResult(BaseModel):
    observation: str
    done: bool
    turn: int
    info: JSONObject = Field(default_factory=dict)


class VerifyRequest(StrictModel):
    response: str | None = Field(
        default=None,
        max_length=MAX_ACTION_CHARS,
        description="The answer to judge; null: the episode's final message (or last answer)",
    )


# ---- registered environments -------------------------------------------------------------


class EnvironmentExample(StrictModel):
    """An episode's task and an answer to it, with the verdict's score it must reproduce."""

    task: JSONObject
    response: str = Field(max_length=100_000)
    expected_score: float = Field(allow_inf_nan=False)

    _numbers = json_numbers("expected_score")


class RegisterEnvironmentRequest(StrictModel):
    name: str = Field(min_length=1, max_length=100, pattern=REGISTERED_NAME_PATTERN)
    description: str = Field(min_length=1, max_length=2000)
    kind: Literal["python", "puzzle"] = Field(
        description="`python`: the code-interpreter environment; `puzzle`: a `logic.*` checker's game"
    )
    verifier: str = Field(
        min_length=1,
        max_length=200,
        description="What judges the answer: a built-in verifier or an active registered type (`puzzle`: a `logic.*` one)",
    )
    max_turns: int = Field(default=8, ge=1, le=MAX_TURNS_CAP)
    prompt: str = Field(
        default="",
        max_length=20_000,
        description="Template of the first observation: `$prompt` (the task's prompt) and, for games, "
        "`$puzzle` (the puzzle as JSON) are replaced; empty: the task's prompt as is",
    )
    examples: list[EnvironmentExample] = Field(
        min_length=2,
        max_length=16,
        description="Scored through the environment before it is stored: each must reproduce its "
        "expected_score; at least one must score 1 and one 0",
    )

    _numbers = json_numbers("max_turns")


class RegisteredEnvironment(BaseModel):
    name: str
    description: str
    kind: Literal["python", "puzzle"]
    verifier: str
    max_turns: int
    prompt: str
    created_at: float = Field(description="Unix time of the registration")
    probes: int = Field(default=0, description="Probes of the verifier's battery that earned nothing")
