"""What the dashboard pages show, shaped for their templates (`referee.service.ui`).

Plain data in, plain dictionaries out: the overview's chart data is embedded in the page as
JSON and drawn by `static/dashboard.js`; nothing here renders HTML.
"""

from __future__ import annotations

import time
from typing import Any

from referee.audit import AuditReport
from referee.models import VerifierStat
from referee.registered import VerifierCatalog
from referee.service.routes_audits import AuditJob
from referee.stats import Statistics

WINDOW_MINUTES = 60
# Lines per chart: the verifiers with the most verdicts in the window (the table lists all).
MAX_CHARTED = 8


def clock(ts: float | None) -> str:
    """A Unix time as UTC text, `2026-12-03 20:03:37 UTC` ('' for none)."""
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _series(stat: VerifierStat, minutes: list[int]) -> dict[str, Any]:
    """One verifier's per-minute values over `minutes`: a minute without verdicts counts 0
    verdicts and has no rate or latency (null: the chart leaves a gap)."""
    by_minute = {m.minute: m for m in stat.series}
    rows = [by_minute.get(minute) for minute in minutes]
    return {
        "name": stat.verifier,
        "verdicts": [m.verdicts if m else 0 for m in rows],
        "error_share": [m.errors / m.verdicts if m and m.verdicts else None for m in rows],
        "pass_rate": [m.pass_rate if m else None for m in rows],
        "p50_ms": [m.p50_ms if m else None for m in rows],
        "p99_ms": [m.p99_ms if m else None for m in rows],
    }


def overview(stats: Statistics | None, owner: str, minutes: int = WINDOW_MINUTES) -> dict[str, Any]:
    """The overview's context: `data` (embedded as JSON, drawn as charts) and the tables.
    Verifier statistics are the service's; prompt statistics are `owner`'s."""
    if stats is None:
        return {"enabled": False, "data": {"enabled": False}}
    now = int(stats.clock() // 60) * 60
    page = stats.verifier_page(minutes)
    latest = max((m.minute for v in page.verifiers for m in v.series), default=now)
    end = max(now, latest)  # a minute may have begun between the two reads
    window = [end - 60 * (minutes - 1 - i) for i in range(minutes)]
    charted = sorted(page.verifiers, key=lambda v: -v.verdicts)[:MAX_CHARTED]
    prompts = stats.prompt_page(owner, limit=0)
    histogram = prompts.pass_rate_histogram
    data = {
        "enabled": True,
        "minutes": window,
        "verifiers": [_series(v, window) for v in charted],
        "histogram": {"edges": histogram.edges, "counts": histogram.counts},
        "zero_variance_share": prompts.zero_variance_share,
        "pass_threshold": prompts.pass_threshold,
    }
    return {
        "enabled": True,
        "data": data,
        "window_minutes": minutes,
        "verifiers": page.verifiers,
        "charted_max": MAX_CHARTED,
        "verdicts": sum(v.verdicts for v in page.verifiers),
        "errors": sum(v.errors for v in page.verifiers),
        "prompts": prompts,
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
