"""`GET /v1/stats/prompts[/{prompt_id}]`, `GET /v1/stats/verifiers`, `GET /v1/stats/health`,
and the recording of groups (per verifier) and prompt visits. The dashboard's charts are drawn
from these same pages.

Prompt ids are the caller's: each key sees (and fills) its own namespace, so two teams that
both number their dataset rows 0, 1, 2 … do not mix. Verifier statistics are the service's
(every verdict of every caller), like `/metrics`; training traffic apart from the verdicts of
audits and registrations (`traffic=`). With a store shared by replicas (REFEREE_DB_URL) the
verifier figures and the health page's HTTP answers are every replica's (`scope=all`, the
default then; `scope=replica`: the answering one's), with the replicas they come from; prompt
statistics and the health page's workers, sandbox and lanes are the answering replica's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Annotated

from fastapi import APIRouter, Path, Query

from referee.errors import DomainError, ErrorKind
from referee.judges import JudgeClients
from referee.models import (
    GroupResult,
    GroupSpec,
    HealthPage,
    JudgeEndpointHealth,
    JudgeHealth,
    LaneHealth,
    PromptDetail,
    PromptFilter,
    PromptStatsPage,
    SandboxHealth,
    ScopeKind,
    Traffic,
    VerifierStatsPage,
    WorkerHealth,
)
from referee.runtime import Runtime
from referee.sandbox import SandboxPool
from referee.service.deps import CLIENT, OwnerDep, RuntimeDep, StatsDep
from referee.service.errors import documented
from referee.stats import ScopedStats, Snapshot, Statistics

WindowMinutes = Annotated[int, Query(ge=1, le=7 * 1440, description="The window, up to now.")]
StepMinutes = Annotated[
    int,
    Query(ge=1, le=1440, description="Minutes per step of each series (a day in steps of 15 stays light)."),
]

Scope = Annotated[
    ScopeKind | None,
    Query(
        description="all: every replica's figures through the shared store (the default when one is "
        "configured); replica: the answering replica's own."
    ),
]

stats_router = APIRouter(prefix="/v1/stats", tags=["statistics"], dependencies=CLIENT)


def owner_label(owner: Hashable) -> str:
    """The stored name of a caller: a prefix of its key's SHA-256 (never the key), or `open`."""
    if isinstance(owner, bytes):
        return "key:" + owner.hex()[:16]
    return "open" if owner is None else str(owner)


def _enabled(stats: Statistics | None) -> Statistics:
    if stats is None:
        raise DomainError(
            ErrorKind.not_found,
            "statistics_disabled",
            "statistics are switched off on this service (REFEREE_STATS=false)",
        )
    return stats


def _scoped(runtime: Runtime) -> ScopedStats:
    _enabled(runtime.stats)
    assert runtime.scoped_stats is not None  # made whenever statistics are on
    return runtime.scoped_stats


def _version(name: str, result: GroupResult) -> str:
    """The `name@version` that judged a group, from its verdicts ("" for a component of a
    weighted group, whose verdicts carry the combination's name)."""
    qualified = result.verdicts[0].verifier if result.verdicts else ""
    return qualified if qualified.startswith(f"{name}@") else ""


def record_groups(
    stats: Statistics | None, owner: Hashable, specs: Sequence[GroupSpec], results: Sequence[GroupResult]
) -> None:
    """One group per verifier it used, and one visit per scored group that names its prompt."""
    if stats is None:
        return
    label = owner_label(owner)
    for spec, result in zip(specs, results, strict=True):
        for component in spec.components():
            stats.observe_group(component.name, _version(component.name, result), result.rewards)
        if spec.prompt_id is not None:
            reasons = [v.reason for v in result.verdicts]
            stats.record_visit(label, spec.prompt_id, result.rewards, reasons)


# The steps the dashboard's ranges use: a few dozen points per chart at most.
def default_step(minutes: int) -> int:
    """Minutes per step for a window: 1 up to an hour, 5 up to 6 hours, 15 beyond."""
    return 1 if minutes <= 60 else 5 if minutes <= 360 else 15


def judge_health(judges: JudgeClients | None) -> JudgeHealth | None:
    """The judge endpoints now (breaker, calls by outcome, tokens) and the verdict cache's hits;
    None when no endpoint is configured."""
    if judges is None:
        return None
    endpoints = []
    for name, now in judges.health().items():
        calls = {outcome: n for (endpoint, outcome), n in sorted(judges.calls.items()) if endpoint == name}
        endpoints.append(
            JudgeEndpointHealth(
                name=name,
                model=now["model"],
                state=now["state"],
                in_flight=now["in_flight"],
                calls=calls,
                prompt_tokens=judges.tokens[(name, "prompt")],
                completion_tokens=judges.tokens[(name, "completion")],
            )
        )
    totals: dict[str, int] = {}
    for (_, outcome), n in sorted(judges.calls.items()):
        totals[outcome] = totals.get(outcome, 0) + n
    cache = judges.cache
    return JudgeHealth(
        endpoints=endpoints,
        calls=totals,
        failed_calls=sum(n for outcome, n in totals.items() if outcome != "ok"),
        cache_hits=cache.hits,
        cache_misses=cache.misses,
        cache_hit_rate=cache.hit_rate(),
        cache_entries=len(cache),
    )


