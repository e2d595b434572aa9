"""OpenRLHF 0.11.2's own remote-reward client, driven against a real Referee service.

openrlhf is installed without its dependencies (`make`: ``openrlhf==0.11.2 --no-deps``; its
reward client imports only aiohttp). For ``--reward.remote_url URL`` every vLLM rollout actor
(`RolloutRayActor`, openrlhf/trainer/ray/vllm_engine.py, which needs vllm and a GPU) runs
`openrlhf.utils.agent.SingleTurnAgentExecutor`: it tokenises the prompt, generates with the
engine, decodes prompt + response WITHOUT skipping special tokens, POSTs ``{query, prompts,
labels}`` for that one sample (5 tries, 1 s apart, any error status alike) and keeps
rewards/scores/extra_logs; a sample whose request still fails gets reward None. Here the
executor is OpenRLHF's own; only the vLLM engine is replaced by `ScriptedEngine` (the shape of
vllm's `generate` output: ``.outputs[0].token_ids/.text/.finish_reason/.logprobs``).

The step after it, `_process_response_into_experience` in
openrlhf/trainer/ppo_utils/samples_generator.py (0.11.2; the module imports vllm), is mirrored
by `to_experience`; the batching after that is OpenRLHF's own `Experience.concat_experiences`
and `split_experience_batch` (openrlhf/trainer/ppo_utils/experience.py), which refuse info
columns whose length is not the batch size.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
openrlhf = pytest.importorskip(
    "openrlhf",
    reason="needs openrlhf: `make` installs it with the `trainers` extra (pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from openrlhf.trainer.ppo_utils.experience import Experience, split_experience_batch  # noqa: E402
from openrlhf.utils.agent import SingleTurnAgentExecutor  # noqa: E402

from tests.support.tokenizers import EOS, printable_tokenizer  # noqa: E402


@dataclass
class SamplingParams:
    """The fields of vllm.SamplingParams the executor reads and sets."""

    max_tokens: int | None = 64
    logprobs: int | None = None
    temperature: float = 1.0


@dataclass
class ScriptedEngine:
    """Stands in for vllm.AsyncLLMEngine: answers each prompt with its scripted text + EOS."""

    tokenizer: Any
    answers: dict[str, str]
    prompts_seen: list[str] = field(default_factory=list)

    async def generate(
        self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        prompt = self.tokenizer.decode(prompt_token_ids)
        self.prompts_seen.append(prompt)
        ids = [
            *self.tokenizer.encode(self.answers[prompt], add_special_tokens=False),
            self.tokenizer.eos_token_id,
        ]
        ids = ids[: sampling_params.max_tokens]
        output = SimpleNamespace(
            token_ids=ids,
            text=self.tokenizer.decode(ids),
            finish_reason="stop" if ids[-1] == self.tokenizer.eos_token_id else "length",
            logprobs=None,
        )
        return SimpleNamespace(outputs=[output])


def to_experience(response: dict[str, Any]) -> Experience:
    """The reward part of `_process_response_into_experience` (samples_generator.py, 0.11.2)."""
    reward_val, score_val = response.get("reward"), response.get("scores")
    info: dict[str, torch.Tensor] = {}
    if reward_val is not None:
        info["reward"] = torch.tensor([reward_val])
    if score_val is not None:
        info["score"] = torch.tensor([score_val])
    for key, value in response.get("extra_logs", {}).items():
        if isinstance(value, torch.Tensor):
            value = value.flatten()[0].item()
        info[key] = torch.tensor([value])
    return Experience(
        sequences=torch.tensor([response["observation_tokens"]]),
        rewards=torch.tensor([reward_val]) if reward_val is not None else None,
        scores=torch.tensor([score_val]) if score_val is not None else None,
        prompts=[response["prompt"]],
        labels=[response["label"]],
        info=info,
    )


async def rollout(url: str, samples: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """One rollout actor: `execute` for every (prompt, label, answer), all concurrently."""
    tokenizer = printable_tokenizer()
    engine = ScriptedEngine(tokenizer, {prompt: answer for prompt, _, answer in samples})
    executor = SingleTurnAgentExecutor([url])  # --reward.remote_url is split on commas
    return list(
        await asyncio.gather(
            *(
                executor.execute(prompt, label, SamplingParams(), 128, tokenizer, engine)
                for prompt, label, _ in samples
            )
        )
    )


def test_the_installed_openrlhf_is_the_one_driven() -> None:
    from importlib.metadata import version

    assert version("openrlhf") == "0.11.2" and openrlhf.__name__ == "openrlhf"


async def test_single_turn_executor_scores_responses_with_their_eos_text(referee_url: str) -> None:
    numeric = json.dumps({"verifier": "numeric", "reference": 4})
    samples = [
        ("Q: 2+2? A:", numeric, "4"),
        ("Q: 2+3? A:", numeric, "5"),
        ("Q: say hi A:", "hi", "hi"),  # a plain label: the `?verifier=` default judges it
        ("Q: gsm A:", json.dumps({"verifier": "math", "reference": "72"}), "so #### 72"),
    ]
    outputs = await rollout(f"{referee_url}/v1/openrlhf/reward?verifier=exact", samples)
    tokenizer = printable_tokenizer()
    # What OpenRLHF sent: the response still carries its end-of-sequence text.
    assert tokenizer.decode(outputs[0]["observation_tokens"]) == f"Q: 2+2? A:4{EOS}"
    assert [o["reward"] for o in outputs] == [[1.0], [0.0], [1.0], [1.0]]
    assert [o["scores"] for o in outputs] == [[1.0], [0.0], [1.0], [1.0]]
    assert [o["extra_logs"] for o in outputs] == [{"referee_error": [0.0]}] * 4

    batch = Experience.concat_experiences([to_experience(o) for o in outputs], tokenizer.pad_token_id)
    assert batch.rewards.flatten().tolist() == [1.0, 0.0, 1.0, 1.0]
    assert batch.info["referee_error"].flatten().tolist() == [0.0] * 4
    assert len(split_experience_batch(batch)) == 4  # every info column has the batch's length


async def test_strip_eos_false_judges_the_text_as_sent(referee_url: str) -> None:
    samples = [("Q: 2+2? A:", "4", "4")]
    stripped = await rollout(f"{referee_url}/v1/openrlhf/reward", samples)
    kept = await rollout(f"{referee_url}/v1/openrlhf/reward?strip_eos=false", samples)
    assert (stripped[0]["reward"], kept[0]["reward"]) == ([1.0], [0.0])


async def test_weighted_components_and_a_bad_label_with_on_error_zero(referee_url: str) -> None:
    """`?on_error=zero`: a sample without a verdict scores 0, flagged in extra_logs; every sample
    must report the same extra_logs keys, or OpenRLHF's batch has columns of the wrong length."""
    components = [{"name": "format.think_answer", "weight": 0.5}, {"name": "exact", "weight": 1.0}]
    label = json.dumps({"verifier": components, "reference": "<answer>42</answer>"})
    bad = json.dumps({"verifier": components, "reference": {"not": "a string"}})
    good = "<think>hm</think><answer>42</answer>"
    samples = [("Q1:", label, good), ("Q2:", bad, good), ("Q3:", label, "42")]
    outputs = await rollout(f"{referee_url}/v1/openrlhf/reward?on_error=zero", samples)
    assert [o["extra_logs"]["referee_error"] for o in outputs] == [[0.0], [1.0], [0.0]]
    assert [o["reward"] for o in outputs] == [[0.5], [0.0], [0.0]]
    assert outputs[0]["extra_logs"]["referee/format.think_answer"] == [1.0]


