"""What the dashboard pages show, shaped for their templates (`referee.service.ui`).

Plain data in, plain dictionaries out: the overview's chart data is embedded in the page as
JSON and drawn by `static/dashboard.js`; nothing here renders HTML.
"""

from __future__ import annotations

import time
from typing import Any

from referee.audit import AuditReport
from referee.environments import Episodes
from referee.models import HealthPage, PromptFilter, ReplicaStat, Traffic, VerifierStat, VerifierStatsPage
from referee.registered import VerifierCatalog
from referee.service.routes_audits import AuditJob
from referee.sessions import CodeSessions
from referee.stats import Snapshot, Statistics, step_start

WINDOW_MINUTES = 60
# The range picker: window (minutes) -> step (minutes per point), a hundred points at most, so
# a day's page stays as light as an hour's.
RANGES = {15: 1, 60: 1, 360: 5, 1440: 15}
# Lines per chart: the verifiers with the most verdicts in the window (the table lists all).
MAX_CHARTED = 8
# The prompt lists: solved (or not) in each of the latest SOLVED_VISITS visits.
SOLVED_VISITS = 2
LISTED = 20
# Replicas whose pass rates (or mean rewards) are further apart than this are listed apart.
DIFFERS = 0.05


def clock(ts: float | None) -> str:
    """A Unix time as UTC text, `2026-12-03 20:03:37 UTC` ('' for none)."""
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def chosen_range(minutes: int | None) -> int:
    """One of the picker's ranges (the default hour for anything else)."""
    return minutes if minutes in RANGES else WINDOW_MINUTES


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _series(stat: VerifierStat, steps: list[int]) -> dict[str, Any]:
    """One verifier's values per step: a step without verdicts counts 0 verdicts and has no
    rate or latency (null: the chart leaves a gap)."""
    by_step = {m.minute: m for m in stat.series}
    rows = [by_step.get(step) for step in steps]
    return {
        "name": stat.verifier,
        "verdicts": [m.verdicts if m else 0 for m in rows],
        "error_share": [_share(m.errors, m.verdicts) if m else None for m in rows],
        "pass_rate": [m.pass_rate if m else None for m in rows],
        "mean_score": [m.mean_score if m else None for m in rows],
        "zero_variance_share": [m.zero_variance_share if m else None for m in rows],
        "p50_ms": [m.p50_ms if m else None for m in rows],
        "p99_ms": [m.p99_ms if m else None for m in rows],
    }


def _all_groups(page: VerifierStatsPage, steps: list[int]) -> list[float | None]:
    """The zero-variance share of every group per step, over all verifiers (a weighted group
    counts once per verifier it used)."""
    groups = dict.fromkeys(steps, 0)
    flat = dict.fromkeys(steps, 0)
    for stat in page.verifiers:
        for m in stat.series:
            if m.minute in groups:
                groups[m.minute] += m.groups
                flat[m.minute] += m.zero_variance_groups
    return [_share(flat[s], groups[s]) for s in steps]


def _http(health: HealthPage, steps: list[int]) -> dict[str, list[int]]:
    by_step = {m.minute: m for m in health.http.series}
    return {
        field: [getattr(by_step[s], field) if s in by_step else 0 for s in steps]
        for field in ("requests", "client_errors", "server_errors", "refused")
    }


