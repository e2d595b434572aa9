"""Code sessions through the service, in real containers: `/v1/sessions` over the Runtime's own
sandbox pool (the pool's side alone is tests/sandbox/test_sessions.py).

State is kept across 100 calls of one session; nothing crosses from one session to another,
neither between two open at once nor from a session to the next one in the same (scrubbed)
container; an idle session is reclaimed by the reaper and its container goes back to the
pool; 64 sessions are open at once (four keys at their quota of 16), with the pool bounded
and scoring still served.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.runtime import Runtime
from referee.sandbox import SandboxPool
from referee.sandbox.hardening import LABEL
from referee.sandbox.image import build_image
from tests.conftest import make_settings
from tests.sandbox.helpers import docker_client, make_sandbox_settings, run_instance
from tests.sandbox.test_reuse import LOOK, PLANT
from tests.support.in_process import in_process
from tests.timing import within

pytestmark = pytest.mark.docker

KEYS = [f"sessions-docker-{i}" for i in range(5)]
INSTANCE = run_instance("pytest-sessions")


@pytest.fixture(scope="module")
def sandbox_image() -> str:
    return build_image(make_sandbox_settings(), log=lambda _msg: None)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@asynccontextmanager
async def service(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Runtime]]:
    config = make_settings(
        workers=1,
        db_path=tmp_path / "referee.db",
        api_keys=KEYS,
        sandbox=True,
        sandbox_instance=INSTANCE,
        **{"sandbox_pool_size": 1, "sandbox_max_parallel": 1, **settings},
    )
    runtime = Runtime(config)
    async with in_process(runtime) as http:
        yield http, runtime


def instance_containers() -> list[str]:
    """This file's sandbox containers (its instance label), running or not."""
    client = docker_client()
    try:
        found = client.api.containers(all=True, filters={"label": f"{LABEL}={INSTANCE}"})
        return [c["Id"] for c in found]
    finally:
        client.close()


def pool_of(runtime: Runtime) -> SandboxPool:
    pool = runtime.resources.sandbox
    assert isinstance(pool, SandboxPool)
    return pool


async def open_session(http: httpx.AsyncClient, key: str = KEYS[0], **body: Any) -> str:
    answer = await http.post("/v1/sessions", json=body, headers=auth(key))
    assert answer.status_code == 201, answer.text
    session_id: str = answer.json()["id"]
    return session_id


async def run(http: httpx.AsyncClient, sid: str, code: str, key: str = KEYS[0]) -> dict[str, Any]:
    answer = await http.post(f"/v1/sessions/{sid}/run", json={"code": code}, headers=auth(key))
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def look(http: httpx.AsyncClient, sid: str, key: str) -> dict[str, Any]:
    out = await run(http, sid, LOOK, key)
    assert out["status"] == "ok", out
    seen: dict[str, Any] = json.loads(out["stdout"])
    return seen


def container_of(runtime: Runtime, sid: str) -> str:
    """The id of the container a session holds (the table's entry: tests only)."""
    container_id: str = runtime.code_sessions._entries[sid].handle.container.id  # type: ignore[attr-defined]
    return container_id


async def test_state_is_kept_across_100_calls(tmp_path: Path, sandbox_image: str) -> None:
    async with service(tmp_path) as (http, runtime):
        sid = await open_session(http, files={"data/input.txt": "7\n"})
        first = await run(
            http,
            sid,
            "import math\nn = int(open('data/input.txt').read())\nopen('notes.txt', 'w').write('kept')\nn",
        )
        assert (first["status"], first["value"], first["call"]) == ("ok", "7", 1), first
        for i in range(99):
            out = await run(http, sid, "n += 1\nprint(n)\nmath.factorial(3) + n")
            assert (out["status"], out["stdout"], out["value"], out["call"]) == (
                "ok",
                f"{8 + i}\n",
                f"{14 + i}",
                i + 2,
            ), out
        last = await run(http, sid, "open('notes.txt').read(), n")
        assert last["value"] == "('kept', 106)" and last["call"] == 101
        state = (await http.get(f"/v1/sessions/{sid}", headers=auth(KEYS[0]))).json()
        assert (state["calls"], state["restarts"]) == (101, 0)
    # Left open when the service stopped: closed with it, its container removed with the pool.
    assert runtime.code_sessions.counters.stopped == 1 and runtime.code_sessions.open_count == 0
    assert instance_containers() == []


