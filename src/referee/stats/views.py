"""Buckets read out as the API's pages: a verifier's versions summed and stepped, HTTP steps."""

from __future__ import annotations

from referee.models import HttpStat, VerifierStat, VersionStat
from referee.stats.buckets import HttpBucket, MinuteBucket, step_start


def _version_order(version: str) -> tuple[int, str]:
    """Newest first: `name@12` before `name@9` (a version that is no number last)."""
    number = version.rpartition("@")[2]
    return (-int(number) if number.isdigit() else 1, version)


def verifier_stats(
    name: str, versions: dict[str, list[tuple[int, MinuteBucket]]], step_minutes: int
) -> VerifierStat | None:
    """One verifier over a window from its versions' minutes; None when nothing happened."""
    total = MinuteBucket()
    steps: dict[int, MinuteBucket] = {}
    per_version = []
    for version, rows in versions.items():
        version_total = MinuteBucket()
        for minute, bucket in rows:
            version_total.merge(bucket)
            steps.setdefault(step_start(minute, step_minutes), MinuteBucket()).merge(bucket)
        total.merge(version_total)
        if version and version_total.verdicts:
            per_version.append(VersionStat(version=version, **version_total.figures()))
    if not total.verdicts and not total.groups:
        return None
    return VerifierStat(
        verifier=name,
        **total.figures(),
        error_rate=total.errors / total.verdicts if total.verdicts else 0.0,
        groups=total.groups,
        zero_variance_groups=total.zero_variance_groups,
        zero_variance_share=total.zero_variance_share,
        versions=sorted(per_version, key=lambda v: _version_order(v.version)),
        series=[steps[start].view(start) for start in sorted(steps)],
    )


def http_stat(steps: dict[int, HttpBucket]) -> HttpStat:
    total = HttpBucket()
    for bucket in steps.values():
        total.merge(bucket)
    return HttpStat(
        requests=total.requests,
        client_errors=total.client_errors,
        server_errors=total.server_errors,
        refused=total.refused,
        series=[steps[start].view(start) for start in sorted(steps)],
    )
