"""`/v1/environments` over HTTP: the catalog, episodes (start, step, verify, delete), key
isolation, strict bodies, registered environments and their gate, and the /metrics counters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings

KEY_A, KEY_B, ADMIN = "env-key-a", "env-key-b", "env-admin"
SUDOKU = {"size": 4, "givens": [[0, 4, 1, 2], [0, 2, 0, 0], [0, 1, 0, 0], [2, 0, 0, 1]]}
SOLVED = "<answer>3 4 1 2\n1 2 3 4\n4 1 2 3\n2 3 4 1</answer>"
BASE = "/v1/environments/logic.sudoku_4x4/episodes"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    db = Path(tmp_path_factory.mktemp("envs")) / "r.db"
    settings = make_settings(db_path=db, workers=1, api_keys=[KEY_A, KEY_B], admin_keys=[ADMIN])
    with BackgroundServer(settings) as running:
        yield running


def call(service: BackgroundServer, method: str, path: str, key: str = KEY_A, **kw: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.request(method, f"{service.url}{path}", headers=headers, timeout=60, **kw)


def test_the_catalog_lists_python_and_the_games(service: BackgroundServer) -> None:
    listed = call(service, "GET", "/v1/environments").json()
    names = [e["name"] for e in listed]
    assert names[0] == "python" and "logic.sudoku_4x4" in names and "logic.zebra" in names
    python = listed[0]
    assert python["tools"][0]["function"]["name"] == "python" and python["max_turns"] == 16
    assert set(python) == {"name", "description", "tools", "max_turns"}
    assert call(service, "GET", "/v1/environments", key="nope").status_code == 401


def test_an_episode_is_played_verified_and_deleted(service: BackgroundServer) -> None:
    started = call(service, "POST", BASE, json={"task": {"puzzle": SUDOKU}})
    assert started.status_code == 201, started.text
    body = started.json()
    assert (body["done"], body["turn"], body["max_turns"], body["tools"]) == (False, 0, 8, [])
    step = f"{BASE}/{body['episode_id']}/step"
    wrong = call(service, "POST", step, json={"action": {"type": "message", "content": "<answer>1</answer>"}})
    assert wrong.status_code == 200 and wrong.json()["turn"] == 1 and not wrong.json()["done"]
    assert "rows" in wrong.json()["observation"]
    right = call(service, "POST", step, json={"action": {"type": "message", "content": SOLVED}})
    assert right.json()["done"] and right.json()["info"]["solved"]
    after = call(service, "POST", step, json={"action": {"type": "message", "content": SOLVED}})
    assert after.status_code == 409 and after.json()["error"] == "episode_done"
    verdict = call(service, "POST", f"{BASE}/{body['episode_id']}/verify", json={})
    assert verdict.status_code == 200
    assert verdict.json()["score"] == 1.0 and verdict.json()["details"]["turns"] == 2
    again = call(
        service, "POST", f"{BASE}/{body['episode_id']}/verify", json={"response": "<answer>1</answer>"}
    )
    assert again.json()["score"] == 0.0
    assert call(service, "DELETE", f"{BASE}/{body['episode_id']}").status_code == 204
    assert call(service, "DELETE", f"{BASE}/{body['episode_id']}").status_code == 404


def test_another_keys_episode_is_404(service: BackgroundServer) -> None:
    episode = call(service, "POST", BASE, json={"seed": 3}).json()["episode_id"]
    action = {"action": {"type": "message", "content": "<answer>1</answer>"}}
    for method, suffix, body in (("POST", "/step", action), ("POST", "/verify", {}), ("DELETE", "", None)):
        answer = call(service, method, f"{BASE}/{episode}{suffix}", key=KEY_B, json=body)
        assert answer.status_code == 404 and answer.json()["error"] == "unknown_episode", answer.text
    assert call(service, "POST", f"{BASE}/{episode}/step", json=action).status_code == 200


def test_bodies_are_strict_and_tasks_checked(service: BackgroundServer) -> None:
    episode = call(service, "POST", BASE, json={"seed": 1}).json()["episode_id"]
    for action in (
        {"type": "message"},
        {"type": "shout", "content": "x"},
        {"type": "message", "content": "x", "extra": 1},
        {"type": "tool_call", "name": "", "arguments": {}},
    ):
        answer = call(service, "POST", f"{BASE}/{episode}/step", json={"action": action})
        assert answer.status_code == 422, action
    assert call(service, "POST", BASE, json={"seed": -1}).status_code == 422
    # A seed is a JSON integer: not a boolean or a string, which lax parsing would read as one.
    for seed in (False, True, "3", 2.5):
        assert call(service, "POST", BASE, json={"seed": seed}).status_code == 422, seed
    assert call(service, "POST", BASE, json={"seed": 3.0}).status_code == 201  # JSON Schema's integer
    assert call(service, "POST", BASE, json={"task": {"puzzle": SUDOKU}, "other": 1}).status_code == 422
    zebra = call(service, "POST", "/v1/environments/logic.zebra/episodes", json={"seed": 1})
    assert zebra.status_code == 422 and "no puzzle generator" in zebra.json()["message"]
    unknown = call(service, "POST", "/v1/environments/nope/episodes", json={})
    assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_environment"
    # Without a sandbox the python environment still starts (its task is checked), and its
    # first tool call is refused for want of a session: 503, as /v1/sessions answers.
    task = {"prompt": "6*7?", "verifier": "math", "reference": "42"}
    python = call(service, "POST", "/v1/environments/python/episodes", json={"task": task})
    assert python.status_code == 201, python.text
    tool = {"action": {"type": "tool_call", "name": "python", "arguments": {"code": "6*7"}}}
    refused = call(
        service, "POST", f"/v1/environments/python/episodes/{python.json()['episode_id']}/step", json=tool
    )
    assert refused.status_code == 503 and refused.json()["error"] == "sandbox_unavailable"


REGISTRATION: dict[str, Any] = {
    "name": "sudoku.coach",
    "description": "4x4 sudoku with three tries",
    "kind": "puzzle",
    "verifier": "logic.sudoku_4x4",
    "max_turns": 3,
    "prompt": "Solve this sudoku: $puzzle",
    "examples": [
        {"task": {"puzzle": SUDOKU}, "response": SOLVED, "expected_score": 1.0},
        {"task": {"puzzle": SUDOKU}, "response": "<answer>1</answer>", "expected_score": 0.0},
    ],
}


def test_a_registered_environment_passes_its_gate_and_is_served(service: BackgroundServer) -> None:
    assert call(service, "POST", "/v1/environments", json=REGISTRATION).status_code == 403  # admin only
    registered = call(service, "POST", "/v1/environments", key=ADMIN, json=REGISTRATION)
    assert registered.status_code == 201, registered.text
    assert registered.json()["probes"] > 0  # the sudoku battery and the generic probes ran
    listed = {e["name"]: e for e in call(service, "GET", "/v1/environments").json()}
    assert listed["sudoku.coach"]["max_turns"] == 3
    started = call(service, "POST", "/v1/environments/sudoku.coach/episodes", json={"seed": 2}).json()
    assert started["observation"].startswith("Solve this sudoku: {") and started["max_turns"] == 3
    assert call(service, "DELETE", "/v1/environments/sudoku.coach", key=ADMIN).status_code == 204
    gone = call(service, "POST", "/v1/environments/sudoku.coach/episodes", json={"seed": 2})
    assert gone.status_code == 404


def test_the_gate_refuses_what_it_should(service: BackgroundServer) -> None:
    def register(**changes: Any) -> httpx.Response:
        return call(service, "POST", "/v1/environments", key=ADMIN, json={**REGISTRATION, **changes})

    builtin = register(name="python")
    assert builtin.status_code == 409
    unknown = register(verifier="nope")
    assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_verifier"
    not_a_game = register(verifier="math")
    assert not_a_game.status_code == 422 and not_a_game.json()["error"] == "invalid_spec"
    flipped = [{**e, "expected_score": 1.0 - e["expected_score"]} for e in REGISTRATION["examples"]]
    failing = register(examples=flipped)
    assert failing.status_code == 422 and failing.json()["error"] == "activation_failed"
    one_sided = register(examples=[REGISTRATION["examples"][0]] * 2)
    assert one_sided.status_code == 422 and one_sided.json()["error"] == "activation_failed"
    bad_task = register(examples=[{**REGISTRATION["examples"][0], "task": {"puzzle": {"size": 4}}}] * 2)
    assert bad_task.status_code == 422 and bad_task.json()["detail"][0]["loc"][:3] == ["body", "examples", 0]
    python = register(
        kind="python",
        verifier="math",
        name="math.tools",
        prompt="",
        examples=[
            {"task": {"prompt": "1+1?", "reference": "2"}, "response": "\\boxed{2}", "expected_score": 1.0},
            {"task": {"prompt": "1+1?", "reference": "2"}, "response": "\\boxed{3}", "expected_score": 0.0},
        ],
    )
    assert python.status_code == 201, python.text
    names = [e["name"] for e in call(service, "GET", "/v1/environments").json()]
    assert "math.tools" in names and "sudoku.coach" not in names


def test_metrics_count_episodes_turns_and_tool_errors(service: BackgroundServer) -> None:
    episode = call(service, "POST", BASE, json={"seed": 9}).json()["episode_id"]
    tool = {"action": {"type": "tool_call", "name": "python", "arguments": {}}}
    call(service, "POST", f"{BASE}/{episode}/step", json=tool)
    call(service, "POST", f"{BASE}/{episode}/step", json={"action": {"type": "message", "content": SOLVED}})
    text = httpx.get(f"{service.url}/metrics", timeout=30).text
    lines = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith("referee_episode")
    }
    assert lines['referee_episodes_started_total{environment="logic.sudoku_4x4"}'] >= 1
    assert lines["referee_episodes_finished_total"] >= 1
    assert lines["referee_episode_tool_errors_total"] >= 1
    assert lines["referee_episode_turns_total"] >= lines["referee_episodes_finished_total"]


def test_the_dashboard_shows_episodes_and_their_cost(service: BackgroundServer) -> None:
    episode = call(service, "POST", BASE, json={"seed": 11}).json()["episode_id"]
    tool = {"action": {"type": "tool_call", "name": "python", "arguments": {}}}
    call(service, "POST", f"{BASE}/{episode}/step", json=tool)  # a tool error
    open_one = call(service, "POST", BASE, json={"seed": 12}).json()["episode_id"]
    with httpx.Client(base_url=service.url, timeout=30) as browser:
        login = browser.post("/ui/login", data={"key": ADMIN}, headers={"Origin": service.url})
        assert login.status_code in (200, 303), login.text
        page = browser.get("/ui").text
    assert 'id="health-episodes">' in page
    card = page.split('id="health-episodes">', 1)[1].split("</div>", 1)[0]
    assert "environment episodes open" in card and "tool calls" in card and "tool errors" in card
    open_now = int(card.split("<", 1)[0])
    assert open_now >= 1
    call(service, "DELETE", f"{BASE}/{open_one}")
