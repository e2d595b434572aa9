"""HTTP routes. Thin: parse, call the Scorer, shape the response."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from referee.errors import DomainError, ErrorKind, InputError
from referee.grouping import ChunkPolicy, score_in_chunks
from referee.judges import JudgeClients
from referee.models import (
    AdvantageConfig,
    BatchScoreRequest,
    BatchScoreResponse,
    GroupResult,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    OpenRLHFRequest,
    OpenRLHFResponse,
    Readiness,
    ScoreBody,
    Verdict,
    VerdictStatus,
    VerifierExample,
    VerifierInfo,
    VerifierList,
)
from referee.sandbox import SandboxPool
from referee.service.deps import CLIENT, CatalogDep, MetricsDep, OwnerDep, ScorerDep, StatsDep
from referee.service.errors import documented
from referee.service.json_body import StrictJSONRoute
from referee.service.openrlhf import (
    is_invalid,
    openrlhf_response,
    openrlhf_verdicts,
)
from referee.service.routes_stats import record_groups
from referee.turns import Turns
from referee.verifiers import Verifier

router = APIRouter(route_class=StrictJSONRoute)

_SCORING_ERRORS = documented(401, 404, 413, 422, 429, 503)


@router.post(
    "/v1/score",
    response_model=Verdict | BatchScoreResponse,
    operation_id="score",
    responses=_SCORING_ERRORS,
    tags=["scoring"],
    dependencies=CLIENT,
)
async def score(
    body: Annotated[ScoreBody, Body()], scorer: ScorerDep, owner: OwnerDep
) -> Verdict | BatchScoreResponse:
    """Score one response, or a batch of independent items (`{"items": [...]}`)."""
    if isinstance(body, BatchScoreRequest):
        return BatchScoreResponse(verdicts=await scorer.score_items(body.items, batch=True, owner=owner))
    (verdict,) = await scorer.score_items([body], batch=False, owner=owner)
    return verdict


@router.post(
    "/v1/groups",
    response_model=GroupsResponse,
    responses=_SCORING_ERRORS,
    tags=["scoring"],
    dependencies=CLIENT,
)
async def groups(body: GroupsRequest, scorer: ScorerDep, stats: StatsDep, owner: OwnerDep) -> GroupsResponse:
    """Score whole GRPO groups: verdicts, rewards and group-relative advantages. A group with a
    `prompt_id` also counts as a visit of that prompt (GET /v1/stats/prompts)."""
    results = await scorer.score_groups(body.groups, body.advantage, body.on_invalid, owner=owner)
    record_groups(stats, owner, body.groups, results)
    return GroupsResponse(groups=results)


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


@router.get(
    "/v1/verifiers",
    response_model=VerifierList,
    responses=documented(401, 429),
    tags=["verifiers"],
    dependencies=CLIENT,
)
async def list_verifiers(scorer: ScorerDep, catalog: CatalogDep) -> VerifierList:
    """Installed verifiers (kind builtin/extra/plugin), then registered types (kind
    declarative/python/webhook/judge, latest active version)."""
    installed = scorer.installed
    builtin = [verifier_info(v, installed.kind(v.name)) for v in installed]
    return VerifierList(
        verifiers=builtin + [verifier_info(v, catalog.kind(v)) for v in await catalog.registered()]
    )


@router.get(
    "/v1/verifiers/{name}",
    response_model=VerifierInfo,
    responses=documented(401, 404, 429),
    tags=["verifiers"],
    dependencies=CLIENT,
)
async def get_verifier(name: str, catalog: CatalogDep) -> VerifierInfo:
    """One verifier; `name@N` pins a registered type's version."""
    await catalog.load([name])
    verifier = catalog.resolve(name)
    return verifier_info(verifier, catalog.kind(verifier))


# OpenRLHF sends a whole rollout batch in one request; scored in bounded chunks (as the
# trainer adapters do over HTTP) so it never hits the per-request group limit.
_OPENRLHF_MAX_RESPONSES = 2048


