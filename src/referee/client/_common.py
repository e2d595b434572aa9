"""What the sync and async clients share: request building, response parsing, retry policy."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from referee.models import (
    AdvantageConfig,
    BatchScoreResponse,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    OnInvalid,
    PromptFilter,
    PromptStatsPage,
    ScoreRequest,
    Verdict,
    VerifierInfo,
    VerifierList,
    VerifierStatsPage,
)

DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = frozenset({429, 503})
# Transport failures where the request was not (completely) processed. A read timeout is not
# retried: the service is still working on the request, and a retry would double its load.
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
    httpx.PoolTimeout,
)


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
    """The service could not be reached after all retries (a service that stays overloaded
    raises `RefereeHTTPError` with status 503 or 429 instead)."""


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff_s: float = 0.25
    max_backoff_s: float = 8.0
    # A 503 "overloaded" (a lane's queue is over its bound) is the service asking for patience,
    # not a failure: it is retried after its Retry-After for up to this long in total, so a
    # trainer's large batch waits its turn instead of failing the step.
    overload_patience_s: float = 900.0

    def next_wait(self, attempt: int, waited_s: float, response: httpx.Response) -> float | None:
        """Seconds to wait before retrying `response` (a 429/503), or None to give up."""
        retry_after = response.headers.get("Retry-After")
        if response.status_code == 503 and _error_code(response) == "overloaded":
            try:
                told = min(60.0, max(1.0, float(retry_after or 1)))
            except ValueError:
                told = 1.0
            wait = told * random.uniform(1.0, 1.25)  # spread the retries of many clients
            return wait if waited_s + wait <= self.overload_patience_s else None
        return self.delay(attempt, retry_after) if attempt < self.retries else None

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff_s, max(0.0, float(retry_after)))
            except ValueError:
                pass
        # Full jitter: many trainer ranks retrying in lockstep would hit the service together.
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))


def _error_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


def raise_for_error(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        body = response.json()
        error, message, detail = body.get("error", "http_error"), body.get("message", ""), body.get("detail")
    except ValueError:
        error, message, detail = "http_error", response.text[:500], None
    raise RefereeHTTPError(response.status_code, error, message, detail)


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


def parse_prompt_stats(response: httpx.Response) -> PromptStatsPage:
    return PromptStatsPage.model_validate_json(response.content)


def parse_verifier_stats(response: httpx.Response) -> VerifierStatsPage:
    return VerifierStatsPage.model_validate_json(response.content)


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
