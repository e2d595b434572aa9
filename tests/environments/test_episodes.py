"""The episode table: owners, turns, idle expiry (a fake clock), quotas, counters, cleanup."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import pytest

from referee.environments import Action, EpisodeDone, EpisodeNotFound, Episodes, Reset, Step
from referee.errors import DomainError, ErrorKind
from referee.models import Verdict, VerdictStatus
from referee.settings import EnvironmentSettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Echo:
    """An episode whose tool calls echo, whose message ends it; it records its closing."""

    def __init__(self, kind: EchoKind) -> None:
        self.kind = kind
        self.final: str | None = None

    async def reset(self, task: Mapping[str, Any] | None, seed: int | None) -> Reset:
        if task == {"bad": True}:
            raise DomainError(ErrorKind.invalid, "validation_error", "bad task")
        return Reset(observation=f"seed {seed}", tools=[])

    async def step(self, action: Action, turns_left: int) -> Step:
        if action.type == "message":
            self.final = action.content
            return Step("", done=True)
        failed = action.name != "echo"
        return Step(f"{action.arguments}", done=False, tool_call=True, tool_error=failed)

    async def verify(self, response: str | None) -> Verdict:
        answer = response if response is not None else self.final
        return Verdict(score=float(answer == "right"), status=VerdictStatus.ok, verifier="echo@1")

    async def close(self) -> None:
        self.kind.closed += 1


class EchoKind:
    name = "echo"
    description = "echo"

    def __init__(self, max_turns: int = 3) -> None:
        self.tools: list[dict[str, Any]] = []
        self.max_turns = max_turns
        self.closed = 0
        self.made = 0

    def make(self, owner: Hashable) -> Echo:
        self.made += 1
        return Echo(self)


TOOL = Action("tool_call", name="echo", arguments={"x": 1})


async def test_turns_run_out_then_the_episode_is_done() -> None:
    episodes, kind = Episodes(), EchoKind(max_turns=2)
    episode, first = await episodes.start(kind, "a", None, 7)
    assert first.observation == "seed 7"
    _, step = await episodes.step("a", "echo", episode.id, TOOL)
    assert (step.done, episode.turn) == (False, 1)
    _, step = await episodes.step("a", "echo", episode.id, Action("tool_call", name="nope"))
    assert step.done and step.info["out_of_turns"] and episode.turn == 2
    with pytest.raises(EpisodeDone):
        await episodes.step("a", "echo", episode.id, TOOL)
    c = episodes.counters
    assert (c.started, c.finished, c.turns, c.tool_calls, c.tool_errors) == (1, 1, 2, 2, 1)
    verdict = await episodes.verify("a", "echo", episode.id, "right")
    assert verdict.score == 1.0
    assert verdict.details == {
        "episode": episode.id,
        "environment": "echo",
        "turns": 2,
        "tool_calls": 2,
        "done": True,
    }


async def test_a_message_ends_the_episode_and_verify_judges_it() -> None:
    episodes = Episodes()
    episode, _ = await episodes.start(EchoKind(max_turns=5), "a", None, None)
    _, step = await episodes.step("a", "echo", episode.id, Action("message", content="wrong"))
    assert step.done and "out_of_turns" not in step.info
    assert (await episodes.verify("a", "echo", episode.id, None)).score == 0.0
    assert (await episodes.verify("a", "echo", episode.id, "right")).score == 1.0


async def test_another_keys_episode_is_not_found_like_an_unknown_one() -> None:
    episodes = Episodes()
    episode, _ = await episodes.start(EchoKind(), "a", None, None)
    for owner, name, episode_id in (
        ("b", "echo", episode.id),
        ("a", "other", episode.id),
        ("a", "echo", "nope"),
    ):
        with pytest.raises(EpisodeNotFound):
            await episodes.step(owner, name, episode_id, TOOL)
        with pytest.raises(EpisodeNotFound):
            await episodes.verify(owner, name, episode_id, None)
        with pytest.raises(EpisodeNotFound):
            await episodes.delete(owner, name, episode_id)
    await episodes.step("a", "echo", episode.id, TOOL)  # still the owner's


async def test_idle_episodes_expire_and_are_closed() -> None:
    clock = Clock()
    episodes, kind = Episodes(EnvironmentSettings(idle_ttl_s=60), clock=clock), EchoKind()
    old, _ = await episodes.start(kind, "a", None, None)
    clock.now += 50
    kept, _ = await episodes.start(kind, "a", None, None)
    await episodes.step("a", "echo", old.id, TOOL)  # a step keeps it alive
    clock.now += 59
    assert await episodes.reap() == 0
    await episodes.step("a", "echo", kept.id, TOOL)
    clock.now += 2  # `old` idle 61 s, `kept` 2 s
    with pytest.raises(EpisodeNotFound):  # past its TTL: gone even before the reaper runs
        await episodes.step("a", "echo", old.id, TOOL)
    assert await episodes.reap() == 1
    assert (kind.closed, len(episodes), episodes.counters.expired) == (1, 1, 1)
    await episodes.step("a", "echo", kept.id, TOOL)


async def test_delete_and_close_release_every_episode() -> None:
    episodes, kind = Episodes(), EchoKind()
    first, _ = await episodes.start(kind, "a", None, None)
    await episodes.start(kind, "b", None, None)
    await episodes.delete("a", "echo", first.id)
    assert (kind.closed, episodes.counters.deleted) == (1, 1)
    with pytest.raises(EpisodeNotFound):
        await episodes.verify("a", "echo", first.id, None)
    await episodes.close()
    assert (kind.closed, len(episodes)) == (2, 0)


async def test_a_refused_task_keeps_nothing_open() -> None:
    episodes, kind = Episodes(), EchoKind()
    with pytest.raises(DomainError):
        await episodes.start(kind, "a", {"bad": True}, None)
    assert (kind.made, kind.closed, len(episodes), episodes.counters.started) == (1, 1, 0, 0)


async def test_quotas_per_key_and_in_all() -> None:
    episodes, kind = Episodes(EnvironmentSettings(max_episodes=3, max_per_key=2)), EchoKind()
    await episodes.start(kind, "a", None, None)
    await episodes.start(kind, "a", None, None)
    with pytest.raises(DomainError) as per_key:
        await episodes.start(kind, "a", None, None)
    assert per_key.value.kind is ErrorKind.throttled
    await episodes.start(kind, "b", None, None)
    with pytest.raises(DomainError) as full:
        await episodes.start(kind, "c", None, None)
    assert full.value.kind is ErrorKind.overloaded


async def test_without_keys_only_the_global_cap_holds() -> None:
    episodes, kind = Episodes(EnvironmentSettings(max_episodes=3, max_per_key=1)), EchoKind()
    for _ in range(3):  # open mode: the owner is None, no per-key quota
        await episodes.start(kind, None, None, None)
    with pytest.raises(DomainError) as full:
        await episodes.start(kind, None, None, None)
    assert full.value.kind is ErrorKind.overloaded
