"""What the sync and async clients share: request building, response parsing, errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from referee.models import (
    AdvantageConfig,
    BatchScoreResponse,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    OnInvalid,
    OpenRLHFRequest,
    OpenRLHFResponse,
    PromptFilter,
    PromptStatsPage,
    ScoreRequest,
    Verdict,
    VerifierInfo,
    VerifierList,
    VerifierStatsPage,
)

DEFAULT_URL = "http://127.0.0.1:8000"


class RefereeError(Exception):
    """Base class of the client's errors."""


class RefereeHTTPError(RefereeError):
    """The service answered with an error status. `error`, `message`, `detail` are its JSON body."""

    def __init__(self, status_code: int, error: str, message: str, detail: Any = None) -> None:
        super().__init__(f"{status_code} {error}: {message}")
        self.status_code = status_code
        self.error = error
        self.message = message
        self.detail = detail


class RefereeUnavailable(RefereeError):
    """The service could not be reached for the client's whole patience (or retries), or did
    not answer within the timeout; a service that keeps answering 429/502/503/504 raises
    `RefereeHTTPError` with that status instead. The message says how long it waited."""


def error_code(response: httpx.Response) -> str | None:
    """The `error` field of an error body (None when the body is not Referee's JSON)."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


def raise_for_error(response: httpx.Response, note: str | None = None) -> None:
    """Raise `RefereeHTTPError` for an error status; `note` (how long the client waited for a
    better answer) is added to its message."""
    if response.status_code < 400:
        return
    try:
        body = response.json()
        if not isinstance(body, dict):
            raise ValueError("not an error object")
        error, message, detail = body.get("error", "http_error"), body.get("message", ""), body.get("detail")
    except ValueError:
        error, message, detail = "http_error", response.text[:500], None
    raise RefereeHTTPError(response.status_code, error, f"{message} ({note})" if note else message, detail)


def score_payload(
    verifier: str, response: str, reference: Any = None, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return ScoreRequest(
        verifier=verifier, response=response, reference=reference, options=dict(options or {})
    ).model_dump(mode="json")


def batch_payload(items: Sequence[ScoreRequest | Mapping[str, Any]]) -> dict[str, Any]:
    parsed = [i if isinstance(i, ScoreRequest) else ScoreRequest.model_validate(i) for i in items]
    return {"items": [i.model_dump(mode="json") for i in parsed]}


def groups_request(
    groups: Sequence[GroupSpec | Mapping[str, Any]] | GroupsRequest,
    advantage: AdvantageConfig | None = None,
    on_invalid: OnInvalid = "reject",
) -> GroupsRequest:
    if isinstance(groups, GroupsRequest):
        return groups
    parsed = [g if isinstance(g, GroupSpec) else GroupSpec.model_validate(g) for g in groups]
    return GroupsRequest(groups=parsed, advantage=advantage or AdvantageConfig(), on_invalid=on_invalid)


def chunk_body(request: GroupsRequest, chunk: list[GroupSpec]) -> dict[str, Any]:
    return request.model_copy(update={"groups": chunk}).model_dump(mode="json")


def parse_verdict(response: httpx.Response) -> Verdict:
    return Verdict.model_validate_json(response.content)


def parse_batch(response: httpx.Response) -> list[Verdict]:
    return BatchScoreResponse.model_validate_json(response.content).verdicts


def parse_groups(response: httpx.Response) -> GroupsResponse:
    return GroupsResponse.model_validate_json(response.content)


def parse_verifiers(response: httpx.Response) -> list[VerifierInfo]:
    return VerifierList.model_validate_json(response.content).verifiers


def prompt_stats_params(filter: PromptFilter | str, last: int, limit: int, offset: int) -> dict[str, Any]:
    """The query of `GET /v1/stats/prompts`; an unknown filter name fails here (ValueError),
    before a request is made. The ranges are the service's to check (a 422 names them)."""
    return {"filter": PromptFilter(filter).value, "last": last, "limit": limit, "offset": offset}


OPENRLHF_PATH = "/v1/openrlhf/reward"


def openrlhf_payload(request: OpenRLHFRequest | Mapping[str, Any]) -> dict[str, Any]:
    parsed = request if isinstance(request, OpenRLHFRequest) else OpenRLHFRequest.model_validate(request)
    return parsed.model_dump(mode="json", exclude_none=True)


def parse_openrlhf(response: httpx.Response) -> OpenRLHFResponse:
    return OpenRLHFResponse.model_validate_json(response.content)


def parse_prompt_stats(response: httpx.Response) -> PromptStatsPage:
    return PromptStatsPage.model_validate_json(response.content)


def parse_verifier_stats(response: httpx.Response) -> VerifierStatsPage:
    return VerifierStatsPage.model_validate_json(response.content)


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
