"""The statistics tracker: streak filters, the memory bound, owners kept apart, difficulty
histogram, latency quantiles against exact ones, the minute window."""

from __future__ import annotations

import random

import pytest

from referee.models import PromptFilter, Verdict, VerdictStatus
from referee.stats import Statistics
from referee.stats.buckets import LATENCY_RATIO, latency_bucket, quantile_ms


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def visit(stats: Statistics, prompt: str, rewards: list[float | None], owner: str = "a") -> None:
    stats.record_visit(owner, prompt, rewards)


def ids(stats: Statistics, kind: PromptFilter, last: int = 1, owner: str = "a") -> set[str]:
    return {p.prompt_id for p in stats.prompt_page(owner, kind, last, limit=1000).prompts}


def verdict(score: float | None, ms: float = 1.0) -> Verdict:
    status = VerdictStatus.ok if score is not None else VerdictStatus.error
    return Verdict(score=score, status=status, verifier="v@1", duration_ms=ms)


def test_streaks_drive_the_filters() -> None:
    stats = Statistics()
    for _ in range(3):
        visit(stats, "easy", [1.0, 1.0, 1.0, 1.0])
        visit(stats, "hard", [0.0, 0.0, 0.0, 0.0])
        visit(stats, "mixed", [1.0, 0.0, 1.0, 0.0])
    assert ids(stats, PromptFilter.always_solved, 3) == {"easy"}
    assert ids(stats, PromptFilter.always_solved, 4) == set()
    assert ids(stats, PromptFilter.never_solved, 3) == {"hard"}
    assert ids(stats, PromptFilter.zero_variance, 3) == {"easy", "hard"}
    assert ids(stats, PromptFilter.all) == {"easy", "hard", "mixed"}
    # One miss ends the streak: "solved k times in a row" means the latest k visits.
    visit(stats, "easy", [1.0, 0.0, 1.0, 1.0])
    assert ids(stats, PromptFilter.always_solved, 1) == set()
    easy = next(p for p in stats.prompt_page("a").prompts if p.prompt_id == "easy")
    assert (easy.visits, easy.attempts, easy.passes, easy.solved_streak) == (4, 16, 15, 0)
    assert easy.pass_rate == pytest.approx(15 / 16) and easy.last_pass_rate == 0.75
    assert easy.zero_variance_visits == 3 and easy.zero_variance_streak == 0


def test_error_verdicts_count_but_do_not_break_streaks() -> None:
    stats = Statistics()
    visit(stats, "p", [1.0, 1.0])
    visit(stats, "p", [None, None])  # the sandbox was down: nothing learned about the prompt
    visit(stats, "p", [1.0, None])
    (p,) = stats.prompt_page("a").prompts
    assert p.solved_streak == 2 and p.errors == 3 and p.attempts == 6
    assert p.error_rate == pytest.approx(0.5) and p.pass_rate == 1.0


def test_pass_threshold_decides_what_passes() -> None:
    stats = Statistics(pass_threshold=0.5)
    visit(stats, "p", [0.6, 0.5, 0.4])
    (p,) = stats.prompt_page("a").prompts
    assert p.passes == 2 and p.solved_streak == 0 and p.unsolved_streak == 0


def test_owners_do_not_see_each_other() -> None:
    stats = Statistics()
    visit(stats, "0", [1.0], owner="team-a")
    visit(stats, "0", [0.0], owner="team-b")
    visit(stats, "0", [0.0], owner="team-b")
    a, b = stats.prompt_page("team-a"), stats.prompt_page("team-b")
    assert (a.tracked, a.prompts[0].visits, a.prompts[0].passes) == (1, 1, 1)
    assert (b.tracked, b.prompts[0].visits, b.prompts[0].passes) == (1, 2, 0)
    assert stats.prompt_page("team-c").tracked == 0


def test_least_recently_seen_prompts_go_beyond_the_bound() -> None:
    clock = Clock()
    stats = Statistics(max_prompts=3, clock=clock)
    for prompt in ("p0", "p1", "p2"):
        clock.now += 1
        visit(stats, prompt, [1.0])
    clock.now += 1
    visit(stats, "p0", [1.0])  # seen again: now the most recent
    clock.now += 1
    visit(stats, "p3", [1.0])
    page = stats.prompt_page("a")
    assert [p.prompt_id for p in page.prompts] == ["p3", "p0", "p2"]
    assert page.tracked == stats.prompt_count() == 3 and page.max_prompts == 3
    dirty = stats.take_dirty()
    assert dirty.evicted == [("a", "p1")]


def test_histogram_share_and_paging() -> None:
    stats = Statistics()
    visit(stats, "p1", [1.0, 1.0, 1.0, 0.0])  # 0.75
    visit(stats, "p2", [1.0] * 4)  # 1.0, flat
    visit(stats, "p2", [1.0] * 4)  # flat
    visit(stats, "p3", [0.0] * 4)  # 0.0, flat
    visit(stats, "p4", [1.0, 0.0])  # 0.5
    page = stats.prompt_page("a", limit=2, offset=1)
    assert page.pass_rate_histogram.counts == [1, 0, 0, 0, 0, 1, 0, 1, 0, 1]
    assert len(page.pass_rate_histogram.edges) == 11
    assert page.zero_variance_share == pytest.approx(3 / 5) and page.visits == 5
    # Most recently seen first: p4, p3, p2, p1; offset 1, limit 2.
    assert [p.prompt_id for p in page.prompts] == ["p3", "p2"] and page.matched == 4