def overview(
    stats: Statistics | None,
    owner: str,
    health: HealthPage | None = None,
    minutes: int = WINDOW_MINUTES,
    snapshot: Snapshot | None = None,
) -> dict[str, Any]:
    """The overview's context: `data` (embedded as JSON, drawn as charts) and the tables.
    Verifier statistics and HTTP answers are the service's: the `snapshot`'s replicas (every
    replica's through the shared store), else this replica's; prompt statistics are `owner`'s
    on this replica."""
    if stats is None:
        return {"enabled": False, "data": {"enabled": False}}
    step = RANGES.get(minutes, 1)
    now_minute = int(stats.clock() // 60) * 60

    def verifier_page(traffic: Traffic = Traffic.training) -> VerifierStatsPage:
        if snapshot is None:
            return stats.verifier_page(minutes, step, traffic)
        return snapshot.verifier_page(minutes, step, traffic, now_minute=now_minute)

    page = verifier_page()
    now = step_start(now_minute, step)
    latest = max((m.minute for v in page.verifiers for m in v.series), default=now)
    end = max(now, latest)  # a minute may have begun between the two reads
    count = -(-minutes // step)
    steps = [end - 60 * step * (count - 1 - i) for i in range(count)]
    charted = sorted(page.verifiers, key=lambda v: -v.verdicts)[:MAX_CHARTED]
    prompts = stats.prompt_page(owner, limit=10)
    histogram = prompts.pass_rate_histogram
    data = {
        "enabled": True,
        "minutes": steps,
        "step_minutes": step,
        "verifiers": [_series(v, steps) for v in charted],
        "zero_variance_all": _all_groups(page, steps),
        "http": _http(health, steps) if health is not None else None,
        "histogram": {"edges": histogram.edges, "counts": histogram.counts},
        "zero_variance_share": prompts.zero_variance_share,
        "pass_threshold": prompts.pass_threshold,
    }
    checks = {kind.value: verifier_page(kind).verifiers for kind in (Traffic.audit, Traffic.registration)}
    return {
        "enabled": True,
        "data": data,
        "window_minutes": minutes,
        "step_minutes": step,
        "ranges": list(RANGES),
        "verifiers": page.verifiers,
        "checks": checks,
        "charted_max": MAX_CHARTED,
        "verdicts": sum(v.verdicts for v in page.verifiers),
        "errors": sum(v.errors for v in page.verifiers),
        "prompts": prompts,
        "owner": owner,
        "solved_visits": SOLVED_VISITS,
        "always_solved": stats.prompt_page(owner, PromptFilter.always_solved, SOLVED_VISITS, LISTED),
        "never_solved": stats.prompt_page(owner, PromptFilter.never_solved, SOLVED_VISITS, LISTED),
        "health": health,
        "scope": page.scope,
        "replica_rows": replica_rows(page),
        "differs": DIFFERS,
        "when": clock,
    }


def session_figures(sessions: CodeSessions) -> dict[str, int] | None:
    """The health panel's code-session card (this replica's); None when sessions are off."""
    if not sessions.settings.enabled:
        return None
    c = sessions.counters
    return {
        "open": sessions.open_count,
        "max_open": sessions.max_open,
        "opened": c.opened,
        "expired": c.expired,
        "lost": c.lost,
        "calls": sum(c.calls.values()),
        "restarts": c.restarts,
    }


def episode_figures(episodes: Episodes) -> dict[str, Any]:
    """The health panel's environment card (this replica's): episodes open and ended, and per
    finished episode its turns and tool calls (what a multi-turn rollout costs), tool errors."""
    c = episodes.counters

    def per_episode(total: int) -> str:
        return f"{total / c.finished:.1f}" if c.finished else "–"

    return {
        "open": len(episodes),
        "started": c.started,
        "finished": c.finished,
        "expired": c.expired,
        "turns_per_episode": per_episode(c.turns),
        "tool_calls_per_episode": per_episode(c.tool_calls),
        "tool_errors": c.tool_errors,
    }


def replica_rows(page: VerifierStatsPage) -> list[dict[str, Any]]:
    """Per verifier and replica, on a page of several replicas, the verifiers whose replicas
    differ: judged by one replica only, or pass rates or mean rewards apart by more than
    `DIFFERS`, or p99 latencies by more than half the smaller one."""
    if page.scope is None or len(page.scope.replicas) < 2:
        return []
    rows: list[dict[str, Any]] = []
    for stat in page.verifiers:
        if len(stat.replicas) == 1 or _differ(stat.replicas):
            rows.extend({"verifier": stat.verifier, **f.model_dump()} for f in stat.replicas)
    return rows


def _differ(figures: list[ReplicaStat]) -> bool:
    def spread(values: list[float | None]) -> float:
        known = [v for v in values if v is not None]
        return max(known) - min(known) if len(known) > 1 else 0.0

    latencies = [f.p99_ms for f in figures if f.p99_ms is not None]
    slow = len(latencies) > 1 and max(latencies) > 1.5 * min(latencies)
    return (
        spread([f.pass_rate for f in figures]) > DIFFERS
        or spread([f.mean_score for f in figures]) > DIFFERS
        or slow
    )


def prompt_view(stats: Statistics | None, owner: str, prompt_id: str) -> dict[str, Any]:
    """One prompt's page: its record and history (`GET /v1/stats/prompts/{id}`'s)."""
    detail = stats.prompt_detail(owner, prompt_id) if stats is not None else None
    data: dict[str, Any] = {"enabled": detail is not None}
    if detail is not None:
        data["visits"] = [{"time": v.time, "pass_rate": v.pass_rate} for v in detail.recent_visits]
    return {
        "enabled": stats is not None,
        "prompt_id": prompt_id,
        "detail": detail,
        "data": data,
        "owner": owner,
        "when": clock,
    }


async def verifier_rows(catalog: VerifierCatalog) -> dict[str, Any]:
    """Installed verifiers (built-in, extra, plugin) and registered types with every version."""
    installed = [
        {
            "name": v.name,
            "version": v.version,
            "kind": catalog.installed.kind(v.name),
            "description": v.description.strip().splitlines()[0] if v.description.strip() else "",
        }
        for v in catalog.installed
    ]
    registered = []
    for verifier in sorted(await catalog.registered(), key=lambda v: v.name):
        versions = await catalog.versions(verifier.name)
        registered.append(
            {
                "name": verifier.name,
                "kind": catalog.kind(verifier),
                "latest": max((v.version for v in versions if v.active), default=None),
                "description": verifier.description,
                "versions": [
                    {
                        "version": v.version,
                        "active": v.active,
                        "digest": v.digest[:12],
                        "created": clock(v.created_at),
                        "disabled": clock(v.disabled_at),
                    }
                    for v in sorted(versions, key=lambda v: -v.version)
                ],
            }
        )
    return {"installed": installed, "registered": registered}


def _summary(report: AuditReport) -> dict[str, Any]:
    return {
        "rows": report.rows,
        "accuracy": report.accuracy,
        "false_positives": len(report.false_positives),
        "false_negatives": len(report.false_negatives),
        "errors": len(report.errors),
        "probes_passed": sum(p.passed for p in report.probes),
        "probes": len(report.probes),
    }


def audit_rows(jobs: list[AuditJob]) -> list[dict[str, Any]]:
    """The service's audit jobs, newest first."""
    rows = []
    for job in sorted(jobs, key=lambda j: -j.created):
        done, total = job.progress.get("done", 0), job.progress.get("total", 0)
        rows.append(
            {
                "id": job.id,
                "verifier": job.verifier,
                "status": job.status,
                "done": done,
                "total": total,
                "created": clock(job.created),
                "finished": clock(job.finished),
                "error": job.error,
                "summary": _summary(job.report) if job.report is not None else None,
            }
        )
    return rows
