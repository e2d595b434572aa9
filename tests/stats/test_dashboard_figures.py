"""What the dashboard reads from the tracker: one zero-variance definition with /v1/groups,
mean reward and zero-variance share per step, coarser steps for long windows, per-version
figures, audit and registration traffic apart, p99 never above max, the per-prompt history,
and the HTTP answers per minute."""

from __future__ import annotations

import math

import pytest

from referee.advantages import group_advantages
from referee.models import PromptFilter, Traffic, Verdict, VerdictStatus
from referee.stats import Statistics, counted_as
from referee.stats.buckets import MinuteBucket, latency_bucket, quantile_ms
from referee.stats.prompts import REASON_CHARS, RECENT_REASONS, RECENT_VISITS
from tests.stats.test_tracker import Clock


def verdict(score: float | None, ms: float = 1.0, version: str = "v@1") -> Verdict:
    status = VerdictStatus.ok if score is not None else VerdictStatus.error
    return Verdict(score=score, status=status, verifier=version, duration_ms=ms)


def test_zero_variance_share_is_the_groups_definition() -> None:
    """Issue 28: a visit of error verdicts only is zero-variance in the /v1/groups response
    (`group_advantages`) but was not in the statistics (37.1% against 38.8%)."""
    visits: list[list[float | None]] = [
        [1.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
        [None, None, None],  # the sandbox was down: every sample an error verdict
        [0.5, None, 0.5],
        [0.0, 1.0],
    ]
    stats = Statistics()
    for rewards in visits:
        stats.record_visit("a", "p", rewards)
        stats.observe_group("exact", "exact@1", rewards)
    flat = sum(group_advantages(r).zero_variance for r in visits)
    assert flat == 3
    page = stats.prompt_page("a")
    assert page.zero_variance_share == pytest.approx(flat / len(visits))
    (p,) = page.prompts
    assert p.zero_variance_visits == 3
    (exact,) = stats.verifier_page(60).verifiers
    assert (exact.groups, exact.zero_variance_groups) == (5, 3)
    assert exact.zero_variance_share == pytest.approx(3 / 5)
    assert exact.series[0].zero_variance_share == pytest.approx(3 / 5)


def test_an_all_error_visit_extends_the_zero_variance_streak_not_the_solved_one() -> None:
    stats = Statistics()
    stats.record_visit("a", "p", [1.0, 1.0])
    stats.record_visit("a", "p", [None, None])
    (p,) = stats.prompt_page("a").prompts
    assert (p.solved_streak, p.zero_variance_streak, p.last_pass_rate) == (1, 2, 1.0)
    assert {s.prompt_id for s in stats.prompt_page("a", PromptFilter.zero_variance, 2).prompts} == {"p"}


def test_p99_is_never_above_the_largest_latency() -> None:
    # 1.0 ms falls in the bucket whose upper edge is 1.0296 ms.
    assert quantile_ms({latency_bucket(1.0): 1}, 0.99) == pytest.approx(1.03, abs=0.001)
    stats = Statistics()
    stats.observe_verdict(verdict(1.0, ms=1.0), "exact")
    (exact,) = stats.verifier_page(60).verifiers
    assert exact.max_ms == 1.0 and exact.p99_ms == 1.0 and exact.p50_ms == 1.0
    (minute,) = exact.series
    assert minute.p99_ms == minute.max_ms == 1.0
    assert exact.versions[0].p99_ms == 1.0


def test_mean_reward_and_coarser_steps_for_long_windows() -> None:
    clock = Clock(60 * 30_000_000)  # a multiple of 15 minutes
    stats = Statistics(clock=clock)
    for minute in range(30):
        stats.observe_verdict(verdict(minute / 30), "exact")
        stats.observe_verdict(verdict(None), "exact")
        clock.now += 60
    clock.now -= 60
    fine = stats.verifier_page(360, step_minutes=1).verifiers[0]
    coarse = stats.verifier_page(360, step_minutes=15).verifiers[0]
    assert len(fine.series) == 30 and len(coarse.series) == 2
    assert [s.minute % (15 * 60) for s in coarse.series] == [0, 0]
    assert [s.verdicts for s in coarse.series] == [30, 30] and [s.errors for s in coarse.series] == [15, 15]
    assert coarse.series[0].mean_score == pytest.approx(sum(m / 30 for m in range(15)) / 15)
    assert fine.series[3].mean_score == pytest.approx(3 / 30)
    assert fine.mean_score == coarse.mean_score == pytest.approx(sum(m / 30 for m in range(30)) / 30)
    # Buckets merge: the steps add up to the whole.
    total = MinuteBucket()
    for _ in range(2):
        part = MinuteBucket()
        part.add(verdict(1.0, ms=5.0), 1.0)
        part.add_group(True)
        total.merge(part)
    assert (total.verdicts, total.passes, total.groups, total.zero_variance_groups) == (2, 2, 2, 2)


def test_versions_and_audit_and_registration_traffic_apart() -> None:
    stats = Statistics()
    stats.observe_verdict(verdict(1.0, version="t@1"), "t")
    for _ in range(3):
        stats.observe_verdict(verdict(0.0, version="t@2"), "t")
    with counted_as(Traffic.audit):
        for _ in range(5):
            stats.observe_verdict(verdict(1.0, version="t@2"), "t")
    with counted_as(Traffic.registration):
        stats.observe_verdict(verdict(1.0, version="t@3"), "t")
    (training,) = stats.verifier_page(60).verifiers
    assert training.verdicts == 4 and training.pass_rate == pytest.approx(1 / 4)
    assert [(v.version, v.verdicts, v.pass_rate) for v in training.versions] == [
        ("t@2", 3, 0.0),
        ("t@1", 1, 1.0),
    ]
    (audit,) = stats.verifier_page(60, traffic=Traffic.audit).verifiers
    assert audit.verdicts == 5 and audit.pass_rate == 1.0
    (registration,) = stats.verifier_page(60, traffic=Traffic.registration).verifiers
    assert [v.version for v in registration.versions] == ["t@3"]


def test_a_prompts_history_is_a_bounded_ring() -> None:
    clock = Clock()
    stats = Statistics(clock=clock)
    for visit in range(RECENT_VISITS + 3):
        clock.now += 10
        rewards: list[float | None] = [1.0, 0.0] if visit % 2 else [None, None]
        stats.record_visit("a", "p", rewards, ["x" * 500, f"wrong answer {visit}"])
    detail = stats.prompt_detail("a", "p")
    assert detail is not None and detail.visits == RECENT_VISITS + 3
    assert len(detail.recent_visits) == RECENT_VISITS
    assert [v.time for v in detail.recent_visits] == sorted(v.time for v in detail.recent_visits)
    assert detail.recent_visits[-1].time == clock.now
    assert [v.pass_rate for v in detail.recent_visits[-2:]] == [0.5, None]  # the last: errors only
    assert len(detail.recent_reasons) == RECENT_REASONS
    assert detail.recent_reasons[-1].reason == f"wrong answer {RECENT_VISITS + 2}"
    assert [r.reward for r in detail.recent_reasons] == [0.0, None, None]
    assert max(len(r.reason) for r in detail.recent_reasons) == REASON_CHARS
    assert stats.prompt_detail("b", "p") is None and stats.prompt_detail("a", "q") is None


def test_http_answers_per_minute() -> None:
    clock = Clock(60 * 30_000_000)
    stats = Statistics(clock=clock)
    for status in (200, 200, 404, 401, 503, 500):
        stats.observe_http(status)
    clock.now += 60
    stats.observe_http(503)
    page = stats.http_page(60)
    assert (page.requests, page.client_errors, page.server_errors, page.refused) == (7, 2, 3, 2)
    assert [(m.requests, m.refused) for m in page.series] == [(6, 1), (1, 1)]
    assert [m.requests for m in stats.http_page(60, step_minutes=15).series] == [7]
    assert math.isclose(page.series[1].minute - page.series[0].minute, 60)
