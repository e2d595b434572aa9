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

import httpx
import pytest

torch = pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
openrlhf = pytest.importorskip(
    "openrlhf",
    reason="needs openrlhf: `make` installs it with the `trainers` extra (pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from openrlhf.trainer.ppo_utils.experience import Experience, split_experience_batch  # noqa: E402
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor, SingleTurnAgentExecutor  # noqa: E402

from tests.support.tokenizers import EOS, PAD, PRINTABLE, char_tokenizer, printable_tokenizer  # noqa: E402


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


def chatml_tokenizer() -> Any:
    """printable_tokenizer with newlines and ChatML's `<|im_start|>` as a special token."""
    tokenizer = char_tokenizer(PRINTABLE + "\n", PAD, EOS)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    return tokenizer


@dataclass
class EpisodeEngine:
    """vllm's engine over a scripted episode: the i-th call answers `turns[i]` + EOS; like vllm
    (`skip_special_tokens=True` by default) its `.text` leaves the EOS text out."""

    tokenizer: Any
    turns: list[str]
    calls: int = 0

    async def generate(
        self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        text, self.calls = self.turns[self.calls], self.calls + 1
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        output = SimpleNamespace(
            token_ids=ids,
            text=self.tokenizer.decode(ids, skip_special_tokens=True),
            finish_reason="stop",
            logprobs=None,
        )
        return SimpleNamespace(outputs=[output])


TOOL_FEEDBACK = (
    "<|im_end|>\n<|im_start|>user\n<tool_response>42</tool_response><|im_end|>\n<|im_start|>assistant\n"
)


def tool_agent(url: str) -> type[AgentInstanceBase]:
    """An `--train.agent_func_path` agent whose environment answers a tool call (as the gem
    example in OpenRLHF's repo does: feedback in the chat template) and, once the policy
    answers, asks Referee for the episode's reward: the query as OpenRLHF's executor built it
    (observation + action), the prompt as the episode began."""

    class ToolAgent(AgentInstanceBase):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.prompt = ""

        async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            self.prompt = states["observation"]
            return {"observation": states["observation"]}

        async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            if "<tool_call>" in states["action_text"]:
                return {"rewards": torch.tensor(0.0), "environment_feedback": TOOL_FEEDBACK, "done": False}
            request = {
                "query": [states["observation_text"] + states["action_text"]],
                "prompts": [self.prompt],
                "labels": [states["label"]],
            }
            async with httpx.AsyncClient(timeout=60) as client:
                answer = await client.post(url, json=request)
            answer.raise_for_status()
            reward = answer.json()["rewards"][0]
            return {"rewards": torch.tensor(reward), "environment_feedback": "", "done": True}

    return ToolAgent


@pytest.mark.parametrize(
    ("turns", "label"),
    [
        ("last", "42"),
        ("0", "<tool_call>mul(6, 7)</tool_call>"),  # the first turn: right after the prompt
        ("all", "<tool_call>mul(6, 7)</tool_call> 42"),  # joined; exact collapses the blank line
    ],
)
async def test_multi_turn_agent_episode_is_judged_on_the_chosen_turns(
    referee_url: str, turns: str, label: str
) -> None:
    """OpenRLHF's `MultiTurnAgentExecutor` runs a tool-use episode; the agent posts the whole
    episode to the route. The prompt (chat template applied) ends with the assistant header, so
    the first turn follows it unmarked: `turns=0` and `turns=all` must still see it."""
    tokenizer = chatml_tokenizer()
    prompt = "<|im_start|>user\nWhat is 6*7? Use the tool.<|im_end|>\n<|im_start|>assistant\n"
    engine = EpisodeEngine(tokenizer, ["<tool_call>mul(6, 7)</tool_call>", "42"])
    executor = MultiTurnAgentExecutor(tool_agent(f"{referee_url}/v1/openrlhf/reward?turns={turns}"))
    episode = await executor.execute(prompt, label, SamplingParams(), 512, tokenizer, engine)
    assert engine.calls == 2 and len(episode["action_ranges"]) == 2
    assert episode["reward"] == 1.0
