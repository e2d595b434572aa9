"""The environments over a real runtime (worker pool, verifiers; no sandbox): the puzzle games'
feedback and ends, and the code-interpreter environment with a stand-in for code sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.environments import Action, Environments, EpisodeDone, UnknownEnvironment
from referee.errors import DomainError, ErrorKind, InputError
from referee.models import EnvironmentExample, RegisterEnvironmentRequest
from referee.registered.store import SQLiteStore
from referee.runtime import Runtime
from tests.conftest import make_settings

SUDOKU = {"size": 4, "givens": [[0, 4, 1, 2], [0, 2, 0, 0], [0, 1, 0, 0], [2, 0, 0, 1]]}
SOLVED = "3 4 1 2\n1 2 3 4\n4 1 2 3\n2 3 4 1"


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    async with Runtime(make_settings(workers=1, db_path=tmp_path / "r.db")) as running:
        yield running


def message(text: str) -> Action:
    return Action("message", content=text)


async def test_a_sudoku_game_says_what_is_wrong_then_ends_when_solved(runtime: Runtime) -> None:
    envs = runtime.environments
    episode, first = await envs.start_episode("logic.sudoku_4x4", "a", {"puzzle": SUDOKU}, None)
    assert '"givens"' in first.observation and "<answer>" in first.observation and first.tools == []
    wrong = SOLVED.replace("3 4 1 2", "4 3 1 2")  # keeps no given: cell (1,2) is a 4
    _, step = await envs.step("logic.sudoku_4x4", "a", episode.id, message(f"<answer>{wrong}</answer>"))
    assert not step.done and "cell (1,2) changes the given 4" in step.observation
    assert "7 answers left" in step.observation
    assert SOLVED not in step.observation  # feedback describes the answer, never the solution
    _, step = await envs.step("logic.sudoku_4x4", "a", episode.id, Action("tool_call", name="python"))
    assert not step.done and "no tools" in step.observation and step.tool_error
    _, step = await envs.step("logic.sudoku_4x4", "a", episode.id, message(f"<answer>{SOLVED}</answer>"))
    assert step.done and step.info["solved"] and step.observation.startswith("Correct")
    verdict = await envs.verify("logic.sudoku_4x4", "a", episode.id, None)
    assert (verdict.score, verdict.details["turns"], verdict.details["tool_calls"]) == (1.0, 3, 1)
    with pytest.raises(EpisodeDone):
        await envs.step("logic.sudoku_4x4", "a", episode.id, message("<answer>x</answer>"))


async def test_a_game_out_of_turns_is_done_and_verified_by_its_last_answer(runtime: Runtime) -> None:
    envs = runtime.environments
    kind = envs.kind("logic.countdown")
    kind.max_turns = 2
    puzzle = {"numbers": [1, 2, 6, 8, 50], "target": 100}
    episode, _ = await envs.start_episode("logic.countdown", "a", {"puzzle": puzzle}, None)
    _, step = await envs.step("logic.countdown", "a", episode.id, message("<answer>1 + 1</answer>"))
    assert not step.done and "1 answer left" in step.observation
    _, step = await envs.step("logic.countdown", "a", episode.id, message("<answer>1 + 2</answer>"))
    assert step.done and step.info["out_of_turns"] and "No answers left" in step.observation
    verdict = await envs.verify("logic.countdown", "a", episode.id, None)
    assert verdict.score == 0.0 and "equals 3, not 100" in (verdict.reason or "")


async def test_tasks_and_seeds_are_checked_at_the_start(runtime: Runtime) -> None:
    envs = runtime.environments
    with pytest.raises(InputError, match="no puzzle generator"):
        await envs.start_episode("logic.zebra", "a", None, 1)
    with pytest.raises(InputError, match="a puzzle is required"):
        await envs.start_episode("logic.sudoku_4x4", "a", None, None)
    with pytest.raises(InputError) as bad:
        await envs.start_episode("logic.sudoku_4x4", "a", {"puzzle": {"size": 4, "givens": [[1]]}}, None)
    assert bad.value.errors[0]["loc"][:3] == ["body", "task", "reference"]
    with pytest.raises(DomainError) as unknown:
        await envs.start_episode("logic.nope", "a", None, 1)
    assert unknown.value.kind is ErrorKind.not_found
    # The puzzle shown never carries the record's solution fields.
    _, first = await envs.start_episode(
        "logic.sudoku_4x4", "a", {"puzzle": {**SUDOKU, "reference_solution": [[9]]}}, None
    )
    assert "reference_solution" not in first.observation


# ---- the code interpreter, over a stand-in for CodeSessions --------------------------------


@dataclass
class Outcome:
    status: str = "ok"
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    truncated: bool = False
    restarted: bool = False


@dataclass
class Opened:
    id: str


class FakeSessions:
    """`set NAME VALUE` / `get NAME` / `lose` (container lost) / `expire` (the session is gone)."""

    def __init__(self) -> None:
        self.state: dict[str, dict[str, str]] = {}
        self.owners: dict[str, Hashable] = {}
        self.opened = 0

    async def open(self, owner: Hashable) -> Opened:
        self.opened += 1
        sid = f"s{self.opened}"
        self.state[sid], self.owners[sid] = {}, owner
        return Opened(sid)

    async def run(self, owner: Hashable, session_id: str, code: str) -> tuple[Outcome, int]:
        if session_id not in self.state or self.owners[session_id] != owner:
            raise DomainError(ErrorKind.not_found, "unknown_session", "no open session")
        word, _, rest = code.partition(" ")
        if word == "set":
            name, _, value = rest.partition(" ")
            self.state[session_id][name] = value
            return Outcome(stdout=f"{name} set\n"), 1
        if word == "get":
            if rest not in self.state[session_id]:
                return Outcome(status="error", error=f"NameError: {rest}"), 1
            return Outcome(value=self.state[session_id][rest]), 1
        if word == "lose":
            del self.state[session_id]
            raise DomainError(ErrorKind.unavailable, "session_lost", "lost")
        if word == "expire":
            del self.state[session_id]
            return Outcome(), 1
        return Outcome(status="error", error="SyntaxError"), 1

    async def close(self, owner: Hashable, session_id: str) -> None:
        if self.state.pop(session_id, None) is None:
            raise DomainError(ErrorKind.not_found, "unknown_session", "no open session")


def python(code: str) -> Action:
    return Action("tool_call", name="python", arguments={"code": code})


TASK = {"prompt": "What is 6 times 7?", "verifier": "math", "reference": "42"}


async def test_the_python_environment_runs_tools_in_one_session_then_judges_the_answer(
    runtime: Runtime,
) -> None:
    sessions = FakeSessions()
    envs = Environments(runtime.scorer, sessions)
    episode, first = await envs.start_episode("python", "a", TASK, None)
    assert first.observation == TASK["prompt"] and first.tools[0]["function"]["name"] == "python"
    assert sessions.opened == 0  # opened by the first tool call only
    _, step = await envs.step("python", "a", episode.id, python("set x 42"))
    assert step.observation == "stdout:\nx set\n" and step.info["status"] == "ok"
    _, step = await envs.step("python", "a", episode.id, python("get x"))
    assert step.observation == "value: 42" and sessions.opened == 1  # state kept, same session
    _, step = await envs.step("python", "a", episode.id, python("get y"))
    assert "NameError" in step.observation and step.tool_error
    _, step = await envs.step("python", "a", episode.id, Action("tool_call", name="shell", arguments={}))
    assert "unknown tool" in step.observation
    _, step = await envs.step("python", "a", episode.id, message("The answer is \\boxed{42}."))
    assert step.done
    verdict = await envs.verify("python", "a", episode.id, None)
    assert verdict.score == 1.0 and verdict.details["tool_calls"] == 4 and verdict.details["turns"] == 5
    assert (await envs.verify("python", "a", episode.id, "\\boxed{41}")).score == 0.0
    assert envs.episodes.counters.tool_errors == 2
    await envs.delete("python", "a", episode.id)
    assert sessions.state == {}  # the episode's session closed with it


async def test_a_lost_or_expired_session_is_reopened(runtime: Runtime) -> None:
    sessions = FakeSessions()
    envs = Environments(runtime.scorer, sessions)
    episode, _ = await envs.start_episode("python", "a", TASK, None)
    await envs.step("python", "a", episode.id, python("set x 1"))
    _, step = await envs.step("python", "a", episode.id, python("lose"))
    assert step.tool_error and "lost" in step.observation
    _, step = await envs.step("python", "a", episode.id, python("get x"))
    assert "NameError" in step.observation and sessions.opened == 2
    await envs.step("python", "a", episode.id, python("expire"))
    _, step = await envs.step("python", "a", episode.id, python("set y 2"))
    assert step.observation.startswith("(a new interpreter was started") and sessions.opened == 3
    await envs.close()
    assert sessions.state == {}


async def test_the_python_task_is_checked_against_its_verifier(runtime: Runtime) -> None:
    envs = Environments(runtime.scorer, FakeSessions())
    with pytest.raises(InputError, match="prompt"):
        await envs.start_episode("python", "a", {"verifier": "math", "reference": "1"}, None)
    with pytest.raises(DomainError) as unknown:
        await envs.start_episode("python", "a", {**TASK, "verifier": "nope"}, None)
    assert unknown.value.kind is ErrorKind.not_found
    with pytest.raises(InputError) as options:
        await envs.start_episode("python", "a", {**TASK, "options": {"bogus": 1}}, None)
    assert options.value.errors[0]["loc"][:3] == ["body", "task", "options"]
    episode, _ = await envs.start_episode("python", "a", TASK, None)
    # Out of turns without an answer: done, and judged as an empty answer.
    envs.episodes.get("a", "python", episode.id).max_turns = 1
    _, step = await envs.step("python", "a", episode.id, python("set x 1"))
    assert step.done and step.info["out_of_turns"]
    assert (await envs.verify("python", "a", episode.id, None)).score == 0.0


async def test_registered_environments_are_read_back_from_the_registry_file(
    runtime: Runtime, tmp_path: Path
) -> None:
    db = tmp_path / "registry.db"
    body = RegisterEnvironmentRequest(
        name="sudoku.coach",
        description="three tries",
        kind="puzzle",
        verifier="logic.sudoku_4x4",
        max_turns=3,
        prompt="Solve: $puzzle",
        examples=[
            EnvironmentExample(
                task={"puzzle": SUDOKU}, response=f"<answer>{SOLVED}</answer>", expected_score=1
            ),
            EnvironmentExample(task={"puzzle": SUDOKU}, response="<answer>1</answer>", expected_score=0),
        ],
    )
    seen: list[tuple[str, list[object]]] = []

    async def probes(verifier: str, references: list[object]) -> int:
        seen.append((verifier, references))
        return 0

    # Two replicas' views of one registry file (each its own store, as two processes have).
    first = Environments(runtime.scorer, None, store=SQLiteStore(db))
    other = Environments(runtime.scorer, None, store=SQLiteStore(db))
    await first.open()
    await other.open()
    await first.register(body, "admin", probes)
    assert seen == [("logic.sudoku_4x4", [SUDOKU, SUDOKU])]  # the probes get the puzzles
    again = Environments(runtime.scorer, None, store=SQLiteStore(db))
    await again.open()
    kind = again.kind("sudoku.coach")
    assert kind.max_turns == 3
    _, reset = await again.start_episode("sudoku.coach", "a", {"puzzle": SUDOKU}, None)
    assert reset.observation.startswith('Solve: {"size": 4')
    await again.close()
    # The other replica serves it on its next listing, and stops once it is deleted.
    assert "sudoku.coach" in [info.name for info in await other.infos()]
    await first.unregister("sudoku.coach")
    assert "sudoku.coach" not in [info.name for info in await other.infos()]
    with pytest.raises(UnknownEnvironment):
        await other.start_episode("sudoku.coach", "a", {"puzzle": SUDOKU}, None)
    third = Environments(runtime.scorer, None, store=SQLiteStore(db))
    await third.open()
    assert "sudoku.coach" not in third.names()
    for env in (first, other, third):
        await env.close()
