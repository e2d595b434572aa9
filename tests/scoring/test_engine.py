"""The scoring engine on its own: no HTTP, no worker processes.

`FakePool` runs each check in this process through the worker's own `run_check` (so verdicts
are real), records every dispatch, and lets a test decide the fate of a response the way the
real pool would report it: killed at the time limit, or a crashed worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest

from referee.errors import InputError
from referee.models import AdvantageConfig, GroupSpec, ScoreRequest, VerdictStatus, VerifierComponent
from referee.scoring import PoolOverloaded, Scorer, TaskOutcome
from referee.scoring import worker as worker_module
from referee.settings import Settings
from referee.verifiers import (
    AsyncVerifier,
    Check,
    Resources,
    UnknownVerifier,
    Verifier,
    VerifierError,
    load_installed,
)


class FakePool:
    """Stands in for `WorkerPool`: same `run`/`check_capacity` contract, in process."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self.calls: list[tuple[Any, str, str, str, float]] = []
        self.fates: dict[str, TaskOutcome] = {}
        self.pending = 0

    def check_capacity(self, count: int) -> None:
        if count > self.capacity:
            raise PoolOverloaded(f"{count} verdicts; capacity {self.capacity}")

    async def run(
        self,
        ref: Any,
        reference_json: str,
        options_json: str,
        response: str,
        timeout_s: float,
        owner: Any = None,
    ) -> TaskOutcome:
        self.calls.append((ref, reference_json, options_json, response, timeout_s))
        await asyncio.sleep(0)  # interleave like real futures do
        if response in self.fates:
            return self.fates[response]
        kind, score, reason, details, elapsed = worker_module.run_check(
            ref, reference_json, options_json, response
        )
        return TaskOutcome(kind, score, reason, details, elapsed)


class OutOfRange(Verifier):
    name = "test.out_of_range"
    example: ClassVar[dict[str, Any]] = {"response": "x", "reference": None}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        return Check(2.0)


class Echo(AsyncVerifier):
    """An async verifier: scores "1" as 1, hangs on "hang", fails on "down"."""

    name = "test.echo"
    time_budget_s = 0.2
    example: ClassVar[dict[str, Any]] = {"response": "1", "reference": None}

    async def check_group(
        self, responses: Sequence[str], prepared: Any, options: Any, resources: Resources
    ) -> Sequence[Check | VerifierError]:
        if "hang" in responses:
            await asyncio.sleep(3600)
        if "down" in responses:
            raise VerifierError("backend down")
        return [Check(float(r == "1")) for r in responses]


@pytest.fixture
def pool() -> FakePool:
    return FakePool()


@pytest.fixture
def scorer(pool: FakePool) -> Iterator[Scorer]:
    installed = load_installed(plugins=False)
    installed.register(OutOfRange, kind="extra")
    installed.register(Echo, kind="extra")
    # What a worker process would have loaded with these extras configured.
    previous = worker_module.use_installed(installed)
    settings = Settings(workers=1, sandbox=False, max_groups=4, max_group_size=8, max_response_chars=100)
    yield Scorer(settings.limits, settings.workers, installed, pool)  # type: ignore[arg-type]
    worker_module.use_installed(previous)


def group(responses: list[str], reference: Any = "4", verifier: Any = "exact") -> GroupSpec:
    return GroupSpec(verifier=verifier, reference=reference, responses=responses)


async def test_group_rewards_and_advantages_in_response_order(scorer: Scorer) -> None:
    [result] = await scorer.score_groups([group(["4", "5", "4", "x"])], AdvantageConfig())
    assert result.rewards == [1.0, 0.0, 1.0, 0.0]
    assert [v.status for v in result.verdicts] == [VerdictStatus.ok] * 4
    assert result.mean == 0.5 and result.advantages[0] > 0 > result.advantages[1]
    assert not result.zero_variance


async def test_a_group_shares_one_validated_reference(scorer: Scorer, pool: FakePool) -> None:
    await scorer.score_groups([group(["4", "5", "6"], reference="4")], AdvantageConfig())
    assert len({(ref, reference, options) for ref, reference, options, _, _ in pool.calls}) == 1


