"""The options and references of the judge verifiers (validated before a request is accepted:
a bad rubric or label set is a 422, never a verdict)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from referee.judges import Sampling
from referee.verifiers.judge.parsers import normalise_choice
from referee.verifiers.short_answer import Extraction

DEFAULT_LABELS = {"correct": 1.0, "partially_correct": 0.5, "incorrect": 0.0}
_LABEL = r"^[A-Za-z][A-Za-z0-9_ \-]{0,39}$"


class SamplingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=8192, description="The judge's reply, reasoning included.")
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: int | None = 0

    def to_contract(self) -> Sampling:
        return Sampling(self.temperature, self.max_tokens, self.top_p, self.seed)


class JudgeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    endpoint: str = Field(
        default="default",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$",
        description="A judge endpoint configured in the service (REFEREE_JUDGE_ENDPOINTS), by name.",
    )
    model: str | None = Field(
        default=None, min_length=1, max_length=200, description="The model to ask; default: the endpoint's."
    )
    sampling: SamplingOptions = Field(default_factory=SamplingOptions)
    extract: Extraction = Field(
        default="final", description="The part of the response the judge sees (as `exact`'s extract)."
    )
    max_response_chars: int = Field(
        default=20_000, ge=200, le=400_000, description="Longer responses are cut in the middle."
    )


class EquivalenceOptions(JudgeOptions):
    template: Literal["equivalence"] = "equivalence"
    extract: Extraction = Field(
        default="auto",
        description="The part of the response the judge sees: auto = the <answer>, \\boxed{} or answer line, else the final part.",
    )


class RubricOptions(JudgeOptions):
    template: Literal["rubric_yes_no", "rubric_score"] = Field(
        default="rubric_yes_no",
        description="rubric_yes_no: each criterion met (1) or not (0); rubric_score: 0..10, scaled to 0..1.",
    )


class PairwiseOptions(JudgeOptions):
    template: Literal["pairwise"] = "pairwise"
    inconsistent: Literal["tie", "mean", "error"] = Field(
        default="tie",
        description="When the two orders disagree (position bias): tie = 0.5, mean = the mean of "
        "the two outcomes, error = an error verdict (masked).",
    )


def _checked_labels(labels: dict[str, float]) -> dict[str, float]:
    if len({normalise_choice(label) for label in labels}) != len(labels):
        raise ValueError("labels must differ in more than case, spaces and hyphens")
    return labels


Labels = dict[str, float]


class LabelOptions(JudgeOptions):
    template: Literal["label"] = "label"
    labels: Labels = Field(
        default_factory=lambda: dict(DEFAULT_LABELS),
        min_length=2,
        max_length=20,
        description="Each label the judge may give and its score in [0, 1]; a reference's labels win.",
    )

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: Labels) -> Labels:
        return _checked_labels(_valid_labels(labels))


def _valid_labels(labels: Labels) -> Labels:
    for label, score in labels.items():
        if not re.fullmatch(_LABEL, label):
            raise ValueError(f"label {label!r}: letters, digits, _, - and spaces, at most 40")
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"label {label!r}: its score must be in [0, 1]")
    return labels


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    criterion: str = Field(min_length=1, max_length=4000)
    weight: float = Field(default=1.0, gt=0.0, le=1e6)


class RubricReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    criteria: list[Criterion] = Field(min_length=1, max_length=32)
    reference: str | None = Field(default=None, max_length=100_000)


class LabelReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reference: str | None = Field(default=None, max_length=100_000)
    labels: Labels | None = Field(default=None, min_length=2, max_length=20)

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: Labels | None) -> Labels | None:
        return None if labels is None else _checked_labels(_valid_labels(labels))


class PairwiseReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline: str = Field(min_length=1, max_length=100_000, description="The answer to compare with.")
    criterion: str | None = Field(
        default=None, min_length=1, max_length=4000, description="What makes an answer better."
    )
