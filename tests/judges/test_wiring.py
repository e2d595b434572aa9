"""The service's judge endpoints: built by the Runtime when configured, handed to verifiers in
`Resources`, reported by /readyz (without deciding readiness), counted in /metrics, closed on
stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from referee.judges import ChatReply, ChatRequest, JudgeClients, Message
from referee.runtime import Runtime
from referee.service.app import create_app
from referee.service.metrics import _JudgeCollector
from tests.conftest import make_settings
from tests.judges.scripted_server import API_KEY, ChatServer, clients, refused_port


def _settings(tmp_path: Path, endpoints: dict[str, Any] | None = None) -> Any:
    return make_settings(workers=1, db_path=tmp_path / "referee.db", judge_endpoints=endpoints or {})


def ask(endpoint: str, text: str) -> ChatRequest:
    return ChatRequest(endpoint, (Message("user", text),))


async def test_no_endpoint_configured_no_judges(tmp_path: Path) -> None:
    runtime = Runtime(_settings(tmp_path))
    assert runtime.judges is None and runtime.resources.judges is None


async def test_the_runtime_owns_the_judges_and_the_service_reports_them(tmp_path: Path) -> None:
    endpoints: dict[str, dict[str, Any]] = {
        "local": {"url": "", "model": "judge-model", "api_key": API_KEY},
        "gone": {
            "url": f"http://127.0.0.1:{refused_port()}/v1",
            "model": "m",
            "retries": 0,
            "breaker_failures": 1,
        },
    }
    with ChatServer() as server:
        endpoints["local"]["url"] = server.url("ok")
        runtime = Runtime(_settings(tmp_path, endpoints))
        judges = runtime.resources.judges
        assert isinstance(judges, JudgeClients) and judges is runtime.judges
        app = create_app(runtime)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://referee") as http:
                reply, failure = await judges.complete_many([ask("local", "a"), ask("gone", "b")])
                assert isinstance(reply, ChatReply) and reply.text == "a"
                assert not isinstance(failure, ChatReply) and failure.kind == "unreachable"
                judges.cache.put("key", 1.0)
                assert judges.cache.get("key") == 1.0 and judges.cache.get("other") is None

                readiness = await http.get("/readyz")
                metrics = (await http.get("/metrics")).text
        # Stopped: the connections are closed, and a late call fails at once.
        (late,) = await judges.complete_many([ask("local", "late")])
        assert not isinstance(late, ChatReply) and "closed" in late.detail
        assert server.hits["ok"] == 1

    # A judge endpoint that is down is reported, and the service stays ready.
    assert readiness.status_code == 200 and readiness.json()["ready"] is True
    reported = readiness.json()["checks"]["judges"]
    assert reported["ok"] is False
    assert reported["endpoints"]["gone"]["state"] == "open" and reported["endpoints"]["local"]["ok"] is True
    assert API_KEY not in readiness.text and "127.0.0.1" not in readiness.text
    for line in (
        "referee_judge_cache_hits_total 1.0",
        "referee_judge_cache_misses_total 1.0",
        "referee_judge_cache_hit_ratio 0.5",
        'referee_judge_calls_total{endpoint="local",outcome="ok"} 1.0',
        'referee_judge_calls_total{endpoint="gone",outcome="unreachable"} 1.0',
        'referee_judge_tokens_total{endpoint="local",kind="prompt"} 11.0',
        'referee_judge_tokens_total{endpoint="local",kind="completion"} 3.0',
    ):
        assert line in metrics, line
    assert API_KEY not in metrics


def test_the_cache_hit_ratio_is_zero_before_any_lookup() -> None:
    judges = clients({"local": {"url": "http://127.0.0.1:9/v1"}})
    ratio = [m for m in _JudgeCollector(judges).collect() if m.name == "referee_judge_cache_hit_ratio"]
    assert ratio[0].samples[0].value == 0.0
    judges.cache.put("k", 1.0)
    for key in ("k", "k", "other"):
        judges.cache.get(key)
    ratio = [m for m in _JudgeCollector(judges).collect() if m.name == "referee_judge_cache_hit_ratio"]
    assert ratio[0].samples[0].value == 2 / 3
