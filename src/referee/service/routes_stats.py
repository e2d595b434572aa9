"""`GET /v1/stats/prompts` and `GET /v1/stats/verifiers`, and the recording of prompt visits.

Prompt ids are the caller's: each key sees (and fills) its own namespace, so two teams that
both number their dataset rows 0, 1, 2 … do not mix. Verifier statistics are the service's
(every verdict of every caller), like `/metrics`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Annotated

from fastapi import APIRouter, Query

from referee.errors import DomainError, ErrorKind
from referee.models import GroupResult, GroupSpec, PromptFilter, PromptStatsPage, VerifierStatsPage
from referee.service.deps import CLIENT, OwnerDep, StatsDep
from referee.service.errors import documented
from referee.stats import Statistics

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


def record_groups(
    stats: Statistics | None, owner: Hashable, specs: Sequence[GroupSpec], results: Sequence[GroupResult]
) -> None:
    """One visit per scored group that names its prompt."""
    if stats is None:
        return
    label = owner_label(owner)
    for spec, result in zip(specs, results, strict=True):
        if spec.prompt_id is not None:
            stats.record_visit(label, spec.prompt_id, result.rewards, result.zero_variance)


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
    stats: StatsDep,
    minutes: Annotated[int, Query(ge=1, le=7 * 1440, description="The window, up to now.")] = 60,
) -> VerifierStatsPage:
    """Per verifier over the last `minutes`: verdicts, error rate, pass rate, mean score,
    latency p50/p99/max, and the same per minute (the series behind the dashboard's charts)."""
    return _enabled(stats).verifier_page(minutes)
