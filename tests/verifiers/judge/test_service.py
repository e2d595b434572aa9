"""The judge verifiers in the service: the Runtime's judge endpoints reach them, a group's
identical responses cost one call end to end, and a judge that only parrots its prompt (the
scripted server's `ok` echoes the last message) never yields a verdict: the prompt offers both
verdict lines, so the echo holds two that disagree, and the verdict is an error, not a score.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from referee.runtime import Runtime
from referee.service.app import create_app
from tests.conftest import make_settings
from tests.judges.scripted_server import API_KEY, ChatServer


async def test_a_group_through_the_service(tmp_path: Path) -> None:
    with ChatServer() as server:
        endpoints = {"default": {"url": server.url("ok"), "model": "judge-model", "api_key": API_KEY}}
        runtime = Runtime(
            make_settings(workers=1, db_path=tmp_path / "referee.db", judge_endpoints=endpoints)
        )
        app = create_app(runtime)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://referee", timeout=60) as http:
                group = {
                    "verifier": "judge_equivalence",
                    "reference": "42",
                    "responses": ["\\boxed{42}", "So \\boxed{42}", "\\boxed{41}", ""],
                }
                reply = await http.post("/v1/groups", json={"groups": [group]})
                metrics = (await http.get("/metrics")).text
    assert reply.status_code == 200, reply.text
    verdicts = reply.json()["groups"][0]["verdicts"]
    for verdict in verdicts[:3]:
        assert verdict["status"] == "error" and verdict["score"] is None, verdict
        assert "unparseable" in verdict["reason"] and "disagree" in verdict["reason"]
    assert verdicts[3]["status"] == "ok" and verdicts[3]["score"] == 0.0  # empty: no call
    assert server.hits["ok"] == 2  # 42 (twice, the same boxed answer) and 41
    body = server.bodies("ok")[0]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["model"] == "judge-model" and body["temperature"] == 0 and body["max_tokens"] == 512
    assert "<<<RESPONSE-" in body["messages"][1]["content"]
    assert "referee_judge_cache_misses_total 2.0" in metrics
