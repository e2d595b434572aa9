"""The service's other bodies: readiness, OpenRLHF's remote reward protocol, audit jobs.

An audit job's body (`AuditJob`, `referee.service.routes_audits`) embeds the audit's own report
model, `referee.audit.AuditReport`, which is why it is defined beside its route.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

# Labelled rows one audit may take.
AUDIT_MAX_ROWS = 20_000


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, dict[str, Any]] = Field(
        description="workers (decides readiness); sandbox and registry (writes) reported"
    )
    lanes: dict[str, dict[str, float]] = Field(description="Admission per execution lane")


# ---- OpenRLHF (`POST /v1/openrlhf/reward`) -------------------------------------------------


class OpenRLHFRequest(BaseModel):
    # OpenRLHF versions add fields over time; unknown ones are ignored rather than rejected.
    model_config = ConfigDict(extra="ignore")

    query: list[str]
    prompts: list[str] | None = Field(default=None, description="One per query (as many entries).")
    labels: list[Any] | None = Field(
        default=None,
        description=(
            "One per query (as many entries): the reference, judged by `?verifier=`, or a JSON object "
            'string {"verifier", "reference", "options"}. Optional: a sample without a label (labels '
            'omitted, null or "", which OpenRLHF sends without --data.label_key) is judged by '
            "`?verifier=` with no reference, which a reference-free verifier (format.*) accepts and any "
            "other refuses (422, or referee_error with on_error=zero)."
        ),
    )

    @model_validator(mode="after")
    def _same_lengths(self) -> OpenRLHFRequest:
        for name in ("prompts", "labels"):
            value = getattr(self, name)
            if value is not None and len(value) != len(self.query):
                raise PydanticCustomError(
                    "length_mismatch",
                    "{name} has {got} entries but query has {want}",
                    {"name": name, "got": len(value), "want": len(self.query)},
                )
        return self


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]] = Field(default_factory=dict)


# ---- audits (`POST /v1/audits`) -------------------------------------------------------------


class AuditRow(BaseModel):
    """One labelled row: what the verifier should give `response` against `reference`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    response: str = Field(max_length=1 << 20)
    reference: Any = Field(
        description="As the verifier takes it (checked when scored: an invalid one is an error row)"
    )
    expected: float = Field(ge=0.0, le=1.0, description="The right score")
    category: str | None = Field(default=None, max_length=200)
    id: str | None = Field(default=None, max_length=200)
    task: str | None = Field(default=None, max_length=100, description="Fills `{task}` in the verifier name")


class AuditComponent(BaseModel):
    """A weighted term of the audited reward (as in /v1/groups), read strictly."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=200)
    weight: float = Field(default=1.0, ge=-1e6, le=1e6)
    options: dict[str, Any] = Field(default_factory=dict)


class AuditRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    verifier: (
        Annotated[str, Field(min_length=1, max_length=200)]
        | Annotated[list[AuditComponent], Field(min_length=1, max_length=16)]
    ) = Field(
        description="A verifier name (`math`, `name@2`, `logic.{task}` filled from each row's `task`) "
        "or weighted components."
    )
    rows: list[AuditRow] = Field(min_length=1, max_length=AUDIT_MAX_ROWS, description="The labelled rows.")
    probes: bool = Field(default=True, description="Also run the verifier kind's probe battery.")
