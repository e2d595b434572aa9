"""OpenRLHF 0.11.2 loads `referee/trainer_adapter/openrlhf_agent.py` as its agent file
(`--train.agent_func_path`) and its `MultiTurnAgentExecutor` drives one environment episode per
sample: tool calls run in the episode's session, the final answer is verified, the verdict is
the reward, and the episode is ended (also when the executor abandons it). The vLLM engine is
scripted as in tests/service/test_openrlhf_real.py."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
pytest.importorskip(
    "openrlhf",
    reason="needs openrlhf: `make` installs it with the `trainers` extra (pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from openrlhf.utils.agent import AgentExecutorBase

import referee.trainer_adapter.openrlhf_agent as agent_file
from tests.service.test_openrlhf_real import EpisodeEngine, SamplingParams
from tests.support.fake_rollouts import FakeRollouts
from tests.support.tokenizers import EOS, PAD, PRINTABLE, char_tokenizer, printable_tokenizer

PROMPT = "What is 6*7? Use the python tool."


def call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def load_executor() -> Any:
    """As openrlhf.trainer.ray.vllm_engine._load_agent_executor does (that module needs vllm)."""
    spec = importlib.util.spec_from_file_location("agent_module", agent_file.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    executor = module.AgentExecutor()
    assert isinstance(executor, AgentExecutorBase)
    return executor


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeRollouts]:
    with FakeRollouts() as running:
        monkeypatch.setenv("REFEREE_URL", running.url)
        monkeypatch.setenv("REFEREE_API_KEY", "openrlhf-key")
        monkeypatch.setenv("REFEREE_VERIFIER", "exact")
        yield running


async def run_two_samples() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two samples through OpenRLHF's executor, concurrently: one sets `x`, prints it, answers
    '42' (right); the other answers '36' (wrong) after one call. Configured by REFEREE_*."""
    executor, tokenizer = load_executor(), printable_tokenizer()
    right = EpisodeEngine(tokenizer, [call("x = 6 * 7"), call("print(x)"), "42"])
    wrong = EpisodeEngine(tokenizer, [call("x = 6 * 6"), "36"])
    label = json.dumps({"reference": "42"})
    first, second = await asyncio.gather(
        executor.execute(PROMPT, label, SamplingParams(), 1024, tokenizer, right),
        executor.execute(PROMPT, "42", SamplingParams(), 1024, tokenizer, wrong),
    )
    assert (right.calls, wrong.calls) == (3, 2)
    assert len(first["action_ranges"]) == 3
    return first, second


def tool_outputs(result: dict[str, Any]) -> list[str]:
    """What the model was shown in ChatML's tool turns (the character tokenizer drops newlines)."""
    seen = printable_tokenizer().decode(result["observation_tokens"]).replace("<|endoftext|>", "")
    return re.findall(r"<tool_response>(.*?)</tool_response>", seen)


async def test_an_episode_per_sample_rewarded_by_its_verdict(fake: FakeRollouts) -> None:
    first, second = await run_two_samples()
    assert (first["reward"], first["scores"]) == (1.0, 1.0)
    assert second["reward"] == 0.0
    assert first["extra_logs"] == {"referee_tool_calls": 2.0, "referee_verdict_error": 0.0}
    assert tool_outputs(first) == ["(no output)", "stdout:42"]  # the second call printed the first call's `x`
    assert fake.episodes == {} and fake.sessions == {} and fake.closed == 2


async def test_an_abandoned_episode_is_ended(fake: FakeRollouts) -> None:
    executor, tokenizer = load_executor(), printable_tokenizer()
    engine = EpisodeEngine(tokenizer, [call("1 + 1")] * 4)
    # A budget that ends the rollout after the first tool call: `step` is not called again.
    budget = len(PROMPT) + len(call("1 + 1")) + 20
    result = await executor.execute(PROMPT, "2", SamplingParams(), budget, tokenizer, engine)
    assert engine.calls == 1 and result["reward"] == 0.0
    gc.collect()
    for _ in range(100):
        if not fake.episodes:
            break
        await asyncio.sleep(0.01)
    assert fake.episodes == {} and fake.sessions == {}


def test_labels_and_tool_calls_are_read_as_documented() -> None:
    assert agent_file.task_of('{"reference": 3, "options": {"a": 1}}', "p", "math") == {
        "prompt": "p",
        "verifier": "math",
        "reference": 3,
        "options": {"a": 1},
    }
    assert agent_file.task_of("3", "p", "math") == {"prompt": "p", "verifier": "math", "reference": "3"}
    assert agent_file.task_of("plain", "p", "exact")["reference"] == "plain"
    assert agent_file.parse_tool_call("no call") is None
    assert agent_file.parse_tool_call(call("a = 1")) == ("python", {"code": "a = 1"})
    stringly = '<tool_call>{"name": "python", "arguments": "{\\"code\\": \\"2\\"}"}</tool_call>'
    assert agent_file.parse_tool_call(stringly) == ("python", {"code": "2"})
    assert agent_file.parse_tool_call("<tool_call>{oops}</tool_call>") == (
        "invalid_tool_call",
        {"raw": "{oops}"},
    )


def block(code: str) -> str:
    return f"Let me compute.\n```python\n{code}\n```"


def test_the_code_format_reads_a_block_the_generation_ends_with() -> None:
    parse = agent_file.parse_code_block
    assert parse(block("x = 6 * 7\nprint(x)")) == ("python", {"code": "x = 6 * 7\nprint(x)"})
    assert parse("<code>\n```python\nprint(1)\n```\n</code>\n") == ("python", {"code": "print(1)"})
    # The last block counts; one followed by more text, or never closed, is no call.
    assert parse(block("a = 1") + "\nthen\n" + block("b = 2")) == ("python", {"code": "b = 2"})
    assert parse(block("a = 1") + "\nSo the answer is \\boxed{1}.") is None
    assert parse("```python\nprint(1)\n") is None
    assert parse("The answer is 42.") is None
    assert parse("```bash\nls\n```") is None
    assert agent_file.parse_action(block("1"), "hermes") is None
    assert agent_file.parse_action(call("1"), "code") is None


async def test_the_code_format_through_openrlhfs_executor(
    fake: FakeRollouts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SimpleTIR-style rollouts: code blocks run in the episode's session, their output comes
    back as an output block, and the answer after them is verified."""
    monkeypatch.setenv("REFEREE_TOOL_FORMAT", "code")
    executor, tokenizer = load_executor(), char_tokenizer(PRINTABLE + "\n", PAD, EOS)  # code has lines
    engine = EpisodeEngine(tokenizer, [block("x = 6 * 7"), block("print(x)"), "So it is 42"])
    result = await executor.execute(PROMPT, "So it is 42", SamplingParams(), 1024, tokenizer, engine)
    assert engine.calls == 3 and result["reward"] == 1.0
    assert result["extra_logs"]["referee_tool_calls"] == 2.0
    seen = tokenizer.decode(result["observation_tokens"]).replace(PAD, "")
    outputs = re.findall(r"```output\n(.*?)```", seen, re.DOTALL)
    assert [o.replace("\n", "") for o in outputs] == ["(no output)", "stdout:42"]  # x was kept
    assert fake.episodes == {} and fake.sessions == {}


def test_an_unknown_tool_format_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_TOOL_FORMAT", "xml")
    with pytest.raises(ValueError, match="REFEREE_TOOL_FORMAT"):
        agent_file.AgentInstance()
