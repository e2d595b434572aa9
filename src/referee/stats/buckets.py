"""Per-minute buckets: what one verifier (or the HTTP front) did in one minute.

Buckets are mergeable (`merge`): a coarser step (five minutes, a quarter of an hour) is the
merge of its minutes, a verifier's total over the window the merge of all of them, and a
store shared by replicas can add theirs the same way. Latency is a sparse log-scale histogram
(buckets 5% apart), so a quantile is at most 5% above the exact one, and never above the
largest latency seen (the upper edge of a bucket can be; it is clamped to `max_ms`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.advantages import group_advantages
from referee.models import HttpMinute, Verdict, VerdictStatus, VerifierMinute

# Latency buckets: bucket i > 0 holds (FLOOR * RATIO**(i-1), FLOOR * RATIO**i] ms; reporting the
# upper edge overestimates a quantile by at most RATIO - 1 = 5%.
LATENCY_FLOOR_MS = 0.01
LATENCY_RATIO = 1.05
_LOG_RATIO = math.log(LATENCY_RATIO)


def latency_bucket(ms: float) -> int:
    if ms <= LATENCY_FLOOR_MS:
        return 0
    return math.ceil(math.log(ms / LATENCY_FLOOR_MS) / _LOG_RATIO - 1e-9)


def bucket_ms(index: int) -> float:
    return LATENCY_FLOOR_MS * LATENCY_RATIO**index


def quantile_ms(histogram: dict[int, int], q: float, max_ms: float | None = None) -> float | None:
    """The q-quantile of a latency histogram: the upper edge of the bucket it falls in, but
    never above `max_ms` (the largest latency observed), which that edge may exceed."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index in sorted(histogram):
        seen += histogram[index]
        if seen >= rank:
            edge = bucket_ms(index)
            return round(edge if max_ms is None else min(edge, max_ms), 3)
    raise AssertionError("unreachable: rank <= total")


def is_zero_variance(rewards: Sequence[float | None]) -> bool:
    """Whether a group carries no learning signal: the `zero_variance` of the `/v1/groups`
    response (`advantages.group_advantages`), so statistics and responses never disagree. A
    group whose every sample is an error verdict is one."""
    return group_advantages(rewards).zero_variance


@dataclass(slots=True)
class MinuteBucket:
    verdicts: int = 0
    errors: int = 0
    passes: int = 0
    score_sum: float = 0.0
    max_ms: float = 0.0
    latency: dict[int, int] = field(default_factory=dict)
    groups: int = 0
    zero_variance_groups: int = 0

    def add(self, verdict: Verdict, threshold: float) -> None:
        self.verdicts += 1
        if verdict.status is VerdictStatus.error or verdict.score is None:
            self.errors += 1
        else:
            self.score_sum += verdict.score
            self.passes += verdict.score >= threshold
        index = latency_bucket(verdict.duration_ms)
        self.latency[index] = self.latency.get(index, 0) + 1
        self.max_ms = max(self.max_ms, verdict.duration_ms)

    def add_group(self, zero_variance: bool) -> None:
        self.groups += 1
        self.zero_variance_groups += zero_variance

    def merge(self, other: MinuteBucket) -> None:
        self.verdicts += other.verdicts
        self.errors += other.errors
        self.passes += other.passes
        self.score_sum += other.score_sum
        self.max_ms = max(self.max_ms, other.max_ms)
        for index, count in other.latency.items():
            self.latency[index] = self.latency.get(index, 0) + count
        self.groups += other.groups
        self.zero_variance_groups += other.zero_variance_groups

    @property
    def scored(self) -> int:
        return self.verdicts - self.errors

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.scored if self.scored else None

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    @property
    def zero_variance_share(self) -> float | None:
        return self.zero_variance_groups / self.groups if self.groups else None

    def quantile(self, q: float) -> float | None:
        return quantile_ms(self.latency, q, round(self.max_ms, 3))

    def figures(self) -> dict[str, Any]:
        """The figures every page shows of a bucket (a step, a version, a whole window)."""
        return {
            "verdicts": self.verdicts,
            "errors": self.errors,
            "pass_rate": self.pass_rate,
            "mean_score": self.mean_score,
            "p50_ms": self.quantile(0.5),
            "p99_ms": self.quantile(0.99),
            "max_ms": round(self.max_ms, 3) if self.verdicts else None,
        }

    def view(self, minute: int) -> VerifierMinute:
        return VerifierMinute(
            minute=minute,
            **self.figures(),
            groups=self.groups,
            zero_variance_groups=self.zero_variance_groups,
            zero_variance_share=self.zero_variance_share,
        )


def copy_bucket(bucket: MinuteBucket) -> MinuteBucket:
    copy = MinuteBucket()
    copy.merge(bucket)
    return copy


@dataclass(slots=True)
class HttpBucket:
    """The service's HTTP answers in one minute (the dashboard's own pages left out)."""

    requests: int = 0
    client_errors: int = 0  # 4xx
    server_errors: int = 0  # 5xx, 503 included
    refused: int = 0  # 503: overloaded (admission) or not ready

    def add(self, status: int) -> None:
        self.requests += 1
        self.client_errors += 400 <= status < 500
        self.server_errors += status >= 500
        self.refused += status == 503

    def merge(self, other: HttpBucket) -> None:
        self.requests += other.requests
        self.client_errors += other.client_errors
        self.server_errors += other.server_errors
        self.refused += other.refused

    def view(self, minute: int) -> HttpMinute:
        return HttpMinute(
            minute=minute,
            requests=self.requests,
            client_errors=self.client_errors,
            server_errors=self.server_errors,
            refused=self.refused,
        )


def step_start(minute: int, step_minutes: int) -> int:
    """The start of the `step_minutes` slot a minute falls in (aligned on Unix time, so a slot
    keeps its bounds as the window moves)."""
    return minute - minute % (60 * step_minutes)
