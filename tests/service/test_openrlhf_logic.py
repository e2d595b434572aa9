"""OpenRLHF's remote-reward logic (label decoding, grouping, masking), off the HTTP route.

`openrlhf_rewards` takes any group-scoring callable; here a `GroupRewarder` over a real
service or a fake scorer stands in for the service's in-process engine.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from referee.service.openrlhf import OpenRLHFRequest, decode_label, openrlhf_rewards
from referee.trainer_adapter.rewarder import GroupRewarder


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
    payload = OpenRLHFRequest(
        query=["Q: 2+2? A:4", "Q: 2+2? A:5", "Q: say hi A:hi"],
        prompts=["Q: 2+2? A:", "Q: 2+2? A:", "Q: say hi A:"],
        labels=['{"verifier": "numeric", "reference": 4}', '{"verifier": "numeric", "reference": 4}', "hi"],
    )
    response = await openrlhf_rewards(payload, rewarder.score_results, default_verifier="exact")
    await rewarder.aclose()
    assert response.rewards == [1.0, 0.0, 1.0]
    assert response.scores == response.rewards
    assert response.extra_logs == {"referee_error": [0.0, 0.0, 0.0]}


async def test_openrlhf_masks_errors_as_error_reward(fake_scorer) -> None:  # type: ignore[no-untyped-def]
    fake_scorer.error_on = "boom"
    payload = OpenRLHFRequest(query=["p1", "pboom"], prompts=["p", "p"], labels=["1", "1"])
    out = await openrlhf_rewards(payload, GroupRewarder(fake_scorer).score_results, error_reward=-0.5)
    assert out.rewards == [1.0, -0.5]
    assert out.extra_logs["referee_error"] == [0.0, 1.0]
    assert [g.responses for g in fake_scorer.calls[0]] == [["1", "boom"]]  # prompt stripped, one group
