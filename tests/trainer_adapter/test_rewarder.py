"""The group rewarder: chunking, concurrency, masks; and agreement with the real service."""

from __future__ import annotations

import math

import pytest

from referee.advantages import group_advantages
from referee.models import AdvantageConfig, VerifierComponent
from referee.trainer_adapter.rewarder import GroupRewarder


async def test_chunks_are_bounded_concurrent_and_reassembled_in_order(fake_scorer) -> None:  # type: ignore[no-untyped-def]
    rewarder = GroupRewarder(fake_scorer, max_groups_per_request=3, max_concurrency=2)
    refs = [str(i) for i in range(10)]
    completions = [[str(i), "x", str(i), "y"] for i in range(10)]
    result = await rewarder.score(completions, refs)
    assert [len(c) for c in fake_scorer.calls] == [3, 3, 3, 1]
    assert fake_scorer.max_in_flight == 2  # concurrent, but never beyond the limit
    assert result.rewards == [[1.0, 0.0, 1.0, 0.0]] * 10
    assert [g.reference for call in fake_scorer.calls for g in call] == refs
    assert result.mask == [[True] * 4] * 10


async def test_response_budget_never_splits_a_group(fake_scorer) -> None:  # type: ignore[no-untyped-def]
    rewarder = GroupRewarder(fake_scorer, max_responses_per_request=12)
    await rewarder.score([["a"] * 5] * 5, ["a"] * 5)
    assert [sum(len(g.responses) for g in call) for call in fake_scorer.calls] == [10, 10, 5]


async def test_samples_without_verdict_are_masked(fake_scorer) -> None:  # type: ignore[no-untyped-def]
    fake_scorer.error_on = "boom"
    result = await GroupRewarder(fake_scorer).score([["1", "boom", "2"]], ["1"])
    assert result.mask == [[True, False, True]]
    assert result.rewards == [[1.0, None, 0.0]]
    assert result.advantages[0][1] is None
    assert result.flat_mask() == [True, False, True]


async def test_real_service_rewards_and_advantages(referee_url: str) -> None:
    # --- README: group rewarder ---
    rewarder = GroupRewarder(referee_url, verifier="exact", options={"strip": True})
    result = await rewarder.score(
        completions=[["231", "132", " 231 ", "241"], ["99", "99"]],  # G completions per prompt
        references=["231", "99"],
    )
    # result.rewards, result.advantages (None where no verdict), result.mask, result.zero_variance
    # --- end README ---
    try:
        assert result.rewards == [[1.0, 0.0, 1.0, 0.0], [1.0, 1.0]]
        assert result.mask == [[True] * 4, [True] * 2]
        assert result.zero_variance == [False, True]
        expected = group_advantages(result.rewards[0]).advantages
        assert result.advantages[0] == [pytest.approx(a, abs=1e-9) for a in expected]  # type: ignore[arg-type]
        assert result.advantages[1] == [0.0, 0.0]
        flat = [a for a in result.flat_advantages() if a is not None]
        assert all(math.isfinite(a) for a in flat)
        assert {v.verifier.split("@")[0] for group in result.verdicts for v in group} == {"exact"}
    finally:
        await rewarder.aclose()


async def test_real_service_dr_grpo_scale_and_weighted_components(referee_url: str) -> None:
    rewarder = GroupRewarder(
        referee_url,
        verifier=[
            VerifierComponent(name="exact", weight=1.0, options={"strip": True}),
            VerifierComponent(name="exact", weight=0.5, options={"strip": False}),
        ],
        advantage=AdvantageConfig(scale="none"),
    )
    try:
        result = await rewarder.score([["7", " 7", "8"]], ["7"])
    finally:
        await rewarder.aclose()
    assert result.rewards == [[1.5, 1.0, 0.0]]
    mean = 2.5 / 3
    assert result.advantages == [[pytest.approx(r - mean) for r in (1.5, 1.0, 0.0)]]


def test_adapters_do_not_import_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, referee.trainer_adapter.rewarder, referee.trainer_adapter.trl, "
        "referee.trainer_adapter.verl, referee.trainer_adapter.cli; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
