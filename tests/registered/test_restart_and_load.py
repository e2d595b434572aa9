"""Registered types survive a restart; new versions under scoring load never mix verdicts."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.registered.conftest import register, registered_settings, score
from tests.registered.test_api import r1_math


def test_restart_keeps_registered_types(tmp_path: Path) -> None:
    db = tmp_path / "restart.db"
    with BackgroundServer(registered_settings(db)) as first, httpx.Client(base_url=first.url) as http:
        assert register(http, r1_math("persist.me", 0.1)).status_code == 201
        assert register(http, r1_math("persist.me", 0.3)).status_code == 201
        assert register(http, r1_math("gone.soon")).status_code == 201
        assert http.delete("/v1/verifiers/gone.soon").status_code == 200
    with BackgroundServer(registered_settings(db)) as second, httpx.Client(base_url=second.url) as http:
        latest = score(http, "persist.me", "\\boxed{7}", {"answer": "7"})
        assert latest["verifier"] == "persist.me@2" and latest["score"] == pytest.approx(0.7)
        assert score(http, "persist.me@1", "\\boxed{7}", {"answer": "7"})["score"] == pytest.approx(0.9)
        names = {v["name"] for v in http.get("/v1/verifiers").json()["verifiers"]}
        assert "persist.me" in names and "gone.soon" not in names
        history = http.get("/v1/verifiers/gone.soon/versions").json()["versions"]
        assert [v["active"] for v in history] == [False]


def scaled(version_score: float) -> dict[str, Any]:
    """A type whose score tells which version judged: exact match times a constant."""
    return {
        "name": "load.type",
        "kind": "declarative",
        "spec": {
            "type": "multi",
            "components": {
                "ok": {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "exact"}}
            },
            "formula": f"{version_score} * ok",
        },
        "examples": [
            {"response": "yes", "reference": "yes", "expected_score": version_score},
            {"response": "no", "reference": "yes", "expected_score": 0.0},
        ],
    }


def test_registering_while_scoring_keeps_every_verdict_correct(http: httpx.Client) -> None:
    assert register(http, scaled(0.1)).json()["verifier"] == "load.type@1"
    url = str(http.base_url)
    stop = threading.Event()
    registered: list[str] = []

    def registrar() -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            for k in range(2, 10):
                r = register(c, scaled(k / 10))
                assert r.status_code == 201, r.text
                registered.append(r.json()["verifier"])
        stop.set()

    async def load() -> list[dict[str, Any]]:
        verdicts: list[dict[str, Any]] = []
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:

            async def one(i: int) -> None:
                name = "load.type@1" if i % 4 == 0 else "load.type"
                response = "yes" if i % 3 else "no"
                group = {"verifier": name, "reference": "yes", "responses": [response] * 4}
                r = await c.post("/v1/groups", json={"groups": [group]})
                while r.status_code == 503:  # shed load (a slow machine): retried, as trainers do
                    await asyncio.sleep(min(float(r.headers.get("Retry-After", "1")), 2.0))
                    r = await c.post("/v1/groups", json={"groups": [group]})
                assert r.status_code == 200, r.text
                for v in r.json()["groups"][0]["verdicts"]:
                    verdicts.append({"asked": name, "response": response, **v})

            i = 0
            while not stop.is_set() or i < 64:
                await asyncio.gather(*(one(i + j) for j in range(16)))
                i += 16
        return verdicts

    thread = threading.Thread(target=registrar)
    thread.start()
    verdicts = asyncio.run(load())
    thread.join(60)
    assert registered == [f"load.type@{k}" for k in range(2, 10)]
    seen = set()
    for v in verdicts:
        assert v["status"] == "ok", v
        version = int(v["verifier"].split("@")[1])
        seen.add(version)
        if v["asked"] == "load.type@1":
            assert version == 1
        expected = version / 10 if v["response"] == "yes" else 0.0
        assert v["score"] == pytest.approx(expected), v
    assert len(verdicts) >= 64 * 4 and len(seen) >= 3  # the load really overlapped the new versions
