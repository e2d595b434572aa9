"""TRL 1.16's `environment_factory` with `RefereeEnvironment`: TRL's own introspection finds
exactly one tool, `python`, whose schema transformers builds from its docstring; `reset(**row)`
starts an episode from the row, tool calls keep their state within it, the reward function
verifies each rollout's final answer, and the next `reset` ends the previous episode."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the `train` extra: pip install -e '.[train]'")
pytest.importorskip("transformers", reason="needs the `train` extra: pip install -e '.[train]'")

from transformers.utils import get_json_schema

from referee.trainer_adapter.trl_env import (
    RefereeEnvironment,
    RefereeEpisodeReward,
    final_answer,
    prompt_text,
)
from tests.support.fake_rollouts import FakeRollouts
from tests.support.tokenizers import qwen_tokenizer

QUESTION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 6*7?"}]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeRollouts]:
    with FakeRollouts() as running:
        yield running


def tools_as_trl_sees_them(environment: object) -> list[str]:
    """GRPOTrainer.__init__'s probe: the class's functions, less reset/get_reward/private."""
    members = inspect.getmembers(type(environment), predicate=inspect.isfunction)
    return [name for name, _ in members if name not in ("reset", "get_reward") and not name.startswith("_")]


def test_trl_sees_one_python_tool_with_its_schema(fake: FakeRollouts) -> None:
    environment = RefereeEnvironment.factory(fake.url, verifier="exact")()
    assert tools_as_trl_sees_them(environment) == ["python"]
    schema = get_json_schema(environment.python)
    assert schema["function"]["name"] == "python"
    assert schema["function"]["parameters"]["properties"]["code"]["type"] == "string"
    assert schema["function"]["parameters"]["required"] == ["code"]


def test_episodes_per_rollout_verified_by_the_reward(fake: FakeRollouts) -> None:
    make = RefereeEnvironment.factory(fake.url, api_key="trl-key", verifier="exact")
    right, wrong = make(), make()
    assert right.reset(prompt=QUESTION, reference="42", unrelated_column=1) is None
    wrong.reset(prompt="What is 6*7?", reference="42")
    (first, second) = (right._episode, wrong._episode)
    assert first is not None and second is not None
    assert fake.episodes[first.episode_id].task == {
        "prompt": "What is 6*7?",
        "verifier": "exact",
        "reference": "42",
    }
    assert right.python("x = 6 * 7") == "(no output)"
    assert right.python("print(x)") == "stdout:\n42\n"
    assert "NameError" in wrong.python("x")  # no state crosses episodes
    reward = RefereeEpisodeReward()
    completions = [
        [
            {"role": "assistant", "content": "", "tool_calls": []},
            {"role": "tool", "content": "42"},
            {"role": "assistant", "content": "42"},
        ],
        [{"role": "assistant", "content": "41"}],
    ]
    assert reward([QUESTION, QUESTION], completions, environments=[right, wrong]) == [1.0, 0.0]
    assert fake.episodes[first.episode_id].tool_calls == 2 and right.tool_calls == 2
    right.reset(prompt=QUESTION, reference="7")  # pooled and reused: the previous episode ends
    assert first.episode_id not in fake.episodes and len(fake.episodes) == 2
    with pytest.raises(ValueError, match="environment_factory"):
        reward([QUESTION], [completions[1]])


def test_prompts_and_answers_are_read_from_either_format() -> None:
    assert prompt_text(QUESTION) == "What is 6*7?" and prompt_text("plain") == "plain"
    assert (
        prompt_text([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}]) == "a"
    )
    assert final_answer("done") == "done" and final_answer([{"role": "assistant", "content": None}]) == ""


# --- a real GRPOTrainer -------------------------------------------------------------------------

FINAL_TURN: list[str] = []  # the conversations the scripted model saw before its final answer


def tool_call_text(code: str) -> str:
    call = {"name": "python", "arguments": {"code": code}}
    return "<tool_call>\n" + json.dumps(call) + "\n</tool_call><|im_end|>"


def scripted_model(tokenizer: Any) -> Any:
    """A tiny GPT-2 (from a config) whose `generate` is steered, token by token, through a
    scripted episode: a tool call setting `x`, one printing it, then the answer `42`. The turn
    is read from the conversation so far (how many tool responses it holds), as a model would."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LogitsProcessor, LogitsProcessorList

    scripts = [tool_call_text("x = 6 * 7"), tool_call_text("print(x)"), "42<|im_end|>"]
    script_ids = [tokenizer.encode(s, add_special_tokens=False) for s in scripts]

    class Scripted(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            for b, row in enumerate(input_ids.tolist()):
                text = tokenizer.decode(row)
                turn = min(text.count("</tool_response>"), len(scripts) - 1)
                script, following = script_ids[turn], script_ids[turn][0]
                for k in range(min(len(script), len(row)), 0, -1):
                    if row[-k:] == script[:k]:
                        following = script[k] if k < len(script) else tokenizer.eos_token_id
                        break
                if turn == 2 and following == script[0]:
                    FINAL_TURN.append(text)
                scores[b, :] = -1e9
                scores[b, following] = 0.0
            return scores

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=4096,  # Qwen's system prompt renders the tool's schema: ~1,500 characters
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    model.generate = functools.partial(model.generate, logits_processor=LogitsProcessorList([Scripted()]))
    return model


def grpo_step(url: str, tmp_path: Path, api_key: str) -> tuple[dict[str, Any], list[str]]:
    """One GRPOTrainer step with `RefereeEnvironment` (2 prompts x 2 generations, the scripted
    model answering '42' to both, right for one): its logs, and the conversations the model saw
    before its final answers."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = qwen_tokenizer()
    question = [{"role": "user", "content": "What is 6*7?"}]
    dataset = Dataset.from_dict({"prompt": [question, question], "reference": ["42", "41"]})
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=4,  # 2 prompts x 2 generations
        max_completion_length=400,
        max_steps=1,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=False,
        use_cpu=True,
        gradient_checkpointing=False,
        max_tool_calling_iterations=4,
    )
    trainer = GRPOTrainer(
        model=scripted_model(tokenizer),
        reward_funcs=[RefereeEpisodeReward()],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=RefereeEnvironment.factory(url, api_key=api_key, verifier="exact"),
    )
    FINAL_TURN.clear()
    trainer.train()
    (logs,) = [entry for entry in trainer.state.log_history if "rewards/referee_episode/mean" in entry]
    return logs, list(FINAL_TURN)


def check_grpo_step(logs: dict[str, Any], final_turns: list[str]) -> None:
    assert logs["tools/call_frequency"] == 2.0 and logs["tools/failure_frequency"] == 0.0
    assert logs["rewards/referee_episode/mean"] == 0.5  # '42' is right for one prompt, wrong for the other
    # The second call printed the first call's `x`: state kept within the episode, shown to the model.
    assert len(final_turns) == 4
    assert all("<tool_response>\nstdout:\n42" in t for t in final_turns), final_turns[0][-300:]


@pytest.mark.slow
def test_grpo_trainer_runs_episodes_with_the_python_tool(fake: FakeRollouts, tmp_path: Path) -> None:
    """TRL's tool loop end to end: its chat template and response parsing (Qwen3's, on a
    character tokenizer), its environment pool and tool dispatch, its reward call."""
    runs_before = fake.runs
    check_grpo_step(*grpo_step(fake.url, tmp_path, "trl-trainer"))
    assert fake.runs == runs_before + 8  # 4 rollouts x 2 calls, each in its own episode's session