async def test_nothing_crosses_between_two_open_sessions(tmp_path: Path, sandbox_image: str) -> None:
    async with service(tmp_path) as (http, _):
        one = await open_session(http, KEYS[0])
        other = await open_session(http, KEYS[1])
        baseline = await look(http, other, KEYS[1])
        planted = await run(
            http,
            one,
            PLANT + "secret = 'one'\nimport subprocess\nsubprocess.Popen(['sleep', '300'])\n",
            KEYS[0],
        )
        assert planted["status"] == "ok" and planted["stdout"].split() == ["True", "True", "True"], planted
        seen = await look(http, other, KEYS[1])
        for key in ("tmp", "work", "shm", "msg", "sem", "others", "nofile", "env"):
            assert seen[key] == baseline[key], key
        assert seen["work"] == [] and seen["others"] == []
        gone = await run(http, other, "secret", KEYS[1])
        assert gone["status"] == "error" and "NameError" in gone["error"]
        # The planting session still has all of it: its state is its own, not wiped.
        kept = await run(http, one, "import os\nsecret, os.environ.get('LEAK'), sorted(os.listdir('/work'))")
        assert kept["value"] == "('one', 'yes', ['left-in-work'])", kept


async def test_an_idle_session_is_reclaimed_and_its_container_scrubbed_for_the_next(
    tmp_path: Path, sandbox_image: str
) -> None:
    async with service(tmp_path, sessions_idle_ttl_s=1.0) as (http, runtime):
        pool = pool_of(runtime)
        sid = await open_session(http)
        held = container_of(runtime, sid)
        planted = await run(http, sid, PLANT + "secret = 'idle'\n")
        assert planted["status"] == "ok", planted
        reused = pool.stats["reused"]
        # Left alone past its TTL: the reaper closes it, the container scrubs itself back.
        for _ in range(int(within(30) / 0.1)):
            if pool.stats["reused"] > reused and pool.sessions_open == 0:
                break
            await asyncio.sleep(0.1)
        assert pool.sessions_open == 0 and pool.stats["reused"] == reused + 1
        assert runtime.code_sessions.counters.expired == 1
        gone = await http.get(f"/v1/sessions/{sid}", headers=auth(KEYS[0]))
        assert gone.status_code == 404
        # The next session (another key's) gets that very container, with nothing of the first.
        assert await pool.until_warm(1)
        nxt = await open_session(http, KEYS[1], idle_ttl_s=60)
        assert container_of(runtime, nxt) == held
        seen = await look(http, nxt, KEYS[1])
        assert seen["tmp"] == [] and seen["work"] == [] and seen["others"] == []
        assert seen["shm"] == seen["msg"] == seen["sem"] == [] and "LEAK" not in seen["env"]
        gone_var = await run(http, nxt, "secret", KEYS[1])
        assert gone_var["status"] == "error" and "NameError" in gone_var["error"]


async def test_a_bash_session_through_the_service(tmp_path: Path, sandbox_image: str) -> None:
    async with service(tmp_path) as (http, _):
        answer = await http.post("/v1/sessions", json={"language": "bash"}, headers=auth(KEYS[0]))
        assert answer.status_code == 201 and answer.json()["language"] == "bash", answer.text
        sid = answer.json()["id"]
        assert (await run(http, sid, "x=21; cd /tmp"))["status"] == "ok"
        out = await run(http, sid, "echo $(( x * 2 )) $PWD")
        assert (out["status"], out["stdout"], out["value"]) == ("ok", "42 /tmp\n", None), out
        failed = await run(http, sid, "false")
        assert (failed["status"], failed["error"]) == ("error", "exit status 1"), failed


