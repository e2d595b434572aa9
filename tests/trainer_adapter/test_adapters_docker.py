"""The client and the three trainer adapters against the real service: code sessions in the
Docker sandbox, the built-in `python` environment, verdicts from its verifiers (issue 30).

The same drivers as the adapters' own tests (verl's `ToolAgentLoop`, OpenRLHF's
`MultiTurnAgentExecutor`, a `GRPOTrainer` step), over `BackgroundServer` instead of the
loopback stand-in: what they assert of the stand-in holds of the service."""

from __future__ import annotations

import asyncio
import gc
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.client import Client, message, tool_call
from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.sandbox.helpers import run_instance

pytestmark = pytest.mark.docker

KEY = "adapters-key"


@pytest.fixture(scope="module")
def service() -> Iterator[BackgroundServer]:
    settings = make_settings(
        sandbox=True, sandbox_instance=run_instance("pytest-adapters"), sandbox_pool_size=2, api_keys=[KEY]
    )
    with BackgroundServer(settings, startup_timeout_s=600) as running:
        yield running


@pytest.fixture
def client(service: BackgroundServer) -> Iterator[Client]:
    with Client(service.url, api_key=KEY, timeout=120) as opened:
        yield opened


async def open_sessions(client: Client, timeout_s: float = 10.0) -> list[str]:
    """The key's open sessions, once there are none left (or after `timeout_s`). Awaits between
    looks: the adapters close sessions from tasks of the running loop."""
    deadline = time.monotonic() + timeout_s
    while True:
        gc.collect()
        left = [s.id for s in client.list_sessions()]
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)


def test_a_session_and_an_episode_through_the_client(client: Client) -> None:
    with client.open_session(files={"n.txt": "40"}) as py:
        py.run("n = int(open('n.txt').read())")
        for _ in range(20):
            py.run("n += 1")
        assert py.run("n").value == "60" and py.state().calls == 22
    assert client.list_sessions() == []
    episode = client.start_episode("python", {"prompt": "6*7?", "verifier": "exact", "reference": "42"})
    assert (
        "42"
        in client.step(
            "python", episode.episode_id, tool_call("python", {"code": "print(6 * 7)"})
        ).observation
    )
    assert client.step("python", episode.episode_id, message("42")).done
    verdict = client.verify("python", episode.episode_id)
    assert verdict.score == 1.0 and verdict.details["tool_calls"] == 1
    assert client.end_episode("python", episode.episode_id)
    assert client.list_sessions() == []


@pytest.mark.slow  # verl's import
async def test_verls_tool_agent_loop_on_the_service(
    service: BackgroundServer, client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verl_tools = pytest.importorskip(
        "tests.trainer_adapter.test_verl_tools",
        reason="needs verl and torch: pip install -e '.[train,trainers]'",
    )
    monkeypatch.setenv("REFEREE_TEST_TOOL_KEY", KEY)
    tool = verl_tools.yaml_tool(service.url, tmp_path)
    (first, out_first), (second, out_second) = await verl_tools.run_trajectories(
        tool, verl_tools.STATEFUL, verl_tools.FORGETFUL
    )
    assert re.search(r"<tool_response>\n42\n</tool_response>", first.prompts[-1]), first.prompts[-1][-400:]
    assert "NameError" in second.prompts[-1]
    assert out_first.num_turns == 6
    del out_first, out_second
    assert await open_sessions(client) == []  # closed once verl dropped the trajectories


async def test_openrlhfs_executor_on_the_service(
    service: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = pytest.importorskip(
        "tests.trainer_adapter.test_openrlhf_agent",
        reason="needs openrlhf and torch: pip install -e '.[train,trainers]'",
    )
    monkeypatch.setenv("REFEREE_URL", service.url)
    monkeypatch.setenv("REFEREE_API_KEY", KEY)
    monkeypatch.setenv("REFEREE_VERIFIER", "exact")
    first, second = await agent.run_two_samples()
    assert (first["reward"], second["reward"]) == (1.0, 0.0)
    assert agent.tool_outputs(first)[-1] == "stdout:42"  # state kept between calls


@pytest.mark.slow
def test_a_grpo_trainer_step_on_the_service(service: BackgroundServer, tmp_path: Path) -> None:
    trl_env = pytest.importorskip(
        "tests.trainer_adapter.test_trl_env", reason="needs the `train` extra: pip install -e '.[train]'"
    )
    trl_env.check_grpo_step(*trl_env.grpo_step(service.url, tmp_path, KEY))
