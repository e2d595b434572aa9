"""Scoring orchestration: resolve verifiers, validate input, dispatch, assemble verdicts.

Transport-free: the HTTP layer calls `Scorer` and maps its exceptions to status codes. Every
input problem is found before any work is scheduled, so a request is rejected whole (422) or
scored whole.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from referee.advantages import group_advantages
from referee.errors import DomainError, ErrorKind, InputError
from referee.models import (
    AdvantageConfig,
    GroupResult,
    GroupSpec,
    OnInvalid,
    ScoreRequest,
    Verdict,
    VerdictStatus,
    VerifierComponent,
)
from referee.scoring import fallback as fallbacks
from referee.scoring.admission import Admission
from referee.scoring.fallback import Fallback
from referee.scoring.pool import VERDICT_KINDS, TaskOutcome, WorkerPool, wall_backstop_s
from referee.settings import RequestLimits, WorkerSettings
from referee.verifiers.base import AsyncVerifier, Check, Lane, Resources, Verifier, VerifierError
from referee.verifiers.installed import InstalledVerifiers

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class _Job:
    """One verifier applied to one reference, with validated inputs, ready to dispatch."""

    verifier: Verifier
    reference: Any
    options: Any
    reference_json: str
    options_json: str
    # Where the answers the verifier could not read go (math's `options.fallback`).
    fallback: Fallback | None = None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _pydantic_errors(exc: ValidationError, loc: Loc) -> list[dict[str, Any]]:
    return [{"loc": [*loc, *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]


class Scorer:
    def __init__(
        self,
        limits: RequestLimits,
        workers: WorkerSettings,
        installed: InstalledVerifiers,
        pool: WorkerPool,
        resources: Resources | None = None,
        observer: Callable[[Verdict, str], None] | None = None,
        resolver: Callable[[str], Verifier] | None = None,
        admission: Admission | None = None,
        preload: Callable[[Iterable[str]], Awaitable[None]] | None = None,
    ) -> None:
        self.limits = limits
        self.workers = workers
        self.installed = installed
        # Name -> verifier. The service passes its catalog's resolver (installed verifiers, then types
        # registered through the API, `name@N` pinned); raises UnknownVerifier.
        self.resolve: Callable[[str], Verifier] = resolver or installed.get
        # Reads what resolving the names needs (the catalog's registry reads) off the event loop,
        # so that `resolve` never waits on a database while planning.
        self._preload = preload
        self.pool = pool
        self.resources = resources or Resources()
        self._observe = observer or (lambda verdict, name: None)
        self.admission = admission or Admission.for_workers(workers)

    # ---- validation ----------------------------------------------------------------------

    async def prepare(self, names: Iterable[str]) -> None:
        """Make `resolve(name)` ready for each of `names` without blocking (see `preload`)."""
        if self._preload is not None:
            await self._preload(names)

    def _job(self, name: str, reference: Any, options: Mapping[str, Any], loc: Loc) -> _Job:
        # UnknownVerifier propagates: the route answers 404
        return self._job_for(self.resolve(name), reference, options, loc)

    def _job_for(self, verifier: Verifier, reference: Any, options: Mapping[str, Any], loc: Loc) -> _Job:
        errors: list[dict[str, Any]] = []
        try:
            opts = verifier.validate_options(options)
        except ValidationError as exc:
            errors += _pydantic_errors(exc, (*loc, "options"))
        try:
            ref = verifier.validate_reference(reference)
        except ValidationError as exc:
            errors += _pydantic_errors(exc, (*loc, "reference"))
        if errors:
            raise InputError(errors)
        try:
            verifier.validate_inputs(ref, opts, self.resources)
        except ValueError as exc:
            raise InputError([{"loc": [*loc, "reference"], "msg": str(exc), "type": "value_error"}]) from None
        try:
            fallback = fallbacks.plan(opts, ref, self.resources, self.installed.get)
        except ValueError as exc:
            error = {"loc": [*loc, "options", "fallback"], "msg": str(exc), "type": "value_error"}
            raise InputError([error]) from None
        return _Job(verifier, ref, opts, _canonical(reference), opts.model_dump_json(), fallback)

    def _check_responses(self, responses: Sequence[str], loc: Loc, *, indexed: bool = True) -> None:
        limit = self.limits.max_response_chars
        errors = [
            {
                "loc": [*loc, i] if indexed else list(loc),
                "msg": f"response has {len(r)} characters; limit {limit}",
                "type": "too_long",
            }
            for i, r in enumerate(responses)
            if len(r) > limit
        ]
        if errors:
            raise InputError(errors)

    # ---- execution -----------------------------------------------------------------------

    def _admit(self, work: Sequence[tuple[_Job, int]], owner: Hashable) -> None:
        """Reserve queue room for (job, number of responses) pairs, or raise LaneOverloaded."""
        units: dict[Lane, float] = {}
        for job, n in work:
            units[job.verifier.lane] = units.get(job.verifier.lane, 0.0) + n
        self.admission.admit(units, owner)

    async def _run_job(self, job: _Job, responses: Sequence[str], owner: Hashable) -> list[Verdict]:
        """Dispatch admitted work; its units leave the lane when it is done."""
        completed = False
        try:
            verdicts = await self._dispatch(job, responses, owner)
            completed = True
            return verdicts
        finally:
            self.admission.done(job.verifier.lane, len(responses), completed=completed, owner=owner)

    async def _dispatch(self, job: _Job, responses: Sequence[str], owner: Hashable) -> list[Verdict]:
        verifier = job.verifier
        outcomes = await self._outcomes(job, responses, owner)
        if job.fallback is not None:
            outcomes = await self._fall_back(job.fallback, responses, outcomes)
        qualified = verifier.qualified_name()
        return [self._verdict(qualified, verifier, outcome) for outcome in outcomes]

    async def _outcomes(self, job: _Job, responses: Sequence[str], owner: Hashable) -> list[TaskOutcome]:
        verifier = job.verifier
        if isinstance(verifier, AsyncVerifier):
            return await self._run_async(verifier, job.reference, job.options, responses)
        budget = verifier.time_budget_s or self.workers.verdict_timeout_s
        return await asyncio.gather(
            *(
                self.pool.run(verifier.worker_ref(), job.reference_json, job.options_json, r, budget, owner)
                for r in responses
            )
        )

    async def _fall_back(
        self, fallback: Fallback, responses: Sequence[str], outcomes: Sequence[TaskOutcome]
    ) -> list[TaskOutcome]:
        """The judge's verdicts in place of the checks that could not read their answer, the
        group's in one batch (see fallback.py). Not admitted again: the judge's calls are held
        to its endpoint's concurrency, and the verdicts were admitted with the job."""
        out = list(outcomes)
        picked = fallbacks.flagged(outcomes)
        if not picked:
            return out
        judged = await self._run_async(
            fallback.verifier, fallback.reference, fallback.options, [responses[i] for i in picked]
        )
        for i, outcome in zip(picked, judged, strict=True):
            out[i] = fallbacks.merged(out[i], outcome, fallback)
        return out

    async def _run_async(
        self, verifier: AsyncVerifier, reference: Any, options: Any, responses: Sequence[str]
    ) -> list[TaskOutcome]:
        start = time.perf_counter()
        results: Sequence[Check | VerifierError]
        # The verifier's budget is per verdict; a group may be judged one response after another.
        # A verifier that bounds itself (the sandbox: per-test limits, each with its own
        # host-side deadline) gets none: its wall time includes queueing for a container,
        # which is not the candidate's doing and must never turn a verdict into "no verdict".
        # A verifier's own budget is wall-clock here (its author sized it for its backend); the
        # service default is CPU time for worker checks, so here it becomes the same generous
        # backstop as a worker's wall clock (pool.py). Overrunning is never a 0 (no verdict).
        per_verdict = verifier.time_budget_s or wall_backstop_s(
            self.workers.verdict_timeout_s, self.workers.verdict_wall_factor
        )
        budget = None if verifier.bounds_itself else per_verdict * max(1, len(responses))
        try:
            prepared = verifier.prepare(reference, options)
            # I/O-bound verifiers judge candidate slowness themselves (the sandbox's time limits);
            # overrunning the verifier's own budget means its backend is stuck: no verdict.
            async with asyncio.timeout(budget):
                results = await verifier.check_group(responses, prepared, options, self.resources)
        except TimeoutError:
            # Without a budget, a timeout of the verifier's own escaped it: still no verdict.
            limit = "its own time budget" if budget is None else f"its {budget:g} s budget"
            results = [VerifierError(f"verifier exceeded {limit}")] * len(responses)
        except VerifierError as exc:
            results = [exc] * len(responses)
        except Exception as exc:  # a verifier bug is a masked verdict, not a 500
            results = [VerifierError(f"verifier raised {type(exc).__name__}: {exc}")] * len(responses)
        if len(results) != len(responses):  # a verifier bug: no verdict for anyone
            bug = VerifierError(f"verifier returned {len(results)} results for {len(responses)} responses")
            results = [bug] * len(responses)
        elapsed = (time.perf_counter() - start) * 1000.0 / max(1, len(responses))
        return [
            TaskOutcome("error", None, str(result)[:500], dict(result.details), elapsed)
            if isinstance(result, VerifierError)
            else TaskOutcome("ok", result.score, result.reason, result.details, elapsed)
            for result in results
        ]

    def _verdict(self, qualified: str, verifier: Verifier, outcome: TaskOutcome) -> Verdict:
        status = VerdictStatus.ok if outcome.kind in VERDICT_KINDS else VerdictStatus.error
        score = outcome.score if status is VerdictStatus.ok else None
        reason = outcome.reason
        low, high = verifier.score_range
        if score is not None and (not math.isfinite(score) or not low <= score <= high):
            status, reason = (
                VerdictStatus.error,
                f"verifier returned {score!r}, outside its range [{low}, {high}]",
            )
            score = None
        verdict = Verdict(
            score=score,
            status=status,
            verifier=qualified,
            reason=reason,
            details=outcome.details,
            duration_ms=round(outcome.elapsed_ms, 3),
        )
        self._observe(verdict, verifier.name)
        return verdict

    # ---- public API ----------------------------------------------------------------------

    async def score_items(
        self, items: Sequence[ScoreRequest], *, batch: bool = True, owner: Hashable = None
    ) -> list[Verdict]:
        """Score independent items; `batch` says whether field paths are prefixed by items[i].
        `owner` (the caller's key) is who the work is admitted and queued for."""
        _limit(("items",), "items", len(items), self.limits.max_items)
        await self.prepare({item.verifier for item in items})
        jobs = []
        for i, item in enumerate(items):
            item_loc: Loc = ("items", i) if batch else ()
            jobs.append(self._job(item.verifier, item.reference, item.options, item_loc))
            self._check_responses([item.response], (*item_loc, "response"), indexed=False)
        self.pool.check_capacity(len(items))
        self._admit([(job, 1) for job in jobs], owner)
        results = await asyncio.gather(
            *(self._run_job(job, [item.response], owner) for job, item in zip(jobs, items, strict=True))
        )
        return [verdicts[0] for verdicts in results]

    async def score_with(
        self,
        verifier: Verifier,
        items: Sequence[tuple[str, Any, Mapping[str, Any]]],
        loc: Loc = (),
        owner: Hashable = None,
    ) -> list[Verdict]:
        """Score (response, reference, options) items with a verifier object that has no name
        in the catalog yet: the activation gate of types registered through the API."""
        jobs = [self._job_for(verifier, ref, opts, (*loc, i)) for i, (_, ref, opts) in enumerate(items)]
        self._check_responses([r for r, _, _ in items], loc)
        self.pool.check_capacity(len(items))
        self._admit([(job, 1) for job in jobs], owner)
        results = await asyncio.gather(
            *(self._run_job(job, [r], owner) for job, (r, _, _) in zip(jobs, items, strict=True))
        )
        return [verdicts[0] for verdicts in results]

    async def score_groups(
        self,
        groups: Sequence[GroupSpec],
        advantage: AdvantageConfig,
        on_invalid: OnInvalid = "reject",
        owner: Hashable = None,
    ) -> list[GroupResult]:
        limits = self.limits
        _limit(("groups",), "groups", len(groups), limits.max_groups)
        await self.prepare({c.name for group in groups for c in group.components()})
        planned: list[list[tuple[VerifierComponent, list[_Job]]] | DomainError] = []
        total = 0
        for g, group in enumerate(groups):
            loc: Loc = ("groups", g)
            try:
                components = group.components()
                _limit((*loc, "responses"), "responses", len(group.responses), limits.max_group_size)
                _limit((*loc, "verifier"), "components", len(components), limits.max_components)
                self._check_responses(group.responses, (*loc, "responses"))
                planned.append(self._plan_group(group, components, loc))
            except DomainError as exc:  # InputError, UnknownVerifier: what is wrong with the group
                if on_invalid == "reject" or exc.kind not in (ErrorKind.invalid, ErrorKind.not_found):
                    raise
                planned.append(exc)
                continue
            total += len(group.responses) * len(components)
        _limit(("groups",), "verdicts in one request", total, self.workers.max_pending_verdicts)
        self.pool.check_capacity(total)
        runnable = [plan for plan in planned if not isinstance(plan, DomainError)]
        self._admit([(job, 1) for plan in runnable for _, jobs in plan for job in jobs], owner)
        return list(
            await asyncio.gather(
                *(
                    _invalid_group(group, plan)
                    if isinstance(plan, DomainError)
                    else self._score_group(group, plan, advantage, owner)
                    for group, plan in zip(groups, planned, strict=True)
                )
            )
        )

    def _plan_group(
        self, group: GroupSpec, components: list[VerifierComponent], loc: Loc
    ) -> list[tuple[VerifierComponent, list[_Job]]]:
        """One job per component, or per component and response when the group carries
        per-response options (token lengths for length shaping, say)."""
        plan = []
        per_response = group.response_options
        accepted: set[str] = set()
        for i, c in enumerate(components):
            comp_loc = (*loc, "verifier", i) if isinstance(group.verifier, list) else loc
            if per_response is None:
                plan.append(
                    (c, [self._job(c.name, group.reference, c.options, comp_loc)] * len(group.responses))
                )
                continue
            # Options are validated as merged: a component may need a per-response value
            # (unit="tokens" needs each response's length) that its own options lack.
            fields = set(self.resolve(c.name).options_model.model_fields)
            base: _Job | None = None
            jobs = []
            for r, extra in enumerate(per_response):
                own = {k: v for k, v in extra.items() if k in fields}
                accepted |= own.keys()
                if own:
                    jobs.append(
                        self._job(
                            c.name, group.reference, {**c.options, **own}, (*loc, "response_options", r)
                        )
                    )
                else:
                    base = base or self._job(c.name, group.reference, c.options, comp_loc)
                    jobs.append(base)
            plan.append((c, jobs))
        if per_response is not None:
            unused = sorted({k for extra in per_response for k in extra} - accepted)
            if unused:
                raise InputError(
                    [
                        {
                            "loc": [*loc, "response_options"],
                            "msg": f"no verifier of this group takes the option(s) {unused}",
                            "type": "unused_option",
                        }
                    ]
                )
        return plan

    async def _run_component(
        self, jobs: list[_Job], responses: Sequence[str], owner: Hashable
    ) -> list[Verdict]:
        if all(job is jobs[0] for job in jobs):
            return await self._run_job(jobs[0], responses, owner)
        parts = await asyncio.gather(
            *(self._run_job(job, [r], owner) for job, r in zip(jobs, responses, strict=True))
        )
        return [verdicts[0] for verdicts in parts]

    async def _score_group(
        self,
        group: GroupSpec,
        jobs: list[tuple[VerifierComponent, list[_Job]]],
        advantage: AdvantageConfig,
        owner: Hashable,
    ) -> GroupResult:
        per_component = await asyncio.gather(
            *(self._run_component(js, group.responses, owner) for _, js in jobs)
        )
        if isinstance(group.verifier, str):  # a weighted list, even of one, goes through _combine
            verdicts = per_component[0]
            rewards = [v.score for v in verdicts]
        else:
            verdicts, rewards = _combine([c for c, _ in jobs], per_component)
        stats = group_advantages(rewards, advantage.scale, advantage.epsilon)
        return GroupResult(
            verdicts=verdicts,
            rewards=rewards,
            advantages=stats.advantages,
            mean=stats.mean,
            std=stats.std,
            zero_variance=stats.zero_variance,
        )


