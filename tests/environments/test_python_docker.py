"""The code-interpreter environment end to end, in real containers: a math task solved by
running code in the episode's session (state kept from call to call), then answered and
verified 1.0; a wrong answer 0.0; an episode out of turns is done; another key's episode is
404; deleting the episode closes its session (the container goes back to the pool)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.runtime import Runtime
from referee.sandbox.image import build_image
from referee.service.app import create_app
from tests.conftest import make_settings
from tests.sandbox.helpers import make_sandbox_settings, run_instance

pytestmark = pytest.mark.docker

KEY_A, KEY_B = "env-docker-a", "env-docker-b"
TASK = {"prompt": "What is the sum of the squares of 1..20?", "verifier": "math", "reference": "2870"}


@pytest.fixture(scope="module")
def sandbox_image() -> str:
    return build_image(make_sandbox_settings(), log=lambda _msg: None)


@pytest.fixture
async def http(sandbox_image: str, tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    config = make_settings(
        workers=1,
        db_path=tmp_path / "referee.db",
        api_keys=[KEY_A, KEY_B],
        sandbox=True,
        sandbox_instance=run_instance("pytest-environments"),
        sandbox_pool_size=1,
        sandbox_max_parallel=1,
    )
    runtime = Runtime(config)
    app = create_app(runtime)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://referee", timeout=120
        ) as client,
    ):
        yield client, runtime


def auth(key: str = KEY_A) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def step(
    client: httpx.AsyncClient, episode: str, action: dict[str, Any], key: str = KEY_A
) -> httpx.Response:
    return await client.post(
        f"/v1/environments/python/episodes/{episode}/step", json={"action": action}, headers=auth(key)
    )


def code(source: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "python", "arguments": {"code": source}}


async def test_a_math_task_solved_with_code_then_verified(http: tuple[httpx.AsyncClient, Runtime]) -> None:
    client, runtime = http
    started = await client.post("/v1/environments/python/episodes", json={"task": TASK}, headers=auth())
    assert started.status_code == 201, started.text
    episode = started.json()["episode_id"]
    first = await step(client, episode, code("squares = [i * i for i in range(1, 21)]\nprint(len(squares))"))
    assert first.status_code == 200, first.text
    assert first.json()["observation"] == "stdout:\n20\n" and first.json()["info"]["status"] == "ok"
    second = await step(client, episode, code("sum(squares)"))  # state kept: `squares` is still there
    assert second.json()["observation"] == "value: 2870"
    assert runtime.code_sessions.open_count == 1
    # Another key sees nothing of it.
    other = await step(client, episode, code("sum(squares)"), key=KEY_B)
    assert other.status_code == 404
    failing = await step(client, episode, code("1 / 0"))
    assert (
        failing.json()["info"]["status"] == "error" and "ZeroDivisionError" in failing.json()["observation"]
    )
    done = await step(client, episode, {"type": "message", "content": "The sum is \\boxed{2870}."})
    assert done.json()["done"] and done.json()["turn"] == 4
    verdict = await client.post(f"/v1/environments/python/episodes/{episode}/verify", json={}, headers=auth())
    body = verdict.json()
    assert body["score"] == 1.0 and body["details"]["tool_calls"] == 3 and body["details"]["turns"] == 4
    wrong = await client.post(
        f"/v1/environments/python/episodes/{episode}/verify",
        json={"response": "\\boxed{2871}"},
        headers=auth(),
    )
    assert wrong.json()["score"] == 0.0
    assert (
        await client.delete(f"/v1/environments/python/episodes/{episode}", headers=auth())
    ).status_code == 204
    assert runtime.code_sessions.open_count == 0  # the episode's session closed with it
    metrics = (await client.get("/metrics")).text
    assert "referee_episode_tool_errors_total 1.0" in metrics


async def test_an_episode_past_its_turns_is_done(http: tuple[httpx.AsyncClient, Runtime]) -> None:
    client, runtime = http
    runtime.environments.kind("python").max_turns = 2
    started = await client.post("/v1/environments/python/episodes", json={"task": TASK}, headers=auth())
    episode = started.json()["episode_id"]
    assert started.json()["max_turns"] == 2
    assert not (await step(client, episode, code("x = 1"))).json()["done"]
    last = await step(client, episode, code("x"))
    assert (
        last.json()["done"]
        and last.json()["info"]["out_of_turns"]
        and last.json()["observation"] == "value: 1"
    )
    after = await step(client, episode, {"type": "message", "content": "\\boxed{2870}"})
    assert after.status_code == 409
    verdict = await client.post(f"/v1/environments/python/episodes/{episode}/verify", json={}, headers=auth())
    assert verdict.json()["score"] == 0.0  # no final answer was given
    await runtime.environments.close()
    assert runtime.code_sessions.open_count == 0
