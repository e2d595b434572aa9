"""The one contract shared by the service, the client and the trainer adapters.

Every request and response body of the HTTP API is one of these pydantic models (one module
per part of the API, every name importable from `referee.models`); the client parses
responses with them and the adapters build requests with them, so a change here is a change
of the public API. The one body defined elsewhere is an audit job's (`AuditJob`, beside its
route), because it embeds the audit's report model.
"""

from referee.models.common import ErrorBody, JSONObject, StrictModel
from referee.models.scoring import (
    AdvantageConfig,
    BatchScoreRequest,
    BatchScoreResponse,
    GroupResult,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    OnInvalid,
    ScoreBody,
    ScoreRequest,
    Verdict,
    VerdictStatus,
    VerifierComponent,
)
from referee.models.service import (
    AUDIT_MAX_ROWS,
    AuditComponent,
    AuditRequest,
    AuditRow,
    OpenRLHFRequest,
    OpenRLHFResponse,
    Readiness,
)
from referee.models.stats import (
    Histogram,
    PromptFilter,
    PromptStat,
    PromptStatsPage,
    VerifierMinute,
    VerifierStat,
    VerifierStatsPage,
)
from referee.models.verifiers import (
    REGISTERED_NAME_PATTERN,
    DisableResponse,
    ProbeGateRequest,
    RegisteredKind,
    RegisterExample,
    RegisterRequest,
    RegisterResponse,
    VerifierExample,
    VerifierInfo,
    VerifierList,
    VersionInfo,
    VersionList,
)

__all__ = [
    "AUDIT_MAX_ROWS",
    "REGISTERED_NAME_PATTERN",
    "AdvantageConfig",
    "AuditComponent",
    "AuditRequest",
    "AuditRow",
    "BatchScoreRequest",
    "BatchScoreResponse",
    "DisableResponse",
    "ErrorBody",
    "GroupResult",
    "GroupSpec",
    "GroupsRequest",
    "GroupsResponse",
    "Histogram",
    "JSONObject",
    "OnInvalid",
    "OpenRLHFRequest",
    "OpenRLHFResponse",
    "ProbeGateRequest",
    "PromptFilter",
    "PromptStat",
    "PromptStatsPage",
    "Readiness",
    "RegisterExample",
    "RegisterRequest",
    "RegisterResponse",
    "RegisteredKind",
    "ScoreBody",
    "ScoreRequest",
    "StrictModel",
    "Verdict",
    "VerdictStatus",
    "VerifierComponent",
    "VerifierExample",
    "VerifierInfo",
    "VerifierList",
    "VerifierMinute",
    "VerifierStat",
    "VerifierStatsPage",
    "VersionInfo",
    "VersionList",
]
