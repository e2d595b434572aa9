"""verl 0.9.1's tool machinery builds `RefereeCodeInterpreterTool` from a tool YAML and its
`ToolAgentLoop` calls it as in a rollout (create, execute with the trajectory's `AgentData`,
release, around every call): state is kept per trajectory, never across trajectories, and a
trajectory's session is closed when verl drops its `AgentData`."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
pytest.importorskip("PIL", reason="needs the `train` extra: pip install -e '.[train]'")  # verl's tool loop
pytest.importorskip("trl", reason="needs the `train` extra: pip install -e '.[train]'")  # Qwen's template
pytest.importorskip(
    "verl",
    reason="needs verl: `make` installs it with the `trainers` extra "
    "(pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall
from verl.tools.tool_registry import initialize_tools_from_config

from referee.trainer_adapter.verl_tools import RefereeCodeInterpreterTool
from tests.support.fake_rollouts import FakeRollouts
from tests.support.tokenizers import qwen_tokenizer

TOOL_YAML = """
tools:
  - class_name: referee.trainer_adapter.verl_tools.RefereeCodeInterpreterTool
    config:
      type: native
      base_url: {url}
      api_key_env: REFEREE_TEST_TOOL_KEY
      limits: {{call_time_s: 5}}
      idle_ttl_s: 60
    tool_schema:
      type: function
      function:
        name: code_interpreter
        description: Run Python; state is kept between calls.
        parameters:
          type: object
          properties:
            code: {{type: string, description: The code to run.}}
          required: [code]
"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeRollouts]:
    with FakeRollouts() as running:
        yield running


def yaml_tool(url: str, directory: Path) -> RefereeCodeInterpreterTool:
    """The tool as verl builds it from its tool YAML (the key in $REFEREE_TEST_TOOL_KEY)."""
    path = directory / "tools.yaml"
    path.write_text(TOOL_YAML.format(url=url))
    (built,) = initialize_tools_from_config(str(path))
    assert isinstance(built, RefereeCodeInterpreterTool)
    return built


@pytest.fixture
def tool(fake: FakeRollouts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RefereeCodeInterpreterTool:
    monkeypatch.setenv("REFEREE_TEST_TOOL_KEY", "verl-key")
    return yaml_tool(fake.url, tmp_path)


def agent_loop(tool: RefereeCodeInterpreterTool) -> Any:
    """A `ToolAgentLoop` with only what its `_call_tool` reads (no LLM server, no tokenizer)."""
    loop = ToolAgentLoop.__new__(ToolAgentLoop)
    loop.tools = {tool.name: tool}
    loop.max_tool_response_length = 2000
    loop.tool_response_truncate_side = "right"
    return loop


def trajectory(tools_kwargs: dict[str, Any] | None = None) -> Any:
    return AgentData(
        messages=[],
        image_data=None,  # type: ignore[arg-type]
        video_data=None,  # type: ignore[arg-type]
        audio_data=None,
        mm_processor_kwargs=None,
        metrics={},
        request_id="det-0",  # as under full determinism: not unique, so not what keys a session
        tools_kwargs=tools_kwargs or {},
    )


async def call(loop: Any, data: Any, code: str) -> str:
    name = next(iter(loop.tools))
    response, reward, _ = await loop._call_tool(
        FunctionCall(name=name, arguments=json.dumps({"code": code})), data.tools_kwargs, data
    )
    assert reward == 0.0
    return str(response.text)


async def test_the_yaml_tool_keeps_state_per_trajectory_and_closes_it(
    tool: RefereeCodeInterpreterTool, fake: FakeRollouts
) -> None:
    assert tool.name == "code_interpreter" and tool.service.limits == {"call_time_s": 5}
    loop = agent_loop(tool)
    first = trajectory({"code_interpreter": {"create_kwargs": {"files": {"data.txt": "41"}}}})
    second = trajectory()
    open_before = len(fake.open_ids("Bearer verl-key"))
    assert await call(loop, first, "x = int(open('data.txt').read())") == ""
    assert await call(loop, first, "print('x is', x)\nx + 1") == "x is 41\n42"
    assert "NameError" in await call(loop, second, "x")
    assert len(fake.open_ids("Bearer verl-key")) == open_before + 2
    assert "ZeroDivisionError" in await call(loop, first, "1/0")
    assert await call(loop, first, "x") == "41"  # an exception keeps the state
    assert tool._instances == {}  # every per-call instance was released

    del first, second
    gc.collect()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(fake.open_ids("Bearer verl-key")) == open_before:
            break
    assert len(fake.open_ids("Bearer verl-key")) == open_before


async def test_an_instance_without_agent_data_has_its_own_session(
    tool: RefereeCodeInterpreterTool, fake: FakeRollouts
) -> None:
    instance, _ = await tool.create(create_kwargs={})
    response, _, metrics = await tool.execute(instance, {"code": "y = 2"})
    assert metrics["status"] == "ok"
    response, _, _ = await tool.execute(instance, {"code": "y * 21"})
    assert response.text == "42"
    (session_id,) = [i for i in fake.open_ids("Bearer verl-key") if fake.sessions[i].namespace.get("y") == 2]
    await tool.release(instance)
    assert session_id not in fake.open_ids()


async def test_a_lost_session_is_the_models_to_read_and_the_next_call_starts_afresh(
    tool: RefereeCodeInterpreterTool, fake: FakeRollouts
) -> None:
    loop, data = agent_loop(tool), trajectory()
    await call(loop, data, "z = 1")
    (holder,) = data._referee_sessions.values()
    fake.sessions.pop(holder.session.id)  # expired on the service's side
    assert "state is gone" in await call(loop, data, "z")
    assert "NameError" in await call(loop, data, "z")  # a fresh session
    bad, _, metrics = await tool.execute("x", {"source": "1"})
    assert metrics == {"status": "bad_arguments"} and "code" in str(bad.text)


def test_a_misspelt_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="base_ur"):
        RefereeCodeInterpreterTool({"type": "native", "base_ur": "http://referee:8000"})


