"""HTTP routes. Thin: parse, call the Scorer, shape the response."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from referee.models import (
    AdvantageConfig,
    BatchScoreRequest,
    BatchScoreResponse,
    ErrorBody,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    ScoreBody,
    Verdict,
    VerifierExample,
    VerifierInfo,
    VerifierList,
)
from referee.registered.catalog import Catalog
from referee.scoring.engine import Scorer
from referee.service.auth import require_client
from referee.service.errors import error_response
from referee.service.metrics import Metrics
from referee.trainer_adapter.openrlhf import OpenRLHFRequest, OpenRLHFResponse, openrlhf_rewards
from referee.trainer_adapter.rewarder import GroupRewarder
from referee.verifiers.base import Verifier

router = APIRouter()

_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown verifier"},
    413: {"model": ErrorBody, "description": "Body too large"},
    422: {"model": ErrorBody, "description": "Invalid request; `detail` names the fields"},
    503: {"model": ErrorBody, "description": "Overloaded; retry after the Retry-After header"},
}


def get_scorer(request: Request) -> Scorer:
    scorer: Scorer = request.app.state.scorer
    return scorer


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def get_catalog(request: Request) -> Catalog:
    catalog: Catalog = request.app.state.catalog
    return catalog


ScorerDep = Annotated[Scorer, Depends(get_scorer)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
# Scoring and catalog reads need an API or admin key once keys are configured.
_CLIENT = [Depends(require_client)]


@router.post(
    "/v1/score",
    response_model=Verdict | BatchScoreResponse,
    responses=_ERRORS,
    tags=["scoring"],
    dependencies=_CLIENT,
)
async def score(body: Annotated[ScoreBody, Body()], scorer: ScorerDep) -> Verdict | BatchScoreResponse:
    """Score one response, or a batch of independent items (`{"items": [...]}`)."""
    if isinstance(body, BatchScoreRequest):
        return BatchScoreResponse(verdicts=await scorer.score_items(body.items, batch=True))
    (verdict,) = await scorer.score_items([body], batch=False)
    return verdict


@router.post(
    "/v1/groups", response_model=GroupsResponse, responses=_ERRORS, tags=["scoring"], dependencies=_CLIENT
)
async def groups(body: GroupsRequest, scorer: ScorerDep) -> GroupsResponse:
    """Score whole GRPO groups: verdicts, rewards and group-relative advantages."""
    return GroupsResponse(groups=await scorer.score_groups(body.groups, body.advantage))


def verifier_info(verifier: Verifier, kind: str) -> VerifierInfo:
    return VerifierInfo(
        name=verifier.name,
        version=verifier.version,
        description=verifier.description,
        reference_schema=verifier.reference_adapter().json_schema(),
        options_schema=verifier.options_model.model_json_schema(),
        score_range=verifier.score_range,
        example=VerifierExample.model_validate(verifier.example),
        kind=kind,
    )


@router.get("/v1/verifiers", response_model=VerifierList, tags=["verifiers"], dependencies=_CLIENT)
async def list_verifiers(scorer: ScorerDep, catalog: CatalogDep) -> VerifierList:
    """Built-ins, then registered types (kind declarative/python/webhook, latest version)."""
    registry = scorer.registry
    builtin = [verifier_info(v, registry.kind(v.name)) for v in registry]
    return VerifierList(verifiers=builtin + [verifier_info(v, catalog.kind(v)) for v in catalog.registered()])


@router.get(
    "/v1/verifiers/{name}",
    response_model=VerifierInfo,
    responses=_ERRORS,
    tags=["verifiers"],
    dependencies=_CLIENT,
)
async def get_verifier(name: str, catalog: CatalogDep) -> VerifierInfo:
    """One verifier; `name@N` pins a registered type's version."""
    verifier = catalog.resolve(name)
    return verifier_info(verifier, catalog.kind(verifier))


class _InProcessScorer:
    """The GroupScorer protocol of the trainer adapters, served by this process's Scorer."""

    def __init__(self, scorer: Scorer) -> None:
        self._scorer = scorer

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None
    ) -> GroupsResponse:
        return GroupsResponse(groups=await self._scorer.score_groups(groups, advantage or AdvantageConfig()))


@router.post(
    "/v1/openrlhf/reward",
    response_model=OpenRLHFResponse,
    responses=_ERRORS,
    tags=["adapters"],
    dependencies=_CLIENT,
)
async def openrlhf_reward(
    payload: OpenRLHFRequest,
    scorer: ScorerDep,
    verifier: str = "exact",
    on_error: Literal["fail", "zero"] = "fail",
) -> OpenRLHFResponse | JSONResponse:
    """OpenRLHF's remote reward protocol (`--remote_rm_url .../v1/openrlhf/reward`).

    Each label is a JSON object string `{"verifier", "reference", "options"?}`, or a plain
    reference judged by `?verifier=`. OpenRLHF needs a number for every sample, so a batch with
    a sample that has no verdict is refused with 503 (OpenRLHF retries) unless `on_error=zero`
    is asked for, which reports those samples in `extra_logs.referee_error`.
    """
    rewarder = GroupRewarder(_InProcessScorer(scorer))
    result = await openrlhf_rewards(payload, rewarder, default_verifier=verifier)
    failed = [i for i, flag in enumerate(result.extra_logs.get("referee_error", [])) if flag]
    if failed and on_error == "fail":
        return error_response(
            503,
            "no_verdict",
            f"{len(failed)} of {len(payload.query)} samples got no verdict; refusing to send fake rewards",
            {"samples": failed[:100]},
            **{"Retry-After": "5"},
        )
    return result


@router.get("/livez", tags=["health"])
async def livez() -> dict[str, str]:
    return {"status": "alive"}


@router.get("/readyz", tags=["health"])
async def readyz(request: Request, scorer: ScorerDep) -> JSONResponse:
    """Ready when the worker pool runs; the sandbox is reported (code verdicts need it) but
    does not make the service unready: every other verifier keeps working without it."""
    checks: dict[str, dict[str, Any]] = {
        "workers": {"ok": scorer.pool.alive(), "size": scorer.pool.size, "pending": scorer.pool.pending}
    }
    sandbox = scorer.resources.get("sandbox")
    if sandbox is not None:
        ok, reason = sandbox.health()
        checks["sandbox"] = {"ok": ok, "reason": reason}
    else:
        checks["sandbox"] = {"ok": False, "reason": "sandbox disabled"}
    ready = checks["workers"]["ok"]
    return JSONResponse(status_code=200 if ready else 503, content={"ready": ready, "checks": checks})


@router.get("/metrics", tags=["health"])
async def metrics(request: Request) -> Response:
    return Response(generate_latest(get_metrics(request).registry), media_type=CONTENT_TYPE_LATEST)
