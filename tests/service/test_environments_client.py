"""The Python client's episode calls against the real `/v1/environments` routes: a game played
through `Client` (list, start from a seed, step, verify, end) parses what the service answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from referee.client import Client, message, tool_call
from referee.service.background import BackgroundServer
from tests.conftest import make_settings

SUDOKU = {"size": 4, "givens": [[0, 4, 1, 2], [0, 2, 0, 0], [0, 1, 0, 0], [2, 0, 0, 1]]}
SOLVED = "<answer>3 4 1 2\n1 2 3 4\n4 1 2 3\n2 3 4 1</answer>"


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with BackgroundServer(make_settings(workers=1)) as server, Client(server.url, timeout=60) as c:
        yield c


def test_a_game_through_the_client(client: Client) -> None:
    names = [e.name for e in client.list_environments()]
    assert "python" in names and "logic.sudoku_4x4" in names
    episode = client.start_episode("logic.sudoku_4x4", {"puzzle": SUDOKU})
    assert episode.max_turns == 8 and not episode.done and "givens" in episode.observation
    step = client.step("logic.sudoku_4x4", episode.episode_id, tool_call("python", {"code": "1"}))
    assert not step.done and step.turn == 1 and "no tools" in step.observation
    step = client.step("logic.sudoku_4x4", episode.episode_id, message(SOLVED))
    assert step.done and step.info["solved"]
    verdict = client.verify("logic.sudoku_4x4", episode.episode_id)
    assert verdict.score == 1.0 and verdict.details["turns"] == 2
    assert client.end_episode("logic.sudoku_4x4", episode.episode_id)
    assert not client.end_episode("logic.sudoku_4x4", episode.episode_id)
