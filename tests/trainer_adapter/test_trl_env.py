"""TRL 1.16's `environment_factory` with `RefereeEnvironment`: TRL's own introspection finds
exactly one tool, `python`, whose schema transformers builds from its docstring; `reset(**row)`
starts an episode from the row, tool calls keep their state within it, the reward function
verifies each rollout's final answer, and the next `reset` ends the previous episode."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

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
    assert right.python("x = 6 * 7") == ""
    assert right.python("print(x)") == "42\n"
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
