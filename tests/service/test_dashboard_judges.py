"""The judge endpoints on the health page (GET /v1/stats/health `judges`) and the dashboard's
health panel: the verdict cache's hits, misses and hit rate, calls by outcome, tokens and each
endpoint's breaker; absent where no endpoint is configured.

The judge is the scripted chat server on a real socket (tests/judges/scripted_server.py) with
one more behaviour, `agree`: a reply that parses (`VERDICT: EQUIVALENT`), so outcomes are
cached; a second endpoint where nothing listens gives failed calls and an open breaker.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from referee.runtime import Runtime
from referee.service.app import create_app
from tests.conftest import make_settings
from tests.judges.scripted_server import ChatServer, completion, refused_port


@dataclass
class AgreeingServer(ChatServer):
    """`agree`: every reply is a verdict that parses."""

    def __post_init__(self) -> None:
        super().__post_init__()
        scripted = self.server.RequestHandlerClass

        class Handler(scripted):  # type: ignore[valid-type,misc]
            def behave(self, behaviour: str, count: int, body: dict[str, Any]) -> None:
                if behaviour != "agree":
                    return super().behave(behaviour, count, body)
                return self.answer(200, completion("Both say 42.\nVERDICT: EQUIVALENT"))

        self.server.RequestHandlerClass = Handler


@asynccontextmanager
async def service(
    tmp_path: Path, endpoints: dict[str, Any] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The whole app in process (lifespan included), with these judge endpoints."""
    settings = make_settings(workers=1, db_path=tmp_path / "referee.db", judge_endpoints=endpoints or {})
    app = create_app(Runtime(settings))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://referee", timeout=60
        ) as http,
    ):
        yield http


def judged(responses: list[str], endpoint: str = "default") -> dict[str, Any]:
    return {
        "verifier": "judge_equivalence",
        "reference": "42",
        "responses": responses,
        "options": {"endpoint": endpoint},
    }


def card(page: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}">([^<]*)<', page)
    assert found, element_id
    return found.group(1)


async def test_the_health_panel_shows_the_judge_cache_and_calls(tmp_path: Path) -> None:
    with AgreeingServer() as server:
        endpoints = {
            "default": {"url": server.url("agree"), "model": "judge-model"},
            "gone": {
                "url": f"http://127.0.0.1:{refused_port()}/v1",
                "model": "other-model",
                "retries": 0,
                "breaker_failures": 1,
            },
        }
        async with service(tmp_path, endpoints) as http:
            body = {"groups": [judged(["It is 42.", "42, surely", "Forty-two"]), judged(["6 * 7"])]}
            for _ in range(2):  # the second time, every outcome is a cache hit
                scored = await http.post("/v1/groups", json=body)
                assert scored.status_code == 200, scored.text
            failed = await http.post("/v1/groups", json={"groups": [judged(["41"], "gone")]})
            health = (await http.get("/v1/stats/health")).json()
            page = (await http.get("/ui")).text
            refreshed = (await http.get("/ui/fragments/overview")).text  # what htmx swaps in
    for group in scored.json()["groups"]:
        assert {v["status"] for v in group["verdicts"]} == {"ok"} and set(group["rewards"]) == {1.0}
        assert all(v["details"]["cached"] for v in group["verdicts"])
    assert failed.json()["groups"][0]["verdicts"][0]["status"] == "error"
    assert server.hits["agree"] == 4  # four distinct responses, asked once each

    judges = health["judges"]
    assert judges["cache_hits"] == 4 and judges["cache_misses"] == 4 + 1  # "41" on `gone`: a miss
    assert judges["cache_hit_rate"] == 4 / 9 and judges["cache_entries"] == 4
    assert judges["calls"] == {"ok": 4, "unreachable": 1} and judges["failed_calls"] == 1
    by_name = {e["name"]: e for e in judges["endpoints"]}
    assert list(by_name) == ["default", "gone"]
    assert by_name["default"]["model"] == "judge-model" and by_name["default"]["state"] == "closed"
    assert by_name["default"]["calls"] == {"ok": 4}
    assert by_name["default"]["prompt_tokens"] == 4 * 11 and by_name["default"]["completion_tokens"] == 4 * 3
    assert by_name["gone"]["state"] == "open" and by_name["gone"]["calls"] == {"unreachable": 1}
    assert "127.0.0.1" not in str(judges)  # endpoints by name, never by address

    assert card(page, "judge-hit-rate") == "44.4%"
    assert card(page, "judge-calls") == "5" and card(refreshed, "judge-hit-rate") == "44.4%"
    assert "4 hits, 5 misses, 4 held" in page and "(1 failed)" in page
    rows = re.findall(r'<tr data-endpoint="([^"]+)">(.*?)</tr>', page, re.S)
    assert [name for name, _ in rows] == ["default", "gone"]
    assert "ok 4" in rows[0][1] and ">open<" in rows[1][1] and "unreachable 1" in rows[1][1]


async def test_without_judge_endpoints_there_is_no_judge_panel(tmp_path: Path) -> None:
    async with service(tmp_path) as http:
        health = (await http.get("/v1/stats/health")).json()
        page = (await http.get("/ui")).text
    assert health["judges"] is None
    assert 'id="health-panel"' in page and "judges-panel" not in page and "judge-hit-rate" not in page