def health_page(
    runtime: Runtime, snapshot: Snapshot, minutes: int, step_minutes: int, now_minute: int
) -> HealthPage:
    """The workers, the sandbox pool, the admission lanes and the judge endpoints now (this
    replica's, as in /readyz), and the API's HTTP answers over the window (the snapshot's
    replicas)."""
    pool = runtime.pool
    sandbox = runtime.resources.sandbox
    if sandbox is None:
        sandbox_health = SandboxHealth(enabled=False, ok=False, reason="sandbox disabled")
    else:
        ok, reason = sandbox.health()
        sandbox_health = SandboxHealth(enabled=True, ok=ok, reason=reason)
        if isinstance(sandbox, SandboxPool):
            ready = sandbox.readiness()
            sandbox_health = sandbox_health.model_copy(
                update={
                    "warm": ready["warm"],
                    "starting": ready["starting"],
                    "running": ready["busy"],
                    "queued": sandbox.queued,
                    "started": sandbox.stats["started"],
                    "discarded": sandbox.stats["removed"] + sandbox.stats["found_dead"],
                    "reused": sandbox.stats["reused"],
                }
            )
    minutes = min(minutes, snapshot.window_minutes)
    return HealthPage(
        minutes=minutes,
        step_minutes=step_minutes,
        workers=WorkerHealth(
            ok=pool.alive(),
            size=pool.size,
            pending=pool.pending,
            timeouts=pool.timeouts,
            crashes=pool.crashes,
        ),
        sandbox=sandbox_health,
        lanes={
            lane: LaneHealth(
                in_flight=figures["in_flight"],
                rate_per_s=figures["rate_per_s"],
                wait_s=figures["wait_s"],
                refused=int(figures["refused"]),
                background=figures.get("background", 0.0),
            )
            for lane, figures in runtime.admission.snapshot().items()
        },
        http=snapshot.http_page(minutes, step_minutes, now_minute=now_minute),
        scope=snapshot.scope,
        judges=judge_health(runtime.judges),
    )


@stats_router.get(
    "/prompts",
    response_model=PromptStatsPage,
    responses=documented(401, 404, 422, 429),
    operation_id="prompt_stats",
)
async def prompt_stats(
    stats: StatsDep,
    owner: OwnerDep,
    filter: Annotated[PromptFilter, Query(description="Which prompts to list.")] = PromptFilter.all,
    last: Annotated[
        int, Query(ge=1, le=1000, description="K: the filter must hold for the latest K visits in a row.")
    ] = 1,
    limit: Annotated[int, Query(ge=0, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> PromptStatsPage:
    """The caller's prompts, most recently seen first: attempts, pass rate, zero-variance
    visits, streaks; with the difficulty histogram and the zero-variance share of all of them.
    `filter=always_solved&last=3`: prompts every sample of which passed in each of the last 3
    visits (what DAPO's dynamic sampling drops); `never_solved`, `zero_variance` likewise."""
    return _enabled(stats).prompt_page(owner_label(owner), filter, last, limit, offset)


@stats_router.get(
    "/verifiers",
    response_model=VerifierStatsPage,
    responses=documented(401, 404, 422, 429),
    operation_id="verifier_stats",
)
async def verifier_stats(
    runtime: RuntimeDep,
    minutes: WindowMinutes = 60,
    step: StepMinutes = 1,
    traffic: Annotated[
        Traffic,
        Query(
            description="training (default): scoring and groups; audit, registration: the service's own checks."
        ),
    ] = Traffic.training,
    scope: Scope = None,
) -> VerifierStatsPage:
    """Per verifier over the last `minutes`: verdicts, error rate, pass rate, mean score
    (mean reward), latency p50/p99/max, groups and their zero-variance share, per version
    (`name@version`), and the same per step (the series behind the dashboard's charts).
    Audits' and registrations' verdicts are counted apart (`traffic`), never in training's.
    `scope` says which replicas the figures come from; over several, each verifier lists its
    figures per replica (`replicas`). If the shared store cannot be read, the page is this
    replica's, and `scope.reason` says why."""
    scoped = _scoped(runtime)
    snapshot = await scoped.snapshot(minutes, scope)
    return snapshot.verifier_page(minutes, step, traffic, now_minute=scoped.now_minute())


@stats_router.get(
    "/prompts/{prompt_id:path}",
    response_model=PromptDetail,
    responses=documented(401, 404, 422, 429),
    operation_id="prompt_detail",
)
async def prompt_detail(
    stats: StatsDep, owner: OwnerDep, prompt_id: Annotated[str, Path(min_length=1, max_length=200)]
) -> PromptDetail:
    """One of the caller's prompts: its record, its latest visits (time, pass rate; up to 8)
    and its latest responses' verdict reasons (up to 3). 404 `unknown_prompt` if the caller
    has no record of it (another key's prompt included)."""
    detail = _enabled(stats).prompt_detail(owner_label(owner), prompt_id)
    if detail is None:
        raise DomainError(ErrorKind.not_found, "unknown_prompt", f"no statistics of prompt {prompt_id!r}")
    return detail


@stats_router.get(
    "/health",
    response_model=HealthPage,
    responses=documented(401, 404, 422, 429),
    operation_id="health_stats",
)
async def health_stats(
    runtime: RuntimeDep,
    minutes: WindowMinutes = 60,
    step: StepMinutes = 1,
    scope: Scope = None,
) -> HealthPage:
    """This replica now: worker processes, the sandbox pool (warm, running, discarded), the
    admission lanes (in flight, expected wait, 503s) and, when judge endpoints are configured,
    `judges`: each endpoint's breaker, calls by outcome and tokens, and the verdict cache's hits,
    misses and hit rate; and over the window, the API's HTTP answers per step: requests, 4xx,
    5xx, 503 (the dashboard's own pages left out), of the replicas `scope` lists (every
    replica's through the shared store, by default, when one is configured)."""
    scoped = _scoped(runtime)
    snapshot = await scoped.snapshot(minutes, scope)
    return health_page(runtime, snapshot, minutes, step, scoped.now_minute())