@router.post(
    "/v1/openrlhf/reward",
    response_model=OpenRLHFResponse,
    responses=documented(
        401,
        413,
        422,
        429,
        503,
        d503="Samples without a verdict (`no_verdict`, unless on_error=zero) or overloaded; retry after Retry-After",
    ),
    tags=["adapters"],
    dependencies=CLIENT,
)
async def openrlhf_reward(
    payload: OpenRLHFRequest,
    scorer: ScorerDep,
    stats: StatsDep,
    owner: OwnerDep,
    verifier: str = Query("exact", min_length=1, max_length=200),
    on_error: Literal["fail", "zero"] = "fail",
    strip_eos: bool = True,
    turns: str = Query("last", pattern=r"^(last|all|-?\d{1,4})$"),
) -> OpenRLHFResponse:
    """OpenRLHF's remote reward protocol (`--reward.remote_url '.../v1/openrlhf/reward?...'`).

    Each label (the dataset column `--data.label_key` names) is a JSON object string
    `{"verifier", "reference", "options"?}`, or a plain reference judged by `?verifier=`; a
    sample without one (`labels` omitted, null or "") is judged by `?verifier=` with no
    reference, which only a reference-free verifier (`format.*`) accepts. OpenRLHF needs a number for every sample, so a batch with
    a sample that has no verdict is refused with 503 (OpenRLHF retries) unless `on_error=zero`
    is asked for, which reports those samples in `extra_logs.referee_error`; when every such
    sample was sent wrong (a label, reference or verifier name that cannot be used) the batch
    is refused with 422 instead, since a retry would fail the same way. The
    end-of-sequence text OpenRLHF leaves on each response (`<|im_end|>`, `</s>`, ...) is
    stripped unless `strip_eos=false`. In a multi-turn episode the last assistant turn is
    judged (`turns=all`: all of them joined; `turns=k`: the k-th; the first is the one the
    prompt's trailing assistant header opened).
    """

    async def score_groups(specs: list[GroupSpec]) -> list[GroupResult]:
        async def score(chunk: list[GroupSpec]) -> list[GroupResult]:
            results = await scorer.score_groups(
                chunk, AdvantageConfig(), on_invalid="error_verdict", owner=owner
            )
            record_groups(stats, owner, chunk, results)
            return results

        policy = ChunkPolicy(scorer.limits.max_groups, _OPENRLHF_MAX_RESPONSES, max_concurrency=64)
        return await score_in_chunks(score, specs, policy)

    which: Turns = turns if turns in ("last", "all") else int(turns)
    verdicts = await openrlhf_verdicts(
        payload, score_groups, default_verifier=verifier, strip_eos=strip_eos, turns=which
    )
    if on_error == "fail":
        _refuse_failed_samples(verdicts)
    return openrlhf_response(verdicts)


def _refuse_failed_samples(verdicts: list[Verdict]) -> None:
    """A batch with samples without a verdict: 503 (retry) if any could not be judged now,
    else 422 naming the samples sent wrong (a retry would fail the same way)."""
    failed = [i for i, v in enumerate(verdicts) if v.status is VerdictStatus.error]
    if not failed:
        return
    transient = [i for i in failed if not is_invalid(verdicts[i])]
    if transient:
        raise DomainError(
            ErrorKind.unavailable,
            "no_verdict",
            f"{len(failed)} of {len(verdicts)} samples got no verdict; refusing to send fake rewards",
            {"samples": failed[:100]},
            retry_after_s=5,
        )
    raise InputError(
        [
            {
                "loc": ["body", "labels", i],
                "msg": verdicts[i].reason or "invalid input",
                "type": "invalid_sample",
            }
            for i in failed[:100]
        ]
    )


@router.get("/livez", tags=["health"])
async def livez() -> dict[str, str]:
    return {"status": "alive"}


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={
        503: {"model": Readiness, "description": "Not ready: the worker pool is down (being rebuilt)"}
    },
    tags=["health"],
)
async def readyz(scorer: ScorerDep, catalog: CatalogDep) -> JSONResponse:
    """Ready when the worker pool runs; the sandbox is reported (code verdicts need it) but
    does not make the service unready: every other verifier keeps working without it."""
    checks: dict[str, dict[str, Any]] = {
        "workers": {
            "ok": scorer.pool.alive(),
            "size": scorer.pool.size,
            "pending": scorer.pool.pending,
            "rebuilds": scorer.pool.rebuilds,
        }
    }
    sandbox = scorer.resources.sandbox
    if sandbox is not None:
        ok, reason = sandbox.health()
        checks["sandbox"] = {"ok": ok, "reason": reason}
        if isinstance(sandbox, SandboxPool):  # live warm containers only, and whether refilling
            checks["sandbox"].update(sandbox.readiness())
    else:
        checks["sandbox"] = {"ok": False, "reason": "sandbox disabled"}
    # Reported, not deciding: scoring (registered types included) goes on while the registry
    # cannot take writes; registrations get 503 + Retry-After meanwhile.
    registry_ok, registry_reason = catalog.store.health()
    checks["registry"] = {"ok": registry_ok, "reason": registry_reason}
    # Reported, not deciding: a judge endpoint that is down fails judge verdicts (masked) only.
    judges = scorer.resources.judges
    if isinstance(judges, JudgeClients):
        endpoints = judges.health()
        checks["judges"] = {"ok": all(e["ok"] for e in endpoints.values()), "endpoints": endpoints}
    ready = checks["workers"]["ok"]
    content = {"ready": ready, "checks": checks, "lanes": scorer.admission.snapshot()}
    return JSONResponse(status_code=200 if ready else 503, content=content)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}}}},
    tags=["health"],
)
async def metrics(metrics: MetricsDep) -> Response:
    """Prometheus text exposition format."""
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)
