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
    # No label: OpenRLHF sends "" without --data.label_key; no reference, never the empty one.
    assert decode_label("", "exact") == decode_label(None, "exact") == ("exact", None, {})
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


# A tool-use episode as OpenRLHF's query holds it: the chat-templated prompt ends with the
# assistant header (add_generation_prompt), so the response's first turn has no marker.
CHATML_PROMPT = (
    "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\nLet me think.<|im_end|>\n"
    "<|im_start|>user\nUse the tool.<|im_end|>\n<|im_start|>assistant\n"
)
CHATML_EPISODE = (
    "<tool_call>mul(6, 7)</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>42</tool_response>"
    "<|im_end|>\n<|im_start|>assistant\n42<|im_end|><|endoftext|>"
)
LLAMA3_PROMPT = (
    "<|start_header_id|>user<|end_header_id|>\n\nWhat is 6*7?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
LLAMA3_EPISODE = (
    "<tool_call>mul(6, 7)</tool_call><|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n42<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n42<|eot_id|>"
)


@pytest.mark.parametrize(
    ("prompt", "episode"), [(CHATML_PROMPT, CHATML_EPISODE), (LLAMA3_PROMPT, LLAMA3_EPISODE)]
)
def test_response_turns_start_with_the_turn_the_prompt_opened(prompt: str, episode: str) -> None:
    from referee.service.openrlhf import response_turns

    # The prompt's own history ("Let me think.") is no turn of the response.
    assert response_turns(prompt + episode, prompt) == ["<tool_call>mul(6, 7)</tool_call>", "42"]
    assert response_turns(prompt + "42<|im_end|>", prompt)[-1].startswith("42")
    assert response_turns("Q: 2+2? A:4", "Q: 2+2? A:") == ["4"]  # no template: one turn
    assert response_turns(prompt, prompt) == [""]  # nothing generated


@pytest.mark.parametrize(
    ("turns", "judged"),
    [
        ("last", "42"),
        ("all", "<tool_call>mul(6, 7)</tool_call>\n\n42"),
        (0, "<tool_call>mul(6, 7)</tool_call>"),
        (-2, "<tool_call>mul(6, 7)</tool_call>"),
        (2, ""),
    ],
)
async def test_openrlhf_judges_the_chosen_turns_of_a_multi_turn_episode(
    fake_scorer,
    turns: str | int,
    judged: str,  # type: ignore[no-untyped-def]
) -> None:
    payload = OpenRLHFRequest(query=[CHATML_PROMPT + CHATML_EPISODE], prompts=[CHATML_PROMPT], labels=["42"])
    await openrlhf_rewards(payload, GroupRewarder(fake_scorer).score_results, turns=turns)
    assert fake_scorer.calls[0][0].responses == [judged]
