"""Scoring: verdicts, `/v1/score` (one item or a batch) and `/v1/groups`."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from referee.models.common import JSONObject, StrictModel


class VerdictStatus(StrEnum):
    """`ok`: a verdict was reached (a wrong, malformed or too-slow answer is `ok` with score 0).

    `error`: no verdict could be reached for reasons outside the response (a verifier crashed,
    the sandbox is down). The score is then null so that a trainer masks the sample instead of
    learning from a fake 0.
    """

    ok = "ok"
    error = "error"


class Verdict(BaseModel):
    score: float | None = Field(
        description="In [0, 1] unless the verifier declares another range; null when status is error."
    )
    status: VerdictStatus
    verifier: str = Field(description="name@version of the verifier that decided")
    reason: str | None = None
    details: JSONObject = Field(default_factory=dict)
    duration_ms: float = 0.0

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("score must be finite")
        return value


class ScoreRequest(StrictModel):
    verifier: str = Field(min_length=1, max_length=200, examples=["exact"])
    response: str = Field(description="The model completion to judge.")
    reference: Any = Field(default=None, description="Gold answer or test spec; shape set by the verifier.")
    options: JSONObject = Field(default_factory=dict)


class BatchScoreRequest(StrictModel):
    items: list[ScoreRequest] = Field(min_length=1)


def _score_body_kind(value: Any) -> str:
    if isinstance(value, dict) and "items" in value:
        return "batch"
    if isinstance(value, BatchScoreRequest):
        return "batch"
    return "single"


# `/v1/score` takes one item or a batch; the discriminator keeps validation errors about the
# shape the client meant instead of listing failures for both alternatives.
ScoreBody = Annotated[
    Annotated[ScoreRequest, Tag("single")] | Annotated[BatchScoreRequest, Tag("batch")],
    Discriminator(_score_body_kind),
]


class BatchScoreResponse(BaseModel):
    verdicts: list[Verdict]


class VerifierComponent(StrictModel):
    """One weighted term of a group's reward, e.g. correctness × 1.0 + format × 0.1."""

    name: str = Field(min_length=1, max_length=200)
    # Bounded so that a weighted sum of bounded scores stays a finite float.
    weight: float = Field(default=1.0, ge=-1e6, le=1e6)
    options: JSONObject = Field(default_factory=dict)


class GroupSpec(StrictModel):
    verifier: Annotated[
        Annotated[str, Field(min_length=1, max_length=200), Tag("name")]
        | Annotated[list[VerifierComponent], Field(min_length=1), Tag("components")],
        Discriminator(lambda v: "components" if isinstance(v, list) else "name"),
    ] = Field(description="A verifier name, or weighted components whose scores are summed into the reward.")
    reference: Any = None
    responses: list[str] = Field(min_length=1)
    options: JSONObject = Field(
        default_factory=dict, description="Options for a single-name verifier (components carry their own)."
    )
    response_options: list[JSONObject] | None = Field(
        default=None,
        description=(
            'Per-response option values, one object per response (e.g. {"length": 812} tokens for '
            "length.overlong), merged into the options of every component that declares those keys."
        ),
    )
    prompt_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description=(
            "Which prompt the group answers (a dataset row id, or a hash of the prompt text): "
            "the service keeps per-prompt statistics for it (GET /v1/stats/prompts)."
        ),
    )

    @model_validator(mode="after")
    def _one_options_object_per_response(self) -> GroupSpec:
        if self.response_options is not None and len(self.response_options) != len(self.responses):
            raise PydanticCustomError(
                "length_mismatch",
                "response_options has {got} entries for {want} responses",
                {"got": len(self.response_options), "want": len(self.responses)},
            )
        return self

    def components(self) -> list[VerifierComponent]:
        if isinstance(self.verifier, str):
            return [VerifierComponent(name=self.verifier, weight=1.0, options=self.options)]
        return self.verifier

    @field_validator("verifier")
    @classmethod
    def _non_empty(cls, value: str | list[VerifierComponent]) -> str | list[VerifierComponent]:
        if isinstance(value, list) and not value:
            raise ValueError("at least one verifier component is required")
        if isinstance(value, str) and not value:
            raise ValueError("verifier name must not be empty")
        return value

    @model_validator(mode="after")
    def _options_belong_to_components(self) -> GroupSpec:
        if isinstance(self.verifier, list) and self.options:
            raise PydanticCustomError(
                "options_with_components",
                "with a list of components, put options in each component, not in the group",
            )
        return self


class AdvantageConfig(StrictModel):
    scale: Literal["group", "none"] = Field(
        default="group",
        description="group: (r - mean) / (std + epsilon), as in GRPO; none: r - mean, as in Dr. GRPO.",
    )
    epsilon: float = Field(default=1e-4, ge=0.0, le=1.0)


OnInvalid = Literal["reject", "error_verdict"]


class GroupsRequest(StrictModel):
    groups: list[GroupSpec] = Field(min_length=1)
    advantage: AdvantageConfig = Field(default_factory=AdvantageConfig)
    on_invalid: OnInvalid = Field(
        default="reject",
        description=(
            "reject: an invalid group (reference, options, unknown verifier, size) fails the whole "
            "request with 422. error_verdict: that group gets status-error verdicts whose reason "
            "says what is wrong, and the other groups are scored (what the trainer adapters ask "
            "for: one bad row never fails a batch)."
        ),
    )


class GroupResult(BaseModel):
    verdicts: list[Verdict]
    rewards: list[float | None]
    advantages: list[float | None]
    mean: float | None = Field(description="Mean reward over samples with a verdict (null if none).")
    std: float | None = Field(description="Sample standard deviation (ddof=1) over samples with a verdict.")
    zero_variance: bool = Field(description="True when the group carries no learning signal.")


class GroupsResponse(BaseModel):
    groups: list[GroupResult]
