"""`/v1/sessions` through the whole app (lifespan, auth, error handlers, metrics, dashboard),
over a fake sandbox session (tests/support/fake_sessions.py): the contract's bodies and
status codes, per-key ownership and quota, and the counters on /metrics and the dashboard.
The same routes over real containers: tests/sessions/test_docker_sessions.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.runtime import Runtime
from referee.sessions import CodeSessions
from tests.conftest import make_settings
from tests.support.fake_sessions import FakeSandbox
from tests.support.in_process import in_process
from tests.timing import wait_until_async, within

KEY_A, KEY_B, ADMIN = "sessions-key-a", "sessions-key-b", "sessions-admin"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@asynccontextmanager
async def service(
    tmp_path: Path, sandbox: FakeSandbox, *, max_open: int = 8, **settings: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    """The app in process with keys, its code sessions over `sandbox`."""
    config = make_settings(
        workers=1, db_path=tmp_path / "referee.db", api_keys=[KEY_A, KEY_B], admin_keys=[ADMIN], **settings
    )
    runtime = Runtime(config)
    runtime.code_sessions = CodeSessions(config.sessions, sandbox.open_session, max_open=max_open)
    async with in_process(runtime) as http:
        yield http, runtime


async def test_open_run_read_list_close(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox) as (http, _):
        opened = await http.post(
            "/v1/sessions",
            json={
                "language": "python",
                "limits": {"call_time_s": 5},
                "files": {"in.txt": "x"},
                "idle_ttl_s": 60,
            },
            headers=auth(KEY_A),
        )
        assert opened.status_code == 201, opened.text
        body = opened.json()
        assert set(body) == {"id", "language", "limits", "idle_ttl_s", "max_lifetime_s", "created_at"}
        assert body["limits"] == {
            "call_time_s": 5.0,
            "session_cpu_s": 600.0,
            "memory_mb": 512,
            "output_bytes": 65536,
            "file_size_mb": 32,
            "open_files": 256,
        }
        assert (body["idle_ttl_s"], body["max_lifetime_s"]) == (60.0, 3600.0)
        assert sandbox.sessions[0].spec.files == {"in.txt": b"x"}
        sid = body["id"]

        ran = await http.post(f"/v1/sessions/{sid}/run", json={"code": "set x 7"}, headers=auth(KEY_A))
        assert ran.status_code == 200, ran.text
        ran = await http.post(
            f"/v1/sessions/{sid}/run", json={"code": "get x", "time_s": 1}, headers=auth(KEY_A)
        )
        assert ran.json() == {
            "status": "ok",
            "stdout": "",
            "stderr": "",
            "value": "'7'",
            "error": None,
            "duration_s": 0.0,
            "truncated": False,
            "restarted": False,
            "call": 2,
        }
        assert sandbox.sessions[0].runs[-1] == ("get x", 1.0)

        state = (await http.get(f"/v1/sessions/{sid}", headers=auth(KEY_A))).json()
        assert state["id"] == sid and state["calls"] == 2 and state["restarts"] == 0
        assert state["expires_at"] == pytest.approx(state["last_used_at"] + 60)
        listed = (await http.get("/v1/sessions", headers=auth(KEY_A))).json()
        assert [s["id"] for s in listed["sessions"]] == [sid]

        closed = await http.delete(f"/v1/sessions/{sid}", headers=auth(KEY_A))
        assert closed.status_code == 204 and closed.content == b""
        gone = await http.get(f"/v1/sessions/{sid}", headers=auth(KEY_A))
        assert gone.status_code == 404 and gone.json()["error"] == "unknown_session"
        assert (await http.delete(f"/v1/sessions/{sid}", headers=auth(KEY_A))).status_code == 404


async def test_another_keys_session_is_404_and_unlisted(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox) as (http, _):
        sid = (await http.post("/v1/sessions", json={}, headers=auth(KEY_A))).json()["id"]
        for key in (KEY_B, ADMIN):  # an admin key is another key too: ids are capabilities
            for method, path, body in (
                ("GET", f"/v1/sessions/{sid}", None),
                ("POST", f"/v1/sessions/{sid}/run", {"code": "get x"}),
                ("DELETE", f"/v1/sessions/{sid}", None),
            ):
                answer = await http.request(method, path, json=body, headers=auth(key))
                never = await http.request(
                    method, path.replace(sid, "x" * len(sid)), json=body, headers=auth(key)
                )
                assert answer.status_code == never.status_code == 404
                assert answer.json()["error"] == never.json()["error"] == "unknown_session"
            assert (await http.get("/v1/sessions", headers=auth(key))).json() == {"sessions": []}
        assert sandbox.sessions[0].calls == 0 and not sandbox.sessions[0].closed
        assert (await http.get("/v1/sessions")).status_code == 401


async def test_quota_is_429_and_a_full_service_503_both_with_retry_after(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox, max_open=3, sessions_max_per_key=2) as (http, _):
        for _ in range(2):
            assert (await http.post("/v1/sessions", json={}, headers=auth(KEY_A))).status_code == 201
        over = await http.post("/v1/sessions", json={}, headers=auth(KEY_A))
        assert over.status_code == 429 and over.headers["Retry-After"] == "5"
        assert over.json()["error"] == "session_quota"
        assert (await http.post("/v1/sessions", json={}, headers=auth(KEY_B))).status_code == 201
        full = await http.post("/v1/sessions", json={}, headers=auth(KEY_B))
        assert full.status_code == 503 and full.headers["Retry-After"] == "5"
        assert full.json()["error"] == "sessions_full"


async def test_without_a_sandbox_sessions_are_503(tmp_path: Path) -> None:
    async with service(tmp_path, FakeSandbox()) as (http, runtime):
        runtime.code_sessions._opener = None  # as a service with REFEREE_SANDBOX=false
        answer = await http.post("/v1/sessions", json={}, headers=auth(KEY_A))
        assert answer.status_code == 503 and answer.json()["error"] == "sandbox_unavailable"


async def test_a_lost_container_is_503_with_status_error_then_404(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox) as (http, _):
        sid = (await http.post("/v1/sessions", json={}, headers=auth(KEY_A))).json()["id"]
        lost = await http.post(f"/v1/sessions/{sid}/run", json={"code": "lose"}, headers=auth(KEY_A))
        assert lost.status_code == 503, lost.text
        assert lost.json()["error"] == "session_lost" and lost.json()["detail"]["status"] == "error"
        after = await http.post(f"/v1/sessions/{sid}/run", json={"code": "get x"}, headers=auth(KEY_A))
        assert after.status_code == 404


async def test_a_busy_session_queues_then_refuses_409(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox) as (http, runtime):
        sid = (await http.post("/v1/sessions", json={}, headers=auth(KEY_A))).json()["id"]
        fake = sandbox.sessions[0]

        async def run(code: str) -> httpx.Response:
            return await http.post(f"/v1/sessions/{sid}/run", json={"code": code}, headers=auth(KEY_A))

        running = asyncio.create_task(run("wait"))
        await asyncio.wait_for(fake.started.wait(), within(5))
        queued = [asyncio.create_task(run(f"print {i}")) for i in range(4)]
        # Every queued call has reached the table (a fixed number of yields is not enough when
        # the app's request path hops to a thread on a loaded machine).
        entry = runtime.code_sessions._entries[sid]
        await wait_until_async(lambda: entry.active == 5, within(10), what="4 calls queued behind the first")
        busy = await run("print too many")
        assert busy.status_code == 409 and busy.json()["error"] == "session_busy"
        fake.release.set()
        answers = await asyncio.gather(running, *queued)
        # One at a time: each waiting call ran after the first, in the order it reached the table.
        assert answers[0].json()["call"] == 1
        assert sorted(a.json()["call"] for a in answers) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"language": "ruby"}, "language"),
        ({"limits": {"memory_mb": -1}}, "memory_mb"),
        ({"limits": {"value_bytes": 1}}, "value_bytes"),  # not one a request may set
        ({"limits": {"open_files": 8}}, "open_files"),  # the kernel needs a few of its own
        ({"files": {"../x": "y"}}, "files"),
        ({"files": {"a": 1}}, "files"),
        ({"idle_ttl_s": 0}, "idle_ttl_s"),
        ({"idle_ttl_s": "60"}, "idle_ttl_s"),  # JSON numbers only, never text or booleans
        ({"limits": {"memory_mb": True}}, "memory_mb"),
        ({"limits": {"call_time_s": False}}, "call_time_s"),
        ({"extra": True}, "extra"),
    ],
)
async def test_bad_open_bodies_are_422_naming_the_field(
    tmp_path: Path, body: dict[str, Any], field: str
) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox) as (http, _):
        answer = await http.post("/v1/sessions", json=body, headers=auth(KEY_A))
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"] == "validation_error"
        assert any(field in map(str, d["loc"]) for d in answer.json()["detail"]), answer.json()
        assert sandbox.sessions == []


async def test_code_over_the_configured_size_is_422_too_long(tmp_path: Path) -> None:
    async with service(tmp_path, FakeSandbox(), sessions_max_code_bytes=1024) as (http, _):
        sid = (await http.post("/v1/sessions", json={}, headers=auth(KEY_A))).json()["id"]
        answer = await http.post(f"/v1/sessions/{sid}/run", json={"code": "x" * 1025}, headers=auth(KEY_A))
        assert answer.status_code == 422
        assert [(d["loc"], d["type"]) for d in answer.json()["detail"]] == [(["body", "code"], "too_long")]


async def test_metrics_and_the_dashboard_count_sessions(tmp_path: Path) -> None:
    sandbox = FakeSandbox()
    async with service(tmp_path, sandbox) as (http, _):
        sids = [
            (await http.post("/v1/sessions", json={}, headers=auth(KEY_A))).json()["id"] for _ in range(3)
        ]
        await http.post(f"/v1/sessions/{sids[0]}/run", json={"code": "print hi"}, headers=auth(KEY_A))
        await http.post(f"/v1/sessions/{sids[0]}/run", json={"code": "timeout"}, headers=auth(KEY_A))
        await http.post(f"/v1/sessions/{sids[1]}/run", json={"code": "lose"}, headers=auth(KEY_A))
        await http.delete(f"/v1/sessions/{sids[2]}", headers=auth(KEY_A))
        text = (await http.get("/metrics")).text
        for line in (
            "referee_sessions_open 1.0",
            "referee_sessions_opened_total 3.0",
            'referee_sessions_ended_total{reason="closed"} 1.0',
            'referee_sessions_ended_total{reason="lost"} 1.0',
            'referee_sessions_ended_total{reason="expired"} 0.0',
            'referee_session_calls_total{status="ok"} 1.0',
            'referee_session_calls_total{status="timeout"} 1.0',
            'referee_session_calls_total{status="lost"} 1.0',
            "referee_session_restarts_total 1.0",
        ):
            assert line in text, line
        login = await http.post("/ui/login", data={"key": KEY_A}, headers={"Origin": "http://referee"})
        assert login.status_code in (200, 303), login.text
        page = (await http.get("/ui")).text
        assert 'id="health-sessions">1 / 8<' in page
        assert "3 opened, 0 expired, 3 calls (1 restarts)" in page and "(1 lost)" in page