async def test_invalid_input_is_refused_before_any_work(scorer: Scorer, pool: FakePool) -> None:
    groups = [group(["4"]), group(["4"], verifier="multiple_choice", reference={"no": "answer"})]
    with pytest.raises(InputError) as caught:
        await scorer.score_groups(groups, AdvantageConfig())
    assert caught.value.errors[0]["loc"][:3] == ["groups", 1, "reference"]
    assert pool.calls == []


async def test_limits_and_unknown_names_are_domain_errors(scorer: Scorer, pool: FakePool) -> None:
    with pytest.raises(InputError, match="limit 4"):
        await scorer.score_groups([group(["4"])] * 5, AdvantageConfig())
    with pytest.raises(InputError, match="limit 100"):
        await scorer.score_groups([group(["4" * 101])], AdvantageConfig())
    with pytest.raises(UnknownVerifier) as unknown:
        await scorer.score_items([ScoreRequest(verifier="nope", response="4")])
    assert "exact" in unknown.value.known
    assert pool.calls == []


async def test_back_pressure_refuses_the_whole_request(scorer: Scorer, pool: FakePool) -> None:
    pool.capacity = 3
    with pytest.raises(PoolOverloaded) as caught:
        await scorer.score_groups([group(["4"] * 4)], AdvantageConfig())
    assert caught.value.retry_after_s is not None
    assert pool.calls == []


async def test_what_the_pool_reports_becomes_the_right_status(scorer: Scorer, pool: FakePool) -> None:
    pool.fates["slow"] = TaskOutcome("timeout", 0.0, "killed", {"timed_out": True}, 2000.0)
    pool.fates["dies"] = TaskOutcome("crashed", None, "worker died", {}, 0.0)
    pool.fates["hog"] = TaskOutcome("memory", 0.0, "memory", {}, 1.0)
    [result] = await scorer.score_groups([group(["4", "slow", "dies", "hog"])], AdvantageConfig())
    statuses = [v.status for v in result.verdicts]
    assert statuses == [VerdictStatus.ok, VerdictStatus.ok, VerdictStatus.error, VerdictStatus.ok]
    # A slow or memory-hungry answer is the candidate's doing: a real 0. A dead worker is not.
    assert result.rewards == [1.0, 0.0, None, 0.0]
    assert result.advantages[2] is None


async def test_a_score_outside_the_declared_range_is_no_verdict(scorer: Scorer) -> None:
    [verdict] = await scorer.score_items([ScoreRequest(verifier="test.out_of_range", response="x")])
    assert verdict.status is VerdictStatus.error and verdict.score is None
    assert "outside its range" in (verdict.reason or "")


async def test_one_failed_component_masks_the_weighted_sample(scorer: Scorer, pool: FakePool) -> None:
    pool.fates["dies"] = TaskOutcome("crashed", None, "worker died", {}, 0.0)
    components = [VerifierComponent(name="exact", weight=1.0), VerifierComponent(name="numeric", weight=0.5)]
    [result] = await scorer.score_groups([group(["4", "dies"], verifier=components)], AdvantageConfig())
    assert result.rewards == [1.5, None]
    assert result.verdicts[1].status is VerdictStatus.error


async def test_async_verifiers_run_in_process_with_a_budget(scorer: Scorer, pool: FakePool) -> None:
    [ok] = await scorer.score_groups([group(["1", "0"], verifier="test.echo")], AdvantageConfig())
    assert ok.rewards == [1.0, 0.0] and pool.calls == []
    [stuck] = await scorer.score_groups([group(["1", "hang"], verifier="test.echo")], AdvantageConfig())
    assert stuck.rewards == [None, None]
    assert all("budget" in (v.reason or "") for v in stuck.verdicts)
    [down] = await scorer.score_groups([group(["down"], verifier="test.echo")], AdvantageConfig())
    assert down.verdicts[0].status is VerdictStatus.error and down.verdicts[0].reason == "backend down"


async def test_observer_sees_every_verdict(scorer: Scorer, pool: FakePool) -> None:
    seen: list[tuple[str, str]] = []
    observed = Scorer(
        scorer.limits,
        scorer.workers,
        scorer.installed,  # the index the fixture gave this process's "worker"
        pool,  # type: ignore[arg-type]
        observer=lambda verdict, name: seen.append((name, verdict.status.value)),
    )
    await observed.score_groups([group(["4", "5"])], AdvantageConfig())
    assert seen == [("exact", "ok"), ("exact", "ok")]
