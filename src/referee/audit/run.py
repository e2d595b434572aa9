"""The audit engine: score labelled rows and a probe battery, summarise what the verifier did.

`run_audit` is transport-free and reports progress through a callback, so a service can run it
as a background job (`progress(done, total)` after every chunk of verdicts) and a CLI can draw a
progress bar with the same call.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from referee.audit.backend import ScoreGroups
from referee.audit.data import LabelledRow, VerifierSpec, component_names, resolve_name, spec_text
from referee.audit.judging import JudgeCost, judge_cost, percentile
from referee.audit.probes import Probe, battery, generic
from referee.models import GroupSpec, Verdict, VerifierComponent

Progress = Callable[[int, int], None]
# A score within this distance of its label agrees with it.
TOLERANCE = 1e-6
# Binary confusion counts split scores and labels here.
THRESHOLD = 0.5
CHUNK = 32  # groups per scoring call: the progress step


class RowResult(BaseModel):
    id: str
    category: str
    verifier: str
    expected: float
    score: float | None
    status: str
    reason: str | None = None
    duration_ms: float = 0.0
    response: str = Field(default="", description="The response, cut to 300 characters.")

    @property
    def error(self) -> bool:
        return self.status != "ok" or self.score is None

    @property
    def agrees(self) -> bool:
        return not self.error and abs((self.score or 0.0) - self.expected) <= TOLERANCE

    @property
    def over(self) -> bool:
        """Scored above its label: a reward the verifier should not have given."""
        return not self.error and (self.score or 0.0) > self.expected + TOLERANCE


class ProbeResult(BaseModel):
    battery: str
    name: str
    attack: str
    verifier: str
    control: bool
    max_score: float
    score: float | None
    status: str
    reason: str | None = None
    passed: bool
    response: str


class Confusion(BaseModel):
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    error: int = 0


class CategoryStats(BaseModel):
    rows: int
    agree: int
    accuracy: float
    false_positives: int
    false_negatives: int
    errors: int


class Latency(BaseModel):
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float


class BatteryStats(BaseModel):
    probes: int
    passed: int
    failed: list[str]


class AuditReport(BaseModel):
    verifier: str
    source: str
    created: str
    rows: int
    accuracy: float
    confusion: Confusion
    false_positives: list[RowResult] = Field(description="Rows scored above their label, worst first.")
    false_negatives: list[RowResult]
    errors: list[RowResult]
    per_category: dict[str, CategoryStats]
    latency: Latency
    probes: list[ProbeResult]
    batteries: dict[str, BatteryStats]
    probes_passed: bool
    wall_s: float
    results: list[RowResult]
    # Present when verdicts came from a model judge (their details carry its calls).
    judge: JudgeCost | None = Field(default=None, description="The judge calls behind the rows' verdicts.")
    judge_probes: JudgeCost | None = Field(default=None, description="The judge calls of the probe battery.")

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def _row_spec(spec: VerifierSpec, row: LabelledRow) -> tuple[str | list[VerifierComponent], dict[str, Any]]:
    if row.verifier is not None:
        return row.verifier, row.options
    if isinstance(spec, str):
        return resolve_name(spec, row), row.options
    return [c.model_copy(update={"name": resolve_name(c.name, row)}) for c in spec], {}


def _name(verifier: str | list[VerifierComponent]) -> str:
    return verifier if isinstance(verifier, str) else spec_text(verifier)


async def _score_all(
    groups: list[GroupSpec], score_groups: ScoreGroups, tick: Callable[[int], None], concurrency: int
) -> list[Verdict]:
    """One verdict per group (each holds one response), chunk by chunk."""
    chunks = [groups[i : i + CHUNK] for i in range(0, len(groups), CHUNK)]
    out: list[list[Verdict]] = [[] for _ in chunks]
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, chunk: list[GroupSpec]) -> None:
        async with gate:
            results = await score_groups(chunk)
        out[index] = [v for result in results for v in result.verdicts]
        tick(len(chunk))

    await asyncio.gather(*(one(i, c) for i, c in enumerate(chunks)))
    return [v for chunk in out for v in chunk]


def plan_probes(spec: VerifierSpec, rows: Sequence[LabelledRow], *, per_verifier: int = 2) -> list[Probe]:
    """The batteries of every verifier the audit uses (each component, each name a template
    fills in), and generic probes against up to `per_verifier` references of positive rows."""
    references: dict[str, list[Any]] = defaultdict(list)
    order: list[str] = []
    for row in rows:
        verifier, _ = _row_spec(spec, row)
        for name in component_names(verifier):
            if name not in references:
                order.append(name)
                references[name] = []
            refs = references[name]
            if row.expected >= THRESHOLD and len(refs) < per_verifier and row.reference not in refs:
                refs.append(row.reference)
    probes: list[Probe] = []
    seen_batteries: set[str] = set()
    for name in order:
        base = name.partition("@")[0]
        if base not in seen_batteries:
            seen_batteries.add(base)
            probes += battery(name)
        probes += generic(name, references[name])
    return probes


async def run_audit(
    rows: Sequence[LabelledRow],
    verifier: VerifierSpec,
    score_groups: ScoreGroups,
    *,
    progress: Progress | None = None,
    probes: bool = True,
    source: str = "",
    concurrency: int = 2,
) -> AuditReport:
    """Score every row and the probe battery; `progress(done, total)` after every chunk."""
    start = time.perf_counter()
    row_groups = []
    for row in rows:
        name, options = _row_spec(verifier, row)
        row_groups.append(
            GroupSpec(verifier=name, reference=row.reference, responses=[row.response], options=options)
        )
    planned = plan_probes(verifier, rows) if probes else []
    probe_groups = [
        GroupSpec(verifier=p.verifier, reference=p.reference, responses=[p.response], options=p.options)
        for p in planned
    ]
    total = len(row_groups) + len(probe_groups)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    if progress is not None:
        progress(0, total)
    verdicts = await _score_all(row_groups + probe_groups, score_groups, tick, concurrency)
    row_verdicts, probe_verdicts = verdicts[: len(row_groups)], verdicts[len(row_groups) :]
    results = [
        RowResult(
            id=row.id,
            category=row.category,
            verifier=_name(group.verifier),
            expected=row.expected,
            score=v.score,
            status=v.status.value,
            reason=v.reason,
            duration_ms=v.duration_ms,
            response=row.response[:300],
        )
        for row, group, v in zip(rows, row_groups, row_verdicts, strict=True)
    ]
    probe_results = [
        ProbeResult(
            battery=p.battery,
            name=p.name,
            attack=p.attack,
            verifier=p.verifier,
            control=p.control,
            max_score=p.max_score,
            score=v.score,
            status=v.status.value,
            reason=v.reason,
            passed=p.passes(v.status.value, v.score),
            response=p.response[:300],
        )
        for p, v in zip(planned, probe_verdicts, strict=True)
    ]
    return summarise(
        results,
        probe_results,
        verifier=spec_text(verifier),
        source=source,
        wall_s=time.perf_counter() - start,
        judge=judge_cost(row_verdicts),
        judge_probes=judge_cost(probe_verdicts),
    )


def summarise(
    results: list[RowResult],
    probe_results: list[ProbeResult],
    *,
    verifier: str,
    source: str,
    wall_s: float,
    judge: JudgeCost | None = None,
    judge_probes: JudgeCost | None = None,
) -> AuditReport:
    confusion = Confusion()
    for r in results:
        if r.error:
            confusion.error += 1
            continue
        got, want = (r.score or 0.0) >= THRESHOLD, r.expected >= THRESHOLD
        if got and want:
            confusion.tp += 1
        elif got:
            confusion.fp += 1
        elif want:
            confusion.fn += 1
        else:
            confusion.tn += 1
    by_category: dict[str, list[RowResult]] = defaultdict(list)
    for r in results:
        by_category[r.category].append(r)
    per_category = {
        name: CategoryStats(
            rows=len(rs),
            agree=sum(r.agrees for r in rs),
            accuracy=sum(r.agrees for r in rs) / len(rs),
            false_positives=sum(r.over for r in rs),
            false_negatives=sum(not r.error and not r.agrees and not r.over for r in rs),
            errors=sum(r.error for r in rs),
        )
        for name, rs in sorted(by_category.items())
    }
    durations = [r.duration_ms for r in results if not r.error]
    batteries: dict[str, BatteryStats] = {}
    for p in probe_results:
        stats = batteries.setdefault(p.battery, BatteryStats(probes=0, passed=0, failed=[]))
        stats.probes += 1
        stats.passed += p.passed
        if not p.passed:
            stats.failed.append(p.name)
    return AuditReport(
        verifier=verifier,
        source=source,
        created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        rows=len(results),
        accuracy=sum(r.agrees for r in results) / len(results) if results else 0.0,
        confusion=confusion,
        false_positives=sorted(
            (r for r in results if r.over), key=lambda r: (r.score or 0.0) - r.expected, reverse=True
        ),
        false_negatives=[r for r in results if not r.error and not r.agrees and not r.over],
        errors=[r for r in results if r.error],
        per_category=per_category,
        latency=Latency(
            p50_ms=percentile(durations, 50),
            p99_ms=percentile(durations, 99),
            max_ms=max(durations, default=0.0),
            mean_ms=sum(durations) / len(durations) if durations else 0.0,
        ),
        probes=probe_results,
        batteries=batteries,
        probes_passed=all(p.passed for p in probe_results),
        wall_s=round(wall_s, 3),
        results=results,
        judge=judge,
        judge_probes=judge_probes,
    )


def category_counts(rows: Sequence[LabelledRow]) -> Counter[str]:
    return Counter(row.category for row in rows)


def report_from_json(text: str) -> AuditReport:
    return AuditReport.model_validate(json.loads(text))