async def _invalid_group(group: GroupSpec, error: DomainError) -> GroupResult:
    """A group that could not be judged at all (`on_invalid="error_verdict"`): every response
    gets a status-error verdict whose reason says what is wrong; no reward, no advantage."""
    name = group.verifier if isinstance(group.verifier, str) else "+".join(c.name for c in group.verifier)
    detail = error.detail if isinstance(error, InputError) else {"error": error.code}
    verdict = Verdict(
        score=None,
        status=VerdictStatus.error,
        verifier=name,
        reason=f"invalid input: {error.message}"[:1000],
        details={"invalid": detail if isinstance(detail, dict) else {"errors": detail}},
    )
    n = len(group.responses)
    return GroupResult(
        verdicts=[verdict] * n,
        rewards=[None] * n,
        advantages=[None] * n,
        mean=None,
        std=None,
        zero_variance=True,
    )


def _limit(loc: Loc, what: str, count: int, limit: int) -> None:
    if count > limit:
        raise InputError([{"loc": list(loc), "msg": f"{count} {what}; limit {limit}", "type": "too_many"}])


def _combine(
    components: list[VerifierComponent], per_component: Sequence[list[Verdict]]
) -> tuple[list[Verdict], list[float | None]]:
    """Weighted sum per response. One component without a verdict masks the whole sample:
    a reward missing a term would be on a different scale from its group mates."""
    verdicts: list[Verdict] = []
    rewards: list[float | None] = []
    for parts in zip(*per_component, strict=True):
        failed = [p for p in parts if p.status is VerdictStatus.error]
        reward = None
        if not failed:
            reward = math.fsum(c.weight * (p.score or 0.0) for c, p in zip(components, parts, strict=True))
        verdicts.append(
            Verdict(
                score=reward,
                status=VerdictStatus.error if failed else VerdictStatus.ok,
                verifier="+".join(
                    f"{c.weight:g}*{p.verifier}" for c, p in zip(components, parts, strict=True)
                ),
                reason="; ".join(f"{p.verifier}: {p.reason}" for p in parts if p.reason) or None,
                details={"components": [p.model_dump(mode="json") for p in parts]},
                duration_ms=round(sum(p.duration_ms for p in parts), 3),
            )
        )
        rewards.append(reward)
    return verdicts, rewards
