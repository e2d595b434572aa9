"""Where an audit's verdicts come from: a callable that scores groups.

`ScoreGroups` takes /v1/groups group specs and returns their results, verdict for verdict. Two
are provided: `in_process()` (the scoring engine with its own worker pool and, for `code`, its
own sandbox pool, and for judge verifiers clients of the judge endpoints the settings name: an
audit never competes with a service's scoring traffic) and `over_http()`
(a running service through `referee.client`, for types registered there, `name@N`). A service
that runs audits as background jobs passes a `ScoreGroups` over its own `Scorer`, admitted as
background work (a `BackgroundOwner`) and holding at most the audits' `BackgroundShare` of the
sandbox, so an audit never starves the service's scoring.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from contextlib import asynccontextmanager

from referee.client import AsyncClient
from referee.judges import JudgeClients
from referee.models import AdvantageConfig, GroupResult, GroupSpec
from referee.sandbox import SandboxPool, SandboxUnavailable
from referee.scoring import BackgroundShare, Scorer, WorkerPool
from referee.settings import Settings
from referee.verifiers import Resources, load_installed

ScoreGroups = Callable[[Sequence[GroupSpec]], Awaitable[list[GroupResult]]]


def _uses_sandbox(scorer: Scorer, group: GroupSpec) -> bool:
    names = [group.verifier] if isinstance(group.verifier, str) else [c.name for c in group.verifier]
    for name in names:
        try:
            if scorer.resolve(name).lane == "sandbox":
                return True
        except Exception:  # an unknown name: scoring reports it as the row's error verdict
            continue
    return False


def scorer_backend(
    scorer: Scorer, owner: Hashable = "audit", share: BackgroundShare | None = None
) -> ScoreGroups:
    """Score through an existing `Scorer` (a service's), admitted under `owner`. With `share`,
    each group that runs programs waits for a slot of it first (one program each: audit groups
    hold one response), so the audit holds at most its share of the sandbox and queues none of
    its programs in front of scoring's."""

    async def score_now(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        return await scorer.score_groups(groups, AdvantageConfig(), on_invalid="error_verdict", owner=owner)

    if share is None:
        return score_now

    async def one_program(group: GroupSpec) -> list[GroupResult]:
        async with share.slot():
            return await score_now([group])

    async def score(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        await scorer.prepare({c.name for g in groups for c in g.components()})
        programs = {i for i, g in enumerate(groups) if _uses_sandbox(scorer, g)}
        if not programs:
            return await score_now(groups)
        results: list[GroupResult | None] = [None] * len(groups)
        rest = [i for i in range(len(groups)) if i not in programs]

        async def the_rest() -> None:
            if rest:
                for i, result in zip(rest, await score_now([groups[i] for i in rest]), strict=True):
                    results[i] = result

        async def program(i: int) -> None:
            (results[i],) = await one_program(groups[i])

        await asyncio.gather(the_rest(), *(program(i) for i in sorted(programs)))
        done = [r for r in results if r is not None]
        assert len(done) == len(groups), "every group is scored or the gather raised"
        return done

    return score


@asynccontextmanager
async def in_process(settings: Settings | None = None) -> AsyncIterator[ScoreGroups]:
    """The built-in verifiers in this process: a worker pool of `settings.workers` processes,
    when `settings.sandbox` is enabled a sandbox pool started from it (needed by `code`), and
    when `settings.judges` names endpoints (REFEREE_JUDGE_ENDPOINTS) clients of them, as the
    service has (needed by the judge verifiers; their verdict cache lives as long as this
    backend, so audits run through one backend share it)."""
    settings = settings or Settings(sandbox=False)
    installed = load_installed(settings.registry.extra_verifiers, plugins=settings.registry.load_plugins)
    pool = WorkerPool(settings.workers, installed)
    pool.start()
    sandbox_pool: SandboxPool | None = None
    judges: JudgeClients | None = None
    try:
        if settings.judges.endpoints:
            judges = JudgeClients(settings.judges)
        if settings.sandbox.enabled:
            sandbox_pool = SandboxPool(settings.sandbox)
            await sandbox_pool.start()
            healthy, why = sandbox_pool.health()
            if not healthy:  # every code verdict would be an error: say so once, up front
                raise SandboxUnavailable(f"the code sandbox is unavailable: {why}")
        resources = Resources(sandbox=sandbox_pool, judges=judges)
        yield scorer_backend(Scorer(settings.limits, settings.workers, installed, pool, resources))
    finally:
        pool.close()
        if sandbox_pool is not None:
            await sandbox_pool.close()
        if judges is not None:
            await judges.aclose()


def over_http(client: AsyncClient) -> ScoreGroups:
    """Score through a running service (its registered types too)."""

    async def score(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        return (await client.score_groups(list(groups), on_invalid="error_verdict")).groups

    return score
