"""The one contract shared by the service, the client and the trainer adapters.

Every request and response body of the HTTP API is one of these pydantic models; the client
parses responses with them and the adapters build requests with them, so a change here is a
change of the public API.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

JSONObject = dict[str, Any]


class _Strict(BaseModel):
    # Unknown fields are a client bug worth reporting (a typo in "refrence" would otherwise
    # silently score against a null reference).
    model_config = ConfigDict(extra="forbid")


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


class ScoreRequest(_Strict):
    verifier: str = Field(min_length=1, max_length=200, examples=["exact"])
    response: str = Field(description="The model completion to judge.")
    reference: Any = Field(default=None, description="Gold answer or test spec; shape set by the verifier.")
    options: JSONObject = Field(default_factory=dict)


class BatchScoreRequest(_Strict):
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


class VerifierComponent(_Strict):
    """One weighted term of a group's reward, e.g. correctness × 1.0 + format × 0.1."""

    name: str = Field(min_length=1, max_length=200)
    # Bounded so that a weighted sum of bounded scores stays a finite float.
    weight: float = Field(default=1.0, ge=-1e6, le=1e6)
    options: JSONObject = Field(default_factory=dict)


class GroupSpec(_Strict):
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


class AdvantageConfig(_Strict):
    scale: Literal["group", "none"] = Field(
        default="group",
        description="group: (r - mean) / (std + epsilon), as in GRPO; none: r - mean, as in Dr. GRPO.",
    )
    epsilon: float = Field(default=1e-4, ge=0.0, le=1.0)


OnInvalid = Literal["reject", "error_verdict"]


class GroupsRequest(_Strict):
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


# ---- statistics (GET /v1/stats/...) ----------------------------------------------------------


class PromptFilter(StrEnum):
    """Which prompts `GET /v1/stats/prompts` lists; "in a row" counts the last `last` visits."""

    all = "all"
    always_solved = "always_solved"  # every sample passed, `last` visits in a row
    never_solved = "never_solved"  # no sample passed, `last` visits in a row
    zero_variance = "zero_variance"  # every sample scored the same, `last` visits in a row


class PromptStat(BaseModel):
    """One prompt's record. A visit is one scored group; a sample passes when its reward is at
    least the service's pass threshold (`REFEREE_STATS_PASS_THRESHOLD`)."""

    prompt_id: str
    visits: int = Field(description="Groups scored for this prompt.")
    attempts: int = Field(description="Samples scored (error verdicts included).")
    passes: int
    errors: int = Field(description="Samples without a verdict (status error).")
    pass_rate: float | None = Field(description="passes / samples with a verdict (null if none).")
    error_rate: float = Field(description="errors / attempts.")
    zero_variance_visits: int = Field(description="Visits whose samples all had the same reward.")
    solved_streak: int = Field(description="Latest visits in a row in which every sample passed.")
    unsolved_streak: int = Field(description="Latest visits in a row in which no sample passed.")
    zero_variance_streak: int = Field(description="Latest visits in a row without reward variance.")
    last_pass_rate: float | None = Field(description="Pass rate of the latest visit.")
    first_seen: float = Field(description="Unix time of the first visit.")
    last_seen: float = Field(description="Unix time of the latest visit.")


class Histogram(BaseModel):
    """`counts[i]` values fell in [edges[i], edges[i+1]) (the last bin includes its right edge)."""

    edges: list[float]
    counts: list[int]


class PromptStatsPage(BaseModel):
    prompts: list[PromptStat] = Field(description="Most recently seen first.")
    matched: int = Field(description="Prompts matching the filter (prompts lists up to `limit`).")
    tracked: int = Field(description="Prompts with a record for this caller.")
    visits: int = Field(description="Visits over the tracked prompts.")
    zero_variance_share: float | None = Field(description="Share of those visits without reward variance.")
    pass_rate_histogram: Histogram = Field(description="Prompt difficulty: tracked prompts by pass rate.")
    pass_threshold: float
    max_prompts: int = Field(
        description="The bound on records kept (all callers); least recently seen go first."
    )


class VerifierMinute(BaseModel):
    minute: int = Field(description="Unix time of the minute's start.")
    verdicts: int
    errors: int
    pass_rate: float | None = Field(description="Share of `ok` verdicts that passed.")
    mean_score: float | None
    p50_ms: float | None
    p99_ms: float | None


class VerifierStat(BaseModel):
    verifier: str
    verdicts: int = Field(description="Verdicts in the window (error verdicts included).")
    errors: int
    error_rate: float
    pass_rate: float | None
    mean_score: float | None
    p50_ms: float | None = Field(
        description="Verdict latency quantiles over the window (histogram estimate)."
    )
    p99_ms: float | None
    max_ms: float | None
    series: list[VerifierMinute] = Field(description="Minutes with verdicts, oldest first.")


class VerifierStatsPage(BaseModel):
    minutes: int = Field(description="The window: this many minutes up to now.")
    verifiers: list[VerifierStat]


class VerifierExample(BaseModel):
    response: str
    reference: Any = None
    options: JSONObject = Field(default_factory=dict)
    expected_score: float | None = None


class VerifierInfo(BaseModel):
    name: str
    version: str
    description: str
    reference_schema: JSONObject
    options_schema: JSONObject
    score_range: tuple[float, float] = (0.0, 1.0)
    example: VerifierExample
    kind: str = "builtin"


class VerifierList(BaseModel):
    verifiers: list[VerifierInfo]


class ErrorBody(BaseModel):
    """Every 4xx/5xx body. `detail` names the offending fields for validation errors."""

    error: str
    message: str
    detail: Any = None
