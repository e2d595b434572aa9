"""TRL reward functions: TRL's calling convention, one request per call, None for no verdict."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from referee.client import Client
from referee.models import AdvantageConfig, GroupSpec, GroupsResponse
from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward, completion_text


class _CountingClient:
    """Wraps a real client and records each `score_groups` call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[GroupSpec]] = []

    def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None, on_invalid: Any = "reject"
    ) -> Any:
        self.calls.append(list(groups))
        return self.inner.score_groups(groups, advantage, on_invalid)

    def close(self) -> None:
        self.inner.close()


def test_completion_text_of_plain_and_conversational_completions() -> None:
    assert completion_text("42") == "42"
    assert completion_text([{"role": "assistant", "content": "42"}]) == "42"
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "4"}, {"type": "text", "text": "2"}]}]
    assert completion_text(parts) == "42"
    assert completion_text([]) == ""


def test_sync_reward_groups_completions_and_makes_one_request(referee_url: str) -> None:
    client = _CountingClient(Client(referee_url))
    reward = RefereeReward(referee_url, verifier="exact", reference_column="answer", client=client)
    metrics: dict[str, float] = {}
    prompts = ["1+1=", "1+1=", "2+2=", "2+2=", "1+1="]
    out = reward(
        prompts=prompts,
        completions=["2", "3", "4", "4", "2"],
        completion_ids=[[0]] * 5,
        answer=["2", "2", "4", "4", "2"],
        trainer_state=object(),
        log_extra=lambda column, values: None,
        log_metric=lambda name, value: metrics.__setitem__(name, value),
    )
    assert out == [1.0, 0.0, 1.0, 1.0, 1.0]
    assert len(client.calls) == 1
    assert sorted(len(g.responses) for g in client.calls[0]) == [2, 3]  # one group per prompt
    assert metrics["referee/error_fraction"] == 0.0
    assert reward.__name__ == "referee"
    reward.close()


def test_conversational_completions_and_per_row_verifier(referee_url: str) -> None:
    reward = RefereeReward(referee_url, verifier_column="verifier", reference_column="reference")
    prompt = [{"role": "user", "content": "Say 7"}]
    completions = [
        [{"role": "assistant", "content": "7"}],
        [{"role": "assistant", "content": "The answer is 7"}],
    ]
    out = reward(
        prompts=[prompt, prompt],
        completions=completions,
        reference=["7", "^.*7$"],
        verifier=["exact", "regex"],
    )
    assert out == [1.0, 1.0]
    reward.close()


def test_missing_reference_column_names_the_columns(referee_url: str) -> None:
    reward = RefereeReward(referee_url, reference_column="answer")
    with pytest.raises(KeyError, match="solution"):
        reward(prompts=["p"], completions=["c"], solution=["c"], trainer_state=None)


def test_no_verdict_becomes_none(fake_scorer) -> None:  # type: ignore[no-untyped-def]
    fake_scorer.error_on = "boom"

    class SyncFake:
        def score_groups(
            self,
            groups: list[GroupSpec],
            advantage: AdvantageConfig | None = None,
            on_invalid: Any = "reject",
        ) -> GroupsResponse:
            return asyncio.run(fake_scorer.score_groups(groups, advantage))

    reward = RefereeReward("http://unused", reference_column="answer", client=SyncFake())
    assert reward(prompts=["p", "p"], completions=["1", "boom"], answer=["1", "1"]) == [1.0, None]


async def test_async_reward_matches_sync_and_survives_pickling(referee_url: str) -> None:
    reward = AsyncRefereeReward(
        referee_url, verifier="exact", options={"strip": True}, reference_column="answer"
    )
    kwargs = {"prompts": ["a", "a", "b"], "completions": [" 5", "6", "x"], "answer": ["5", "5", "x"]}
    try:
        assert await reward(**kwargs) == [1.0, 0.0, 1.0]
    finally:
        await reward.aclose()
    clone = pickle.loads(pickle.dumps(reward))
    try:
        assert await clone(**kwargs) == [1.0, 0.0, 1.0]
    finally:
        await clone.aclose()


def test_weighted_components_one_reward_masks_whole_and_logs_parts(referee_url: str) -> None:
    """One reward function with weighted components: the parts reach TRL's logs, and a part
    without a verdict nulls the whole reward (never a format-only partial reward)."""
    reward = RefereeReward(
        referee_url,
        verifier=[{"name": "format.think_answer", "weight": 0.25}, {"name": "math", "weight": 1.0}],
        reference_column="answer",
    )
    metrics: dict[str, float] = {}
    extra: dict[str, list[Any]] = {}
    completions = [
        "<think>x</think><answer>4</answer>",
        "<answer>4</answer>",
        "<think>y</think><answer>5</answer>",
    ]
    out = reward(
        prompts=["p"] * 3,
        completions=completions,
        answer=["4"] * 3,
        log_extra=lambda column, values: extra.__setitem__(column, values),
        log_metric=lambda name, value: metrics.__setitem__(name, value),
    )
    fmt = extra["referee/format.think_answer"]
    correct = extra["referee/math"]
    assert out == [pytest.approx(0.25 * f + 1.0 * e) for f, e in zip(fmt, correct, strict=True)]
    assert fmt[0] == 1.0 and fmt[1] == 0.0 and correct == [1.0, 1.0, 0.0]
    assert metrics["referee/math"] == pytest.approx(2 / 3) and "referee/reason" in extra
    # A component that cannot decide (no usable reference for math): the whole reward is None,
    # its well-formatted part (0.25) is not handed out alone.
    assert reward(prompts=["p"], completions=[completions[0]], answer=[None]) == [None]
    reward.close()