async def test_file_limits_a_session_asks_for_apply_within_the_service_caps(
    tmp_path: Path, sandbox_image: str
) -> None:
    """`file_size_mb` and `open_files` as asked (open_files lowered to the service's cap): a
    call beyond either fails with Python's own error, and the session goes on."""
    async with service(tmp_path, sessions_max_open_files=64) as (http, _):
        limits = {"file_size_mb": 1, "open_files": 1000}
        answer = await http.post("/v1/sessions", json={"limits": limits}, headers=auth(KEYS[0]))
        assert answer.status_code == 201, answer.text
        applied = answer.json()["limits"]
        assert (applied["file_size_mb"], applied["open_files"]) == (1, 64)
        sid = answer.json()["id"]
        small = await run(http, sid, "open('small.bin', 'wb').write(b'x' * (1 << 19))")
        assert (small["status"], small["value"]) == ("ok", str(1 << 19)), small
        big = await run(http, sid, "open('big.bin', 'wb').write(b'x' * (2 << 20))")
        assert big["status"] == "error" and "File too large" in big["error"], big
        many = await run(http, sid, "held = [open('small.bin') for _ in range(100)]")
        assert many["status"] == "error" and "Too many open files" in many["error"], many
        still = await run(http, sid, "import os\nos.path.getsize('small.bin'), os.path.getsize('big.bin')")
        assert still["status"] == "ok" and still["value"] == f"({1 << 19}, {1 << 20})", still


@pytest.mark.slow
async def test_64_sessions_at_once_through_the_service(tmp_path: Path, sandbox_image: str) -> None:
    async with service(tmp_path, sandbox_pool_size=2, sandbox_max_parallel=2) as (http, runtime):
        pool = pool_of(runtime)
        assert runtime.code_sessions.max_open == 64
        owners = [KEYS[i // 16] for i in range(64)]  # four keys, each at its quota of 16
        sids = await asyncio.gather(*(open_session(http, key) for key in owners))
        assert pool.sessions_open == 64 and len(set(sids)) == 64
        quota = await http.post("/v1/sessions", json={}, headers=auth(KEYS[0]))
        assert quota.status_code == 429 and quota.json()["error"] == "session_quota"
        full = await http.post("/v1/sessions", json={}, headers=auth(KEYS[4]))
        assert (
            full.status_code == 503
            and full.json()["error"] == "sessions_full"
            and "Retry-After" in full.headers
        )
        await asyncio.gather(
            *(
                run(http, sid, f"mine = {i}", key)
                for i, (sid, key) in enumerate(zip(sids, owners, strict=True))
            )
        )
        values = await asyncio.gather(
            *(run(http, sid, "mine", key) for sid, key in zip(sids, owners, strict=True))
        )
        assert [v["value"] for v in values] == [str(i) for i in range(64)]
        assert pool.containers <= pool.max_containers
        # Scoring still gets a container while every session slot is taken.
        scored = await http.post(
            "/v1/score",
            json={
                "verifier": "code",
                "response": "```python\nprint(6 * 7)\n```",
                "reference": {"language": "python", "tests": [{"input": "", "output": "42\n"}]},
            },
            headers=auth(KEYS[4]),
        )
        assert scored.status_code == 200 and scored.json()["score"] == 1.0, scored.text
        closed = await asyncio.gather(
            *(
                http.delete(f"/v1/sessions/{sid}", headers=auth(key))
                for sid, key in zip(sids, owners, strict=True)
            )
        )
        assert {c.status_code for c in closed} == {204}
        for _ in range(int(within(60) / 0.1)):
            if pool.sessions_open == 0:
                break
            await asyncio.sleep(0.1)
        assert pool.sessions_open == 0
        assert await pool.until_warm(2)
        assert pool.warm <= pool.settings.pool_size
