"""`CodeSessions`, the session table, over a fake sandbox (tests/support/fake_sessions.py):
owners, quotas and the global bound, TTL and lifetime on a fake clock, the one-call-at-a-time
queue, lost containers, input caps, and what stopping does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from referee.errors import DomainError, ErrorKind, InputError
from referee.runtime import Runtime
from referee.sandbox.session import MAX_SESSION_FILES, MAX_SESSION_FILES_BYTES
from referee.sessions import MAX_WAITING_CALLS, CodeSessions
from referee.settings import SessionSettings
from tests.conftest import make_settings
from tests.support.fake_sessions import FakeSandbox
from tests.timing import within

A, B = b"key-a", b"key-b"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def sandbox() -> FakeSandbox:
    return FakeSandbox()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def table(sandbox: FakeSandbox, clock: FakeClock, max_open: int = 8, **settings: Any) -> CodeSessions:
    return CodeSessions(
        SessionSettings(**settings),
        sandbox.open_session,
        max_open=max_open,
        clock=clock,
        wall=lambda: clock.now + 1_700_000_000,
        reap_interval_s=3600,  # the tests reap by hand, on the fake clock
        queue_wait_s=lambda call_time_s: call_time_s,
    )


@asynccontextmanager
async def started(sandbox: FakeSandbox, clock: FakeClock, **settings: Any) -> AsyncIterator[CodeSessions]:
    t = table(sandbox, clock, **settings)
    await t.start()
    try:
        yield t
    finally:
        await t.stop()


@pytest.fixture
async def sessions(sandbox: FakeSandbox, clock: FakeClock) -> AsyncIterator[CodeSessions]:
    async with started(sandbox, clock) as t:
        yield t


async def refused(awaitable: Any) -> DomainError:
    with pytest.raises(DomainError) as caught:
        await awaitable
    return caught.value


async def settle() -> None:
    """Let the background closes run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_state_is_kept_between_calls_and_calls_are_numbered(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    info = await sessions.open(A)
    assert len(info.id) >= 40 and info.language == "python" and info.calls == 0
    outcome, call = await sessions.run(A, info.id, "set x 41")
    assert (outcome.status, call) == ("ok", 1)
    outcome, call = await sessions.run(A, info.id, "get x")
    assert (outcome.status, outcome.value, call) == ("ok", "'41'", 2)
    assert sessions.get(A, info.id).calls == 2
    assert sandbox.sessions[0].state == {"x": "41"}
    assert dict(sessions.counters.calls) == {"ok": 2}


async def test_ids_are_unguessable_and_another_keys_session_does_not_exist_for_it(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    mine = await sessions.open(A)
    theirs = await sessions.open(B)
    assert mine.id != theirs.id
    for attempt in (
        sessions.run(B, mine.id, "get x"),
        sessions.close(B, mine.id),
    ):
        err = await refused(attempt)
        assert (err.kind, err.code) == (ErrorKind.not_found, "unknown_session")
    with pytest.raises(DomainError) as caught:
        sessions.get(B, mine.id)
    # Exactly what an id never issued gets: nothing tells the two apart.
    with pytest.raises(DomainError) as never:
        sessions.get(B, "no-such-id")
    assert caught.value.code == never.value.code and caught.value.kind == never.value.kind
    assert [s.id for s in sessions.list(A)] == [mine.id]
    assert [s.id for s in sessions.list(B)] == [theirs.id]
    assert sandbox.sessions[0].calls == 0  # B's attempts never reached A's kernel


async def test_close_frees_the_container_and_forgets_the_id(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    info = await sessions.open(A)
    await sessions.close(A, info.id)
    await settle()
    assert sandbox.sessions[0].closed and sandbox.sessions[0].close_calls == 1
    assert sessions.open_count == 0 and sessions.counters.closed == 1
    err = await refused(sessions.run(A, info.id, "get x"))
    assert err.kind is ErrorKind.not_found
    err = await refused(sessions.close(A, info.id))
    assert err.kind is ErrorKind.not_found


async def test_a_key_has_its_quota_and_the_service_its_bound(sandbox: FakeSandbox, clock: FakeClock) -> None:
    async with started(sandbox, clock, max_open=3, max_per_key=2) as sessions:
        first = await sessions.open(A)
        await sessions.open(A)
        err = await refused(sessions.open(A))
        assert (err.kind, err.code, err.retry_after_s) == (ErrorKind.throttled, "session_quota", 5)
        await sessions.open(B)  # another key is not held to A's quota
        err = await refused(sessions.open(B))  # but every slot is taken now
        assert (err.kind, err.code, err.retry_after_s) == (ErrorKind.overloaded, "sessions_full", 5)
        await sessions.close(A, first.id)
        await sessions.open(B)  # a closed session's slot is free again
        assert dict(sessions.counters.refused) == {"quota": 1, "full": 1}
        assert len(sandbox.sessions) == 4


async def test_an_open_service_has_no_key_quota_only_the_bound(
    sandbox: FakeSandbox, clock: FakeClock
) -> None:
    async with started(sandbox, clock, max_open=3, max_per_key=1) as sessions:
        for _ in range(3):
            await sessions.open(None)
        err = await refused(sessions.open(None))
        assert err.code == "sessions_full"


async def test_concurrent_opens_never_overshoot_the_quota(sandbox: FakeSandbox, clock: FakeClock) -> None:
    """A slot is taken before the container is asked for: twenty opens in flight at once, for
    a quota of three, give three sessions and seventeen 429s."""
    sandbox.gate = asyncio.Event()
    async with started(sandbox, clock, max_open=10, max_per_key=3) as sessions:
        tasks = [asyncio.create_task(sessions.open(A)) for _ in range(20)]
        await settle()
        assert sandbox.opening == 3
        sandbox.gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        opened = [r for r in results if not isinstance(r, BaseException)]
        codes = [r.code for r in results if isinstance(r, DomainError)]
        assert len(opened) == 3 and codes == ["session_quota"] * 17


async def test_an_unavailable_sandbox_is_503_and_frees_the_slot(
    sandbox: FakeSandbox, clock: FakeClock
) -> None:
    async with started(sandbox, clock, max_open=1) as sessions:
        sandbox.unavailable = True
        err = await refused(sessions.open(A))
        assert (err.kind, err.code, err.retry_after_s) == (ErrorKind.unavailable, "sandbox_unavailable", 5)
        sandbox.unavailable = False
        await sessions.open(A)  # the failed open did not keep the one slot
    no_sandbox = CodeSessions(SessionSettings(), None, max_open=4)
    err = await refused(no_sandbox.open(A))
    assert err.code == "sandbox_unavailable"
    off = CodeSessions(SessionSettings(enabled=False), sandbox.open_session, max_open=4)
    err = await refused(off.open(A))
    assert err.code == "sessions_disabled"


async def test_an_idle_session_is_reaped_after_its_ttl(
    sessions: CodeSessions, sandbox: FakeSandbox, clock: FakeClock
) -> None:
    short = await sessions.open(A, idle_ttl_s=10)
    default = await sessions.open(A)
    assert (short.idle_ttl_s, default.idle_ttl_s) == (10, 300)
    assert short.expires_at == short.created_at + 10
    clock.now += 9
    await sessions.run(A, short.id, "set x 1")  # use resets the idle clock
    clock.now += 9
    assert sessions.reap() == 0
    assert sessions.get(A, short.id).expires_at == short.created_at + 18 + 1
    clock.now += 1
    assert sessions.reap() == 1
    await settle()
    assert sandbox.sessions[0].closed and not sandbox.sessions[1].closed
    err = await refused(sessions.run(A, short.id, "get x"))
    assert err.kind is ErrorKind.not_found
    assert sessions.counters.expired == 1 and sessions.open_count == 1


async def test_a_session_ends_at_its_maximum_lifetime_however_used(
    sandbox: FakeSandbox, clock: FakeClock
) -> None:
    async with started(sandbox, clock, max_lifetime_s=100) as sessions:
        info = await sessions.open(A)
        assert info.expires_at == info.created_at + 100  # the lifetime comes before the idle TTL
        for _ in range(9):
            clock.now += 11
            await sessions.run(A, info.id, "print hi")  # never idle
        assert sessions.reap() == 0
        clock.now += 2  # 101 s after it opened
        err = await refused(sessions.run(A, info.id, "print hi"))  # refused even before the reaper
        assert err.kind is ErrorKind.not_found
        await settle()
        assert sandbox.sessions[0].closed and sessions.counters.expired == 1


async def test_a_session_with_a_call_running_is_not_reaped(
    sessions: CodeSessions, sandbox: FakeSandbox, clock: FakeClock
) -> None:
    info = await sessions.open(A, idle_ttl_s=5)
    call = asyncio.create_task(sessions.run(A, info.id, "wait"))
    await asyncio.wait_for(sandbox.sessions[0].started.wait(), within(5))
    clock.now += 60
    assert sessions.reap() == 0
    sandbox.sessions[0].release.set()
    outcome, _ = await call
    assert outcome.value == "'released'"
    assert sessions.reap() == 0  # the call's end counts as use
    clock.now += 5
    assert sessions.reap() == 1


async def test_calls_on_one_session_queue_in_order(sessions: CodeSessions, sandbox: FakeSandbox) -> None:
    info = await sessions.open(A)
    fake = sandbox.sessions[0]
    first = asyncio.create_task(sessions.run(A, info.id, "wait"))
    await asyncio.wait_for(fake.started.wait(), within(5))
    second = asyncio.create_task(sessions.run(A, info.id, "set y 2"))
    third = asyncio.create_task(sessions.run(A, info.id, "get y"))
    await settle()
    assert [code for code, _ in fake.runs] == ["wait"]  # the others wait their turn
    fake.release.set()
    results = await asyncio.gather(first, second, third)
    assert [call for _, call in results] == [1, 2, 3]
    assert results[2][0].value == "'2'"


async def test_more_waiting_calls_than_the_bound_are_409(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    info = await sessions.open(A)
    fake = sandbox.sessions[0]
    running = asyncio.create_task(sessions.run(A, info.id, "wait"))
    await asyncio.wait_for(fake.started.wait(), within(5))
    waiting = [asyncio.create_task(sessions.run(A, info.id, "print q")) for _ in range(MAX_WAITING_CALLS)]
    await settle()
    err = await refused(sessions.run(A, info.id, "print one too many"))
    assert (err.kind, err.code) == (ErrorKind.conflict, "session_busy")
    fake.release.set()
    await asyncio.gather(running, *waiting)
    assert sessions.get(A, info.id).calls == 1 + MAX_WAITING_CALLS


async def test_a_call_waits_at_most_the_sessions_call_time(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    info = await sessions.open(A, limits={"call_time_s": 0.05})
    fake = sandbox.sessions[0]
    running = asyncio.create_task(sessions.run(A, info.id, "wait"))
    await asyncio.wait_for(fake.started.wait(), within(5))
    err = await refused(sessions.run(A, info.id, "print late"))
    assert err.code == "session_busy"
    fake.release.set()
    await running
    outcome, call = await sessions.run(A, info.id, "print now")  # the lock was not leaked
    assert outcome.stdout == "now\n" and call == 2


async def test_a_lost_container_ends_the_session_with_503(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    info = await sessions.open(A)
    err = await refused(sessions.run(A, info.id, "lose"))
    assert (err.kind, err.code) == (ErrorKind.unavailable, "session_lost")
    assert err.detail["status"] == "error"
    err = await refused(sessions.run(A, info.id, "print again"))
    assert err.kind is ErrorKind.not_found
    assert sessions.counters.lost == 1 and sessions.counters.calls["lost"] == 1
    assert sessions.open_count == 0


async def test_an_unclean_end_returns_its_outcome_then_the_session_is_gone(
    sessions: CodeSessions, sandbox: FakeSandbox
) -> None:
    info = await sessions.open(A)
    outcome, _ = await sessions.run(A, info.id, "unclean")
    assert outcome.status == "killed" and outcome.restarted
    assert sessions.open_count == 0 and sessions.counters.lost == 1
    err = await refused(sessions.run(A, info.id, "print again"))
    assert err.kind is ErrorKind.not_found


async def test_restarts_are_counted(sessions: CodeSessions) -> None:
    info = await sessions.open(A)
    await sessions.run(A, info.id, "set x 1")
    outcome, _ = await sessions.run(A, info.id, "timeout")
    assert outcome.status == "timeout" and outcome.restarted
    outcome, _ = await sessions.run(A, info.id, "get x")
    assert outcome.status == "error" and "NameError" in (outcome.error or "")
    assert sessions.get(A, info.id).restarts == 1 and sessions.counters.restarts == 1
    assert dict(sessions.counters.calls) == {"ok": 1, "timeout": 1, "error": 1}


async def test_limits_and_ttl_over_their_caps_are_lowered_to_them(
    sandbox: FakeSandbox, clock: FakeClock
) -> None:
    caps = {"max_call_time_s": 20, "max_memory_mb": 256, "max_idle_ttl_s": 600, "max_open_files": 64}
    async with started(sandbox, clock, **caps) as sessions:
        asked = {
            "call_time_s": 30,
            "memory_mb": 1024,
            "output_bytes": 4096,
            "file_size_mb": 8,
            "open_files": 100,
        }
        info = await sessions.open(A, limits=asked, idle_ttl_s=3600)
        lim = info.limits
        assert (lim.call_time_s, lim.memory_mb, lim.output_bytes, info.idle_ttl_s) == (20, 256, 4096, 600)
        assert (lim.file_size_mb, lim.open_files) == (8, 64)
        assert sandbox.sessions[0].spec.limits == lim  # what the sandbox was asked for
        default = await sessions.open(A)
        assert (default.limits.call_time_s, default.limits.memory_mb) == (10.0, 256)  # default 512, capped
        with pytest.raises(InputError):
            await sessions.run(A, info.id, "print hi", time_s=0)
        await sessions.run(A, info.id, "print hi", time_s=100)
        assert sandbox.sessions[0].runs[-1] == ("print hi", 20)  # a call's time: at most the session's


@pytest.mark.parametrize(
    ("kwargs", "loc", "kind"),
    [
        ({"language": "ruby"}, ["body", "language"], "literal_error"),
        ({"limits": {"value_bytes": 1}}, ["body", "limits", "value_bytes"], "extra_forbidden"),
        ({"limits": {"memory_mb": 0}}, ["body", "limits", "memory_mb"], "greater_than"),
        ({"idle_ttl_s": 0.0}, ["body", "idle_ttl_s"], "greater_than"),
        ({"files": {"../etc/passwd": "x"}}, ["body", "files", "../etc/passwd"], "string_pattern_mismatch"),
        ({"files": {"/abs": "x"}}, ["body", "files", "/abs"], "string_pattern_mismatch"),
        ({"files": {"a/./b": "x"}}, ["body", "files", "a/./b"], "string_pattern_mismatch"),
        ({"files": {f"f{i}": "" for i in range(MAX_SESSION_FILES + 1)}}, ["body", "files"], "too_long"),
        ({"files": {"big": "x" * (MAX_SESSION_FILES_BYTES + 1)}}, ["body", "files"], "too_long"),
    ],
)
async def test_bad_open_requests_are_refused_before_any_container(
    sessions: CodeSessions, sandbox: FakeSandbox, kwargs: dict[str, Any], loc: list[str], kind: str
) -> None:
    with pytest.raises(InputError) as caught:
        await sessions.open(A, **kwargs)
    assert [(e["loc"], e["type"]) for e in caught.value.errors] == [(loc, kind)]
    assert sandbox.sessions == [] and sessions.counters.refused.total() == 0


async def test_files_reach_the_sandbox_as_bytes(sessions: CodeSessions, sandbox: FakeSandbox) -> None:
    await sessions.open(A, files={"data/in.txt": "héllo", "...": "dots are a name"})
    assert sandbox.sessions[0].spec.files == {"data/in.txt": "héllo".encode(), "...": b"dots are a name"}


async def test_code_over_its_size_is_refused(sandbox: FakeSandbox, clock: FakeClock) -> None:
    async with started(sandbox, clock, max_code_bytes=1024) as sessions:
        info = await sessions.open(A)
        with pytest.raises(InputError) as caught:
            await sessions.run(A, info.id, "print " + "é" * 510)  # 1026 bytes, 516 characters
        assert caught.value.errors[0]["type"] == "too_long"
        assert sandbox.sessions[0].runs == []
        await sessions.run(A, info.id, "print " + "x" * 1018)  # exactly 1024 bytes


async def test_stop_closes_every_session_and_refuses_new_ones(sandbox: FakeSandbox, clock: FakeClock) -> None:
    sessions = table(sandbox, clock)
    await sessions.start()
    infos = [await sessions.open(owner) for owner in (A, A, B)]
    running = asyncio.create_task(sessions.run(A, infos[0].id, "wait"))
    await asyncio.wait_for(sandbox.sessions[0].started.wait(), within(5))
    stopping = asyncio.create_task(sessions.stop())
    await settle()
    assert not stopping.done()  # the running call's session closes after that call
    sandbox.sessions[0].release.set()
    outcome, _ = await running
    assert outcome.status == "ok"
    await asyncio.wait_for(stopping, within(5))
    assert all(s.closed for s in sandbox.sessions) and sessions.counters.stopped == 3
    err = await refused(sessions.open(A))
    assert err.code == "sandbox_unavailable"


async def test_the_reaper_task_reaps_on_its_own(sandbox: FakeSandbox) -> None:
    sessions = CodeSessions(
        SessionSettings(idle_ttl_s=0.05), sandbox.open_session, max_open=2, reap_interval_s=0.01
    )
    await sessions.start()
    try:
        await sessions.open(A)
        for _ in range(int(within(200))):
            if sessions.open_count == 0 and sandbox.sessions[0].closed:
                break
            await asyncio.sleep(0.01)
        assert sessions.open_count == 0 and sandbox.sessions[0].closed
        assert sessions.counters.expired == 1
    finally:
        await sessions.stop()


def test_the_file_caps_are_held_to_the_containers_own_ulimits() -> None:
    """A kernel asking for more than its container allows could not start: the service's caps
    are lowered to the sandbox's ulimits (REFEREE_SANDBOX_OPEN_FILES, ..._FILE_SIZE_LIMIT_MB)."""
    settings = make_settings(
        workers=1,
        sandbox=False,
        sandbox_open_files=128,
        sandbox_file_size_limit_mb=16,
        sessions_max_open_files=1024,
        sessions_max_file_size_mb=8,
    )
    caps = Runtime(settings).code_sessions.settings
    assert (caps.max_open_files, caps.max_file_size_mb) == (128, 8)
