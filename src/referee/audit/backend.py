"""Where an audit's verdicts come from: a callable that scores groups.

`ScoreGroups` takes /v1/groups group specs and returns their results, verdict for verdict. Two
are provided: `in_process()` (the scoring engine with its own worker pool and, for `code`, its
own sandbox pool: an audit never competes with a service's scoring traffic) and `over_http()`
(a running service through `referee.client`, for types registered there, `name@N`). A service
that runs audits as background jobs passes a `ScoreGroups` over its own `Scorer` with an owner
key of its own, so the audit waits in its own admission budget.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from referee.client import AsyncClient
from referee.models import AdvantageConfig, GroupResult, GroupSpec
from referee.sandbox import SandboxPool, SandboxUnavailable
from referee.scoring import Scorer, WorkerPool
from referee.settings import Settings
from referee.verifiers import Resources, load_installed

ScoreGroups = Callable[[Sequence[GroupSpec]], Awaitable[list[GroupResult]]]


def scorer_backend(scorer: Scorer, owner: object = "audit") -> ScoreGroups:
    """Score through an existing `Scorer` (a service's), admitted under `owner`."""

    async def score(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        return await scorer.score_groups(groups, AdvantageConfig(), on_invalid="error_verdict", owner=owner)

    return score


@asynccontextmanager
async def in_process(settings: Settings | None = None) -> AsyncIterator[ScoreGroups]:
    """The built-in verifiers in this process: a worker pool of `settings.workers` processes and,
    when `settings.sandbox` is enabled, a sandbox pool started from it (needed by `code`)."""
    settings = settings or Settings(sandbox=False)
    installed = load_installed(settings.registry.extra_verifiers, plugins=settings.registry.load_plugins)
    pool = WorkerPool(settings.workers, installed)
    pool.start()
    sandbox_pool: SandboxPool | None = None
    try:
        if settings.sandbox.enabled:
            sandbox_pool = SandboxPool(settings.sandbox)
            await sandbox_pool.start()
            healthy, why = sandbox_pool.health()
            if not healthy:  # every code verdict would be an error: say so once, up front
                raise SandboxUnavailable(f"the code sandbox is unavailable: {why}")
        scorer = Scorer(settings.limits, settings.workers, installed, pool, Resources(sandbox=sandbox_pool))
        yield scorer_backend(scorer)
    finally:
        pool.close()
        if sandbox_pool is not None:
            await sandbox_pool.close()


def over_http(client: AsyncClient) -> ScoreGroups:
    """Score through a running service (its registered types too)."""

    async def score(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        return (await client.score_groups(list(groups), on_invalid="error_verdict")).groups

    return score
