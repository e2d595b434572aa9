"""verl compute_score (per sample and batched) and the OpenRLHF remote-reward logic."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from referee.trainer_adapter import verl
from referee.trainer_adapter.openrlhf import OpenRLHFRequest, decode_label, openrlhf_rewards
from referee.trainer_adapter.rewarder import GroupRewarder


def test_verl_compute_score_per_sample(referee_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_URL", referee_url)
    # --- README: verl ---
    from referee.trainer_adapter.verl import compute_score

    # data_source -> verifier: extra_info["verifier"], else the `verifier` kwarg, else
    # verl.DATA_SOURCES (openai/gsm8k -> math, ...), else the data source itself.
    score = compute_score("logic.x", "42", "42", extra_info={"verifier": "exact"})
    # --- end README ---
    assert score == 1.0
    assert compute_score("any", " 42 ", "42", verifier="exact", options={"strip": False}) == 0.0
    assert compute_score("any", "41", "42", extra_info={"verifier": "exact"}, return_dict=True) == {
        "score": 0.0,
        "referee_error": 0.0,
    }
    assert compute_score("numeric", "0.5", 0.5, url=referee_url) == 1.0  # data source names the verifier


def test_verl_data_source_mapping() -> None:
    assert verl.resolve_verifier("openai/gsm8k", None, None, None) == ("math", {})
    assert verl.resolve_verifier("openai/gsm8k", {"verifier": "numeric"}, "exact", None) == ("numeric", {})
    assert verl.resolve_verifier("openai/gsm8k", {}, "exact", {"strip": True}) == ("exact", {"strip": True})
    assert verl.resolve_verifier("logic.n_queens", None, None, None) == ("logic.n_queens", {})


def test_verl_batched_form_makes_one_request(referee_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = verl._client(referee_url, None)
    calls: list[int] = []
    real = client.score_groups

    def counting(groups, advantage=None):  # type: ignore[no-untyped-def]
        calls.append(len(groups))
        return real(groups, advantage)

    monkeypatch.setattr(client, "score_groups", counting)
    scores = verl.compute_score_batch(
        data_sources=["exact", "exact", "exact", "numeric"],
        solution_strs=["a", "b", "a", "2.0"],
        ground_truths=["a", "a", "a", 2],
        extra_infos=[None, None, None, None],
        url=referee_url,
    )
    assert scores == [1.0, 0.0, 1.0, 1.0]
    assert calls == [2]  # one request; the three "a" answers share a group


def test_verl_error_verdict_scores_error_score(monkeypatch: pytest.MonkeyPatch, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    fake_scorer.error_on = "boom"

    class SyncFake:
        def score_groups(self, groups, advantage=None):  # type: ignore[no-untyped-def]
            return asyncio.run(fake_scorer.score_groups(groups, advantage))

    monkeypatch.setattr(verl, "_client", lambda url, key: SyncFake())
    out = verl.compute_score_batch(
        ["exact"] * 2, ["1", "boom"], ["1", "1"], error_score=-1.0, return_dict=True
    )
    assert out == [{"score": 1.0, "referee_error": 0.0}, {"score": -1.0, "referee_error": 1.0}]


def test_decode_label_encodings() -> None:
    assert decode_label('{"verifier": "math", "reference": "\\\\frac{1}{2}"}', "exact") == (
        "math",
        "\\frac{1}{2}",
        {},
    )
    assert decode_label("42", "exact") == ("exact", "42", {})  # a plain label stays a string
    assert decode_label('{"not": "a spec"}', "numeric") == ("numeric", '{"not": "a spec"}', {})
    spec, ref, opts = decode_label(
        json.dumps({"verifier": [{"name": "exact", "weight": 2}], "reference": "x", "options": {"a": 1}}),
        "exact",
    )
    assert isinstance(spec, list) and spec[0].weight == 2.0 and ref == "x" and opts == {"a": 1}


def test_openrlhf_request_lengths_are_checked() -> None:
    with pytest.raises(ValidationError, match="labels"):
        OpenRLHFRequest(query=["a", "b"], prompts=["a", "b"], labels=["x"])
    assert OpenRLHFRequest.model_validate({"query": ["q"], "future_field": 1}).labels is None


async def test_openrlhf_rewards_against_real_service(referee_url: str) -> None:
    rewarder = GroupRewarder(referee_url)
    # --- README: OpenRLHF ---
    payload = OpenRLHFRequest(
        query=["Q: 2+2? A:4", "Q: 2+2? A:5", "Q: say hi A:hi"],
        prompts=["Q: 2+2? A:", "Q: 2+2? A:", "Q: say hi A:"],
        labels=['{"verifier": "numeric", "reference": 4}', '{"verifier": "numeric", "reference": 4}', "hi"],
    )
    response = await openrlhf_rewards(payload, rewarder, default_verifier="exact")
    # --- end README ---
    await rewarder.aclose()
    assert response.rewards == [1.0, 0.0, 1.0]
    assert response.scores == response.rewards
    assert response.extra_logs == {"referee_error": [0.0, 0.0, 0.0]}


async def test_openrlhf_masks_errors_as_error_reward(fake_scorer) -> None:  # type: ignore[no-untyped-def]
    fake_scorer.error_on = "boom"
    payload = OpenRLHFRequest(query=["p1", "pboom"], prompts=["p", "p"], labels=["1", "1"])
    out = await openrlhf_rewards(payload, GroupRewarder(fake_scorer), error_reward=-0.5)
    assert out.rewards == [1.0, -0.5]
    assert out.extra_logs["referee_error"] == [0.0, 1.0]
    assert [g.responses for g in fake_scorer.calls[0]] == [["1", "boom"]]  # prompt stripped, one group
