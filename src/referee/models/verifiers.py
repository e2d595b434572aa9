"""The verifier catalog: `GET /v1/verifiers`, and registering types (`POST /v1/verifiers`,
versions, `DELETE`)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from referee.models.common import JSONObject, StrictModel


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


# ---- registered types -------------------------------------------------------------------

RegisteredKind = Literal["declarative", "python", "webhook", "judge"]
# One pattern for every registered name: no upper case, no leading, trailing or doubled
# separator, so no name can pose as another (`MATH`, `math.`) by its spelling.
REGISTERED_NAME_PATTERN = r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$"


class RegisterExample(StrictModel):
    response: str
    reference: Any = None
    options: dict[str, Any] = Field(default_factory=dict)
    expected_score: float

    @field_validator("expected_score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("expected_score must be finite")
        return value


class ProbeGateRequest(StrictModel):
    """Opt into the audit's probe battery as part of the activation gate (after the examples)."""

    battery: str = Field(
        max_length=100,
        description=(
            "A probe battery of the verifier audit: `math`, `numeric`, `exact`, `multiple_choice`, "
            "`format.think_answer`, `format.tag_count`, `code`, `logic.<puzzle>`, `judge` (a model "
            "judge's battery, built from the examples; judge types always run it), or `generic` "
            "(only the empty, whitespace and grader-injection probes); 422 names the known ones."
        ),
    )
    reference_field: str | None = Field(
        default=None,
        max_length=200,
        pattern=r"^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$",
        description=(
            "Where the battery's reference goes in this type's reference (a dotted path such as "
            "`answer`): each probe's reference is then a copy of the reference of the example with "
            "the highest expected_score, with that field set to the battery's reference. Omitted: "
            "the battery's reference is used as it is (`42` for `math`)."
        ),
    )


class RegisterRequest(StrictModel):
    name: str = Field(
        max_length=100,
        pattern=REGISTERED_NAME_PATTERN,
        description=(
            "Lower-case letters and digits in parts joined by single `.`, `_` or `-` "
            "(`r1.math`, `house-style`); unique ignoring case, built-in names included. "
            "`@` is reserved for versions."
        ),
    )
    kind: RegisteredKind
    spec: dict[str, Any]
    description: str = Field(default="", max_length=2000)
    reference_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema every request's reference must match (422 otherwise)."
    )
    examples: list[RegisterExample] = Field(
        min_length=1, description="The activation gate: each must reproduce its expected_score."
    )
    probes: ProbeGateRequest | None = Field(
        default=None,
        description=(
            "Also gate on a probe battery: every reward-hacking probe of it must score 0 (or its "
            "battery's cap), else 422 `probes_failed`. Omitted: no probes run."
        ),
    )


class VersionInfo(BaseModel):
    name: str
    version: int
    kind: RegisteredKind
    digest: str = Field(
        description="SHA-256 of what decides verdicts: kind, spec, reference schema (never a secret)."
    )
    description: str
    spec: dict[str, Any]
    reference_schema: dict[str, Any] | None
    examples: list[RegisterExample]
    created_at: float
    disabled_at: float | None
    active: bool


class RegisterResponse(BaseModel):
    created: bool = Field(description="False when the latest version already had this content.")
    verifier: str = Field(description="name@version to pin")
    version: VersionInfo
    secret: str | None = Field(
        default=None, description="Webhook signing secret, returned once when the service generated it."
    )
    probes_passed: int | None = Field(
        default=None,
        description="Probes of the requested battery that passed (all of them); null when none were asked for.",
    )


class VersionList(BaseModel):
    name: str
    versions: list[VersionInfo]


class DisableResponse(BaseModel):
    name: str
    disabled: list[int] = Field(description="Versions disabled by this call (history is kept).")
