"""Which turns of a conversation are judged: message lists (TRL) and chat-templated text
(OpenRLHF queries, verl agent loops), with the adapters wired to it."""

from __future__ import annotations

import json

import httpx
import pytest

from referee.turns import select_turns

MESSAGES = [
    {"role": "user", "content": "solve"},
    {"role": "assistant", "content": "let me call a tool"},
    {"role": "tool", "content": "tool says 4"},
    {"role": "assistant", "content": [{"type": "text", "text": "\\boxed{4}"}]},
]
CHATML = (
    "<|im_start|>user\nsolve<|im_end|>\n<|im_start|>assistant\nlet me call a tool<|im_end|>\n"
    "<|im_start|>tool\ntool says 4<|im_end|>\n<|im_start|>assistant\n\\boxed{4}<|im_end|>\n"
)
LLAMA3 = (
    "<|start_header_id|>user<|end_header_id|>\n\nsolve<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nlet me call a tool<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n\\boxed{4}<|eot_id|>"
)


@pytest.mark.parametrize("conversation", [MESSAGES, CHATML, LLAMA3])
def test_turn_selection(conversation: object) -> None:
    assert select_turns(conversation) == "\\boxed{4}"
    assert select_turns(conversation, 0) == "let me call a tool"
    assert select_turns(conversation, -1) == "\\boxed{4}"
    assert select_turns(conversation, "all") == "let me call a tool\n\n\\boxed{4}"
    assert select_turns(conversation, 7) == ""


def test_plain_text_is_one_turn() -> None:
    assert select_turns("just \\boxed{4}") == "just \\boxed{4}"
    assert select_turns("x", "all") == "x" and select_turns([], "last") == ""
    with pytest.raises(ValueError, match="turns"):
        select_turns("x", "first")


def test_adapters_judge_the_chosen_turn(referee_url: str) -> None:
    from referee.trainer_adapter import verl
    from referee.trainer_adapter.trl import RefereeReward

    reward = RefereeReward(referee_url, verifier="math", reference_column="answer")
    assert reward(prompts=["p"], completions=[MESSAGES], answer=["4"]) == [1.0]
    first = RefereeReward(referee_url, verifier="math", reference_column="answer", turns=0)
    assert first(prompts=["p"], completions=[MESSAGES], answer=["4"]) == [0.0]
    assert verl.compute_score("x", CHATML, "4", verifier="math", url=referee_url) == 1.0
    assert verl.compute_score("x", CHATML, "4", verifier="math", url=referee_url, turns=0) == 0.0
    url = f"{referee_url}/v1/openrlhf/reward"
    payload = {
        "query": [LLAMA3],
        "prompts": [""],
        "labels": [json.dumps({"verifier": "math", "reference": "4"})],
    }
    assert httpx.post(url, json=payload).json()["rewards"] == [1.0]
    assert httpx.post(url, params={"turns": "0"}, json=payload).json()["rewards"] == [0.0]
    assert httpx.post(url, params={"turns": "first"}, json=payload).status_code == 422
