"""Buckets read out as the API's pages: a verifier's versions summed and stepped, HTTP steps.

The pages are built from minute rows tagged with the replica that recorded them: one replica's
own (`tracker.Statistics`), or every replica's read from the shared store (`stats.scope`), so a
page over all replicas is computed exactly as one over a single replica.
"""

from __future__ import annotations

from collections.abc import Iterable

from referee.models import (
    HttpStat,
    ReplicaStat,
    StatsScope,
    Traffic,
    VerifierStat,
    VerifierStatsPage,
    VersionStat,
)
from referee.stats.buckets import HttpBucket, MinuteBucket, step_start

# (replica, (traffic, verifier, name@version or "", minute), bucket), and (replica, minute, bucket).
ReplicaMinute = tuple[str, tuple[str, str, str, int], MinuteBucket]
ReplicaHttp = tuple[str, int, HttpBucket]


def _version_order(version: str) -> tuple[int, str]:
    """Newest first: `name@12` before `name@9` (a version that is no number last)."""
    number = version.rpartition("@")[2]
    return (-int(number) if number.isdigit() else 1, version)


def verifier_stats(
    name: str,
    versions: dict[str, list[tuple[int, MinuteBucket]]],
    step_minutes: int,
    replicas: dict[str, MinuteBucket] | None = None,
) -> VerifierStat | None:
    """One verifier over a window from its versions' minutes; None when nothing happened.
    `replicas`: its total on each replica, listed when given (a page over several)."""
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
        replicas=[
            ReplicaStat(replica=replica, **bucket.figures())
            for replica, bucket in sorted((replicas or {}).items())
            if bucket.verdicts
        ],
    )


def verifier_page(
    rows: Iterable[ReplicaMinute],
    minutes: int,
    step_minutes: int,
    traffic: Traffic,
    scope: StatsScope | None = None,
) -> VerifierStatsPage:
    """The page of `traffic` from rows already cut to the window. Per-replica figures when
    `scope` names more than one replica."""
    # name -> version -> [(minute, bucket)], and name -> replica -> its total.
    found: dict[str, dict[str, list[tuple[int, MinuteBucket]]]] = {}
    per_replica: dict[str, dict[str, MinuteBucket]] = {}
    for replica, (kind, name, version, minute), bucket in rows:
        if kind != traffic.value:
            continue
        found.setdefault(name, {}).setdefault(version, []).append((minute, bucket))
        per_replica.setdefault(name, {}).setdefault(replica, MinuteBucket()).merge(bucket)
    several = scope is not None and len(scope.replicas) > 1
    stats = [
        stat
        for name, versions in sorted(found.items())
        if (stat := verifier_stats(name, versions, step_minutes, per_replica[name] if several else None))
        is not None
    ]
    return VerifierStatsPage(
        minutes=minutes, step_minutes=step_minutes, traffic=traffic, verifiers=stats, scope=scope
    )


def http_page(rows: Iterable[ReplicaHttp], step_minutes: int) -> HttpStat:
    """The HTTP answers, from rows already cut to the window, in steps of `step_minutes`."""
    steps: dict[int, HttpBucket] = {}
    for _, minute, bucket in rows:
        steps.setdefault(step_start(minute, step_minutes), HttpBucket()).merge(bucket)
    return http_stat(steps)


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