async def test_every_sample_reports_the_same_extra_logs_keys(referee_url: str) -> None:
    """A sample without a verdict (its reference cannot be used) still reports every
    referee/<component> key its label names, so OpenRLHF can batch it with the others."""
    components = [{"name": "format.think_answer", "weight": 0.5}, {"name": "exact", "weight": 1.0}]
    label = json.dumps({"verifier": components, "reference": "<answer>42</answer>"})
    bad = json.dumps({"verifier": components, "reference": {"not": "a string"}})
    samples = [("Q1:", label, "<answer>42</answer>"), ("Q2:", bad, "<answer>42</answer>")]
    outputs = await rollout(f"{referee_url}/v1/openrlhf/reward?on_error=zero", samples)
    assert set(outputs[1]["extra_logs"]) == set(outputs[0]["extra_logs"])
    batch = Experience.concat_experiences([to_experience(o) for o in outputs], 0)
    assert len(split_experience_batch(batch)) == 2


@pytest.mark.slow
async def test_a_bad_label_without_on_error_zero_leaves_openrlhf_without_a_reward(referee_url: str) -> None:
    """Without `?on_error=zero` the route refuses the sample (422 for a label that cannot be
    used); OpenRLHF retries any error status 5 times, 1 s apart, then keeps reward None, and its
    batching fails on that sample: why docs/training.md recommends `?on_error=zero`."""
    bad = json.dumps({"verifier": "no.such.verifier", "reference": "4"})
    outputs = await rollout(f"{referee_url}/v1/openrlhf/reward", [("Q1:", "4", "4"), ("Q2:", bad, "4")])
    assert [o["reward"] for o in outputs] == [[1.0], None]
    with pytest.raises((TypeError, AttributeError, ValueError)):
        split_experience_batch(Experience.concat_experiences([to_experience(o) for o in outputs], 0))