# --- verl's whole ToolAgentLoop ----------------------------------------------------------------


def tool_call_text(code: str) -> str:
    return (
        "<tool_call>\n"
        + json.dumps({"name": "code_interpreter", "arguments": {"code": code}})
        + "\n</tool_call>"
    )


class ScriptedServer:
    """verl's LLM server manager over a scripted trajectory: the i-th generation is `turns[i]`
    followed by the EOS token."""

    def __init__(self, tokenizer: Any, turns: list[str]) -> None:
        self.tokenizer, self.turns, self.prompts = tokenizer, turns, []  # type: list[str]

    async def generate(self, request_id: str, prompt_ids: list[int], sampling_params: Any, **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(self.tokenizer.decode(prompt_ids))
        text = self.turns[len(self.prompts) - 1]
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return TokenOutput(token_ids=[*ids, self.tokenizer.eos_token_id])


async def run_trajectories(
    tool: RefereeCodeInterpreterTool, *scripts: list[str]
) -> list[tuple[ScriptedServer, Any]]:
    """`ToolAgentLoop.run` as verl's agent loop workers call it, one trajectory per script, all
    concurrently: Hermes tool calls parsed from the generations, dispatched to the tool, their
    output rendered into the next prompt by Qwen's chat template."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap

    tokenizer = qwen_tokenizer()
    multi_turn = {
        "max_user_turns": 4,
        "max_assistant_turns": 4,
        "max_parallel_calls": 1,
        "max_tool_response_length": 500,
        "tool_response_truncate_side": "right",
        "format": "hermes",
    }
    rollout = {
        "multi_turn": multi_turn,
        "prompt_length": 4096,
        "response_length": 1024,
        "full_determinism": False,
    }
    config = DictConfigWrap(OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}}))

    async def trajectory(turns: list[str]) -> tuple[ScriptedServer, Any]:
        server = ScriptedServer(tokenizer, turns)
        loop = ToolAgentLoop(
            trainer_config=config,
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            dataset_cls=None,
            data_config=DictConfigWrap(OmegaConf.create({})),
            tools=ToolListWrap([tool]),
        )
        prompt = [{"role": "user", "content": "What is 6*7?"}]
        return server, await loop.run(sampling_params={}, raw_prompt=prompt, tools_kwargs={})

    return list(await asyncio.gather(*(trajectory(script) for script in scripts)))


STATEFUL = [tool_call_text("x = 6 * 7"), tool_call_text("print(x)"), "42"]
FORGETFUL = [tool_call_text("print(x)"), "I do not know"]


async def test_verls_tool_agent_loop_runs_trajectories_on_the_tool(
    tool: RefereeCodeInterpreterTool, fake: FakeRollouts
) -> None:
    before, opened_before = set(fake.open_ids()), fake.opened
    (first, out_first), (second, out_second) = await run_trajectories(tool, STATEFUL, FORGETFUL)
    assert out_first.num_turns == 6 and out_second.num_turns == 4
    assert "<tool_response>\n42\n</tool_response>" in first.prompts[-1]  # state kept across calls
    assert "NameError" in second.prompts[-1]  # and not across trajectories
    assert fake.opened == opened_before + 2  # a session per trajectory
    del out_first, out_second
    gc.collect()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if set(fake.open_ids()) <= before:
            break
    assert set(fake.open_ids()) <= before  # both closed once verl dropped the trajectories
