"""Dead sandbox containers are noticed (issue 27, item 4): a warm container killed from outside is
never handed to a program, Docker's events drop it from the warm set at once (the listener
reconnects when its stream ends), a container the engine kills mid-run is the infrastructure's
fault (never the program's 0), and `/readyz` counts only live warm containers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.sandbox.engine import EngineEvents, docker_client
from referee.sandbox.hardening import LABEL
from referee.sandbox.image import image_ref
from referee.sandbox.pool import SandboxPool
from referee.service.background import BackgroundServer
from referee.verifiers import Resources
from referee.verifiers.base import Check
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.conftest import make_settings
from tests.sandbox.helpers import make_sandbox_settings, run_instance, sandbox_uid_processes
from tests.timing import wait_until, wait_until_async, within

pytestmark = pytest.mark.docker

SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
SUM_REFERENCE = {"language": "python", "tests": [{"input": "1 2\n", "output": "3\n"}] * 2}


def _running(instance: str) -> list[str]:
    client = docker_client(make_sandbox_settings())
    try:
        filters = {"label": f"{LABEL}={instance}", "status": "running"}
        return [c["Id"] for c in client.api.containers(filters=filters)]
    finally:
        client.close()


def _kill_and_wait(ids: list[str]) -> None:
    """`docker kill` each, and return once every one has exited (dead, not dying)."""
    client = docker_client(make_sandbox_settings())
    try:
        for cid in ids:
            with contextlib.suppress(Exception):  # already gone
                client.api.kill(cid)
        for cid in ids:
            with contextlib.suppress(Exception):
                client.api.wait(cid, timeout=30)
    finally:
        client.close()


async def _verdicts(
    pool: SandboxPool, programs: list[str], reference: dict[str, Any], **options: Any
) -> list[Any]:
    verifier = CodeVerifier()
    opts = CodeOptions.model_validate(options)
    prepared = verifier.prepare(verifier.validate_reference(reference), opts)
    return await verifier.check_group(programs, prepared, opts, Resources(sandbox=pool))


async def test_killed_warm_containers_are_never_handed_out(sandbox_image: str) -> None:
    """Every warm container is killed between two checkouts: the next verdicts are computed on
    new containers (before: each took two dead ones and came back masked)."""
    pool = SandboxPool(make_sandbox_settings(pool_size=3, max_parallel=1))
    await pool.start()
    try:
        assert await pool.until_warm(3)
        instance = pool.settings.instance
        assert instance is not None
        killed = _running(instance)
        assert len(killed) == 3
        await asyncio.to_thread(_kill_and_wait, killed)
        for _ in range(3):
            [check] = await _verdicts(pool, [SUM + f"# {time.monotonic()}\n"], SUM_REFERENCE)
            assert isinstance(check, Check) and check.score == 1.0, check
        assert pool.stats["found_dead"] == 3
        assert not set(killed) & set(_running(instance))
    finally:
        await pool.close()


async def test_events_drop_a_dead_warm_container_at_once(sandbox_image: str) -> None:
    """A warm container killed from outside leaves the warm set within a bounded time, and the
    pool starts a replacement, with no submission to notice it."""
    pool = SandboxPool(make_sandbox_settings(pool_size=2))
    await pool.start()
    try:
        assert await pool.until_warm(2)
        instance = pool.settings.instance
        assert instance is not None
        await wait_until_async(lambda: pool.readiness()["events"], 10, what="the event stream")
        [victim, *_] = _running(instance)
        _kill_and_wait([victim])
        # the maintainer's own check runs once a second; the events are well under that
        await wait_until_async(lambda: pool.stats["found_dead"] == 1, 0.9, what="the death to be seen")
        assert await pool.until_warm(2, timeout_s=within(30))
        assert victim not in _running(instance)
        snapshot = pool.readiness()
        assert (snapshot["warm"], snapshot["refilling"]) == (2, False)
    finally:
        await pool.close()


def test_the_event_listener_reconnects_and_stops(sandbox_image: str) -> None:
    """The engine cannot be reached at first, then the listener's stream is cut (as an engine
    restart cuts it): it subscribes again each time and still reports deaths; `stop()` ends its
    thread at once."""
    instance = run_instance("pytest-events")
    settings = make_sandbox_settings(instance=instance)
    seen: list[tuple[str, str]] = []
    listed = threading.Event()
    refusals = [ConnectionRefusedError("the engine is restarting")] * 2

    def connect() -> Any:
        if refusals:
            raise refusals.pop()
        return docker_client(settings)

    async def scenario() -> None:
        events = EngineEvents(
            connect,
            instance,
            lambda cid, action: seen.append((cid, action)),
            lambda running, at: listed.set(),
            retry_s=0.5,
        )
        events.start()
        client = docker_client(settings)
        cid = ""
        try:
            await wait_until_async(lambda: events.connected, 10, what="the first subscription")
            assert events.reconnects == 2 and not refusals
            await wait_until_async(listed.is_set, 10, what="the running containers listed")
            listed.clear()
            with events._lock:  # what an engine restart does to the stream
                events._stream.close()
            await wait_until_async(lambda: events.reconnects == 3 and events.connected, 10, what="reconnect")
            await wait_until_async(listed.is_set, 10, what="them listed again after reconnecting")
            cid = client.api.create_container(
                image_ref(settings),
                command=["sleep", "60"],
                entrypoint=[],
                labels={LABEL: instance},
            )["Id"]
            client.api.start(cid)
            client.api.kill(cid)
            await wait_until_async(lambda: (cid, "die") in seen, 5, what="the die event")
            assert (cid, "kill") in seen
        finally:
            if cid:
                client.api.remove_container(cid, force=True)
            client.close()
            started = time.monotonic()
            await events.stop()
            assert time.monotonic() - started < within(2)
            assert events._thread is not None and not events._thread.is_alive()

    asyncio.run(scenario())


async def test_a_container_the_engine_kills_twice_mid_run_is_masked_not_a_zero(sandbox_image: str) -> None:
    """The container running an honest program is killed from outside, then its replacement too:
    not the program's doing, so the verdict is an infrastructure error (masked), never the
    runtime_error 0 that two lost supervisors mean when the program itself caused them."""
    pool = SandboxPool(make_sandbox_settings(pool_size=1, max_parallel=1))
    await pool.start()
    try:
        assert await pool.until_warm(1)
        reference = {"language": "python", "tests": [{"input": "", "output": "ok\n"}]}
        slow = "import time\ntime.sleep(4)\nprint('ok')\n"
        verdict = asyncio.create_task(_verdicts(pool, [slow], reference, time_limit_s=10))
        killed: set[str] = set()
        for _ in range(2):
            # the program's own process, running in a container not yet killed
            def program_running() -> str | None:
                return next((c for c in sandbox_uid_processes().values() if c and c not in killed), None)

            await wait_until_async(lambda: program_running() is not None, 30, what="the program to run")
            cid = program_running()
            assert cid is not None
            await asyncio.sleep(0.3)  # well inside its 4 s sleep
            full = [c for c in _running(str(pool.settings.instance)) if c.startswith(cid[:12])]
            await asyncio.to_thread(_kill_and_wait, full)
            killed.add(cid)
        [result] = await verdict
        assert not isinstance(result, Check), result
        assert "sandbox" in str(result)
    finally:
        await pool.close()


# -- /readyz -----------------------------------------------------------------------------------


@pytest.fixture
def sandbox_service(
    sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[BackgroundServer]:
    monkeypatch.setenv("REFEREE_SANDBOX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("REFEREE_SANDBOX_POOL_SIZE", "3")
    with BackgroundServer(make_settings(sandbox=True, verdict_timeout_s=30.0)) as running:
        yield running


def test_readyz_counts_live_warm_containers_only(sandbox_service: BackgroundServer) -> None:
    """Every container is killed: /readyz says so (fewer warm, refilling) and then that the pool
    is full again, and the next code verdicts are right, not masked."""
    state = Path(os.environ["REFEREE_SANDBOX_STATE_DIR"])
    with httpx.Client(base_url=sandbox_service.url, timeout=30) as http:

        def sandbox() -> dict[str, Any]:
            return dict(http.get("/readyz").json()["checks"]["sandbox"])

        wait_until(lambda: sandbox().get("warm") == 3, within(60), what="a full pool")
        assert sandbox()["refilling"] is False and "3 warm," in sandbox()["reason"]
        instance = (state / "instance-0.id").read_text().strip()
        _kill_and_wait(_running(instance))
        seen = [sandbox()]
        while not (seen[-1]["warm"] == 3 and not seen[-1]["refilling"]):
            assert len(seen) < 10_000, seen[-1]
            time.sleep(0.01)
            seen.append(sandbox())
        assert min(s["warm"] for s in seen) < 3 and any(s["refilling"] for s in seen)
        assert all(s["ok"] for s in seen)  # the engine is fine: refilling is not an outage
        group = {"verifier": "code", "reference": SUM_REFERENCE, "responses": [SUM] * 3}
        for _ in range(3):
            _kill_and_wait(_running(instance))
            response = http.post("/v1/groups", json={"groups": [group]})
            verdicts = response.json()["groups"][0]["verdicts"]
            assert [(v["status"], v["score"]) for v in verdicts] == [("ok", 1.0)] * 3