def test_latency_quantiles_are_within_the_bucket_ratio() -> None:
    rng = random.Random(7)
    samples = [rng.lognormvariate(3, 1.5) for _ in range(5000)]
    histogram: dict[int, int] = {}
    for ms in samples:
        histogram[latency_bucket(ms)] = histogram.get(latency_bucket(ms), 0) + 1
    ordered = sorted(samples)
    for q in (0.5, 0.9, 0.99):
        exact = ordered[max(0, int(q * len(ordered)) - 1)]
        estimate = quantile_ms(histogram, q)
        assert estimate is not None and exact * 0.999 <= estimate <= exact * LATENCY_RATIO * 1.001, q


def test_verifier_minutes_window_and_bound() -> None:
    clock = Clock(60 * 30_000_000)
    stats = Statistics(window_minutes=3, max_verifiers=2, clock=clock)
    stats.observe_verdict(verdict(1.0, ms=2.0), "exact")
    stats.observe_verdict(verdict(0.0, ms=4.0), "exact")
    stats.observe_verdict(verdict(None, ms=100.0), "exact")
    clock.now += 60
    stats.observe_verdict(verdict(0.5, ms=8.0), "exact")
    stats.observe_verdict(verdict(1.0), "numeric")
    stats.observe_verdict(verdict(1.0), "third")  # beyond max_verifiers: not tracked
    page = stats.verifier_page(60)
    exact = next(v for v in page.verifiers if v.verifier == "exact")
    assert [v.verifier for v in page.verifiers] == ["exact", "numeric"]
    assert (exact.verdicts, exact.errors) == (4, 1) and exact.error_rate == 0.25
    assert exact.pass_rate == pytest.approx(1 / 3) and exact.mean_score == pytest.approx(0.5)
    assert [m.verdicts for m in exact.series] == [3, 1]
    assert exact.series[1].minute - exact.series[0].minute == 60
    assert exact.max_ms == 100.0 and exact.p50_ms is not None and 4.0 <= exact.p50_ms <= 4.0 * LATENCY_RATIO
    # One minute's window holds only the latest minute.
    assert [v.verdicts for v in stats.verifier_page(1).verifiers] == [1, 1]
    # Three minutes later the first minute has left the 3-minute window kept in memory.
    clock.now += 3 * 60
    stats.observe_verdict(verdict(1.0), "exact")
    exact = next(v for v in stats.verifier_page(60).verifiers if v.verifier == "exact")
    assert [m.verdicts for m in exact.series] == [1]


def test_a_key_flooding_past_its_bound_evicts_only_its_own_prompts() -> None:
    """Issue 27, defect 6: key 2's 102,400 ids evicted every one of key 1's."""
    stats = Statistics(max_prompts=100, max_prompts_per_key=40)
    for i in range(30):
        visit(stats, f"k1-{i}", [1.0], owner="key-1")
    for i in range(1000):
        visit(stats, f"k2-{i}", [0.0], owner="key-2")
    assert ids(stats, PromptFilter.all, owner="key-1") == {f"k1-{i}" for i in range(30)}
    assert ids(stats, PromptFilter.all, owner="key-2") == {f"k2-{i}" for i in range(960, 1000)}
    page = stats.prompt_page("key-1")
    assert (page.tracked, page.max_prompts, page.max_prompts_per_key) == (30, 100, 40)
    assert {key[0] for key in stats.take_dirty().evicted} == {"key-2"}


def test_the_global_bound_holds_and_the_key_holding_the_most_pays() -> None:
    stats = Statistics(max_prompts=10, max_prompts_per_key=8)
    for i in range(6):
        visit(stats, f"a{i}", [1.0], owner="a")
    for i in range(5):  # the table fills up; the fifth evicts from "a", which holds the most
        visit(stats, f"b{i}", [1.0], owner="b")
    assert (stats.prompt_count(), stats.prompt_count("a"), stats.prompt_count("b")) == (10, 5, 5)
    assert ids(stats, PromptFilter.all, owner="a") == {f"a{i}" for i in range(1, 6)}
    for i in range(5, 100):  # at an equal share "b" evicts its own, never "a"'s
        visit(stats, f"b{i}", [1.0], owner="b")
    assert (stats.prompt_count(), stats.prompt_count("a"), stats.prompt_count("b")) == (10, 5, 5)
    assert ids(stats, PromptFilter.all, owner="b") == {f"b{i}" for i in range(95, 100)}
    for i in range(3):  # a third caller gets room, from whoever holds the most
        visit(stats, f"c{i}", [1.0], owner="c")
    counts = [stats.prompt_count(o) for o in ("a", "b", "c")]
    assert stats.prompt_count() == 10 and sorted(counts) == [3, 3, 4] and counts[2] == 3
