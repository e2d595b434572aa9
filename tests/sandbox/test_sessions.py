"""Code sessions in real containers: state kept within a session, nothing across sessions.

A session pins one container and keeps a kernel alive in it (sandbox/session.py). The reuse
tests (test_reuse.py) plant every trace a program can leave and look for it from the next
program; here the same traces are planted from a session's cells and looked for from the next
session in the same container, and a hostile session tries to break the container for it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from referee.sandbox import (
    SandboxPool,
    SandboxSession,
    SandboxUnavailable,
    SessionClosed,
    SessionLimits,
    SessionSpec,
)
from referee.sandbox.in_container.supervisor import CANDIDATE_UID_BASE
from tests.sandbox.helpers import make_sandbox_settings
from tests.sandbox.test_reuse import ATTACK, ATTACK_REFUSED, LOOK, PLANT, job

pytestmark = pytest.mark.docker


async def look(session: SandboxSession) -> dict:  # type: ignore[type-arg]
    out = await session.run(LOOK)
    assert out.status == "ok", out
    seen: dict = json.loads(out.stdout)  # type: ignore[type-arg]
    return seen


@pytest.fixture
async def one_slot(sandbox_image: str) -> AsyncIterator[SandboxPool]:
    """One warm container, so that consecutive sessions (and programs) share it."""
    pool = SandboxPool(make_sandbox_settings(pool_size=1, max_parallel=1))
    await pool.start()
    assert await pool.until_warm(1)
    try:
        yield pool
    finally:
        await pool.close()


async def test_state_is_kept_across_100_calls(one_slot: SandboxPool) -> None:
    session = await one_slot.open_session(SessionSpec(files={"data/input.txt": b"7\n"}))
    first = await session.run(
        "import math\nn = int(open('data/input.txt').read())\ndef grow(k):\n    return k + 1\n"
        "open('notes.txt', 'w').write('kept')\nn"
    )
    assert (first.status, first.value) == ("ok", "7"), first
    for i in range(100):
        out = await session.run("n = grow(n)\nprint(n)\nmath.sqrt(n * n)")
        assert (out.status, out.stdout, out.value) == ("ok", f"{8 + i}\n", f"{8.0 + i}"), out
    last = await session.run("open('notes.txt').read(), _")
    assert last.value == "('kept', 107.0)"  # `_` is the last value shown, as in a notebook
    assert session.calls == 102 and session.restarts == 0
    await session.close()
    with pytest.raises(SessionClosed):
        await session.run("n")


async def test_a_bash_session_keeps_its_shell_between_calls(one_slot: SandboxPool) -> None:
    """Variables, functions, the working directory and the environment persist; a failing
    command is an `error` with its status; stdin is empty (a cell never reads the session's
    own requests); `exit` costs the shell, not the session, and the files stay."""
    session = await one_slot.open_session(SessionSpec(language="bash", files={"in.txt": b"3 4\n"}))
    first = await session.run(
        "read a b < in.txt\nmkdir -p sub && cd sub\nexport SEEN=yes\nadd() { echo $(( $1 + $2 )); }"
    )
    assert first.status == "ok", first
    for i in range(20):
        out = await session.run(f"a=$(( a + 1 ))\nadd $a {i}")
        assert (out.status, out.stdout) == ("ok", f"{4 + i + i}\n"), out
    where = await session.run("pwd; echo $SEEN; bash -c 'echo $SEEN'; cat; echo left >&2")
    assert (where.status, where.stdout, where.stderr) == ("ok", "/work/sub\nyes\nyes\n", "left\n"), where
    failed = await session.run("ls /no/such/dir")
    assert failed.status == "error" and failed.error == "exit status 2" and "No such file" in failed.stderr
    ended = await session.run("echo bye; exit 3")
    assert ended.status == "error" and "exit status 3" in (ended.error or "") and ended.stdout == "bye\n"
    fresh = await session.run("echo ${a:-unset}; pwd; cat in.txt; b=kept; sleep 1000 &")
    assert (fresh.status, fresh.stdout) == ("ok", "unset\n/work\n3 4\n"), fresh
    slow = await session.run("echo $b; sleep 30", time_s=1)
    assert (slow.status, slow.stdout, slow.restarted) == ("timeout", "kept\n", True), slow
    # A new shell: the old one's variables and processes (the background sleep) are gone.
    after = await session.run("echo ${b:-gone}; cat /proc/[0-9]*/comm | grep -c '^sleep$'; cat in.txt")
    assert (after.status, after.stdout) == ("ok", "gone\n0\n3 4\n"), after
    await session.close()


async def test_nothing_a_session_plants_is_seen_by_the_next_session(
    one_slot: SandboxPool, escape_check: None
) -> None:
    first = await one_slot.open_session(SessionSpec())
    baseline = await look(first)
    planted = await first.run(PLANT + "secret = 'first session'\n")
    assert planted.stdout.split() == ["True", "True", "True"], planted
    await first.close()
    assert await one_slot.until_warm(1)  # scrubbed and back

    second = await one_slot.open_session(SessionSpec())
    after = await look(second)
    assert second.container.id == first.container.id  # the same container served both
    assert after["uid"] != baseline["uid"] and after["uid"] > CANDIDATE_UID_BASE
    for key in ("tmp", "work", "shm", "msg", "sem", "others", "nofile", "env"):
        assert after[key] == baseline[key], key
    assert after["tmp"] == [] and after["work"] == [] and after["others"] == []
    gone = await second.run("secret")
    assert gone.status == "error" and "NameError" in (gone.error or "")
    await second.close()


async def test_a_hostile_session_cannot_break_the_container_for_the_next(
    one_slot: SandboxPool, escape_check: None
) -> None:
    hostile = await one_slot.open_session(SessionSpec(limits=SessionLimits(call_time_s=3.0)))
    attack = await hostile.run(ATTACK)
    assert json.loads(attack.stdout) == ATTACK_REFUSED
    # Replies forged on the kernel's reply pipe (without the call's random tag) are not taken.
    forged = await hostile.run(
        "import os\nfor n in range(40):\n"
        '    os.write(4, (\'{"call": %d, "status": "ok", "value": "forged"}\\n\' % n).encode())\n'
        "'real'"
    )
    assert forged.value == "'real'", forged
    assert (await hostile.run("1 + 1")).value == "2"
    # A fork bomb runs out of its time; closing the reply pipe loses the kernel, not the session.
    bomb = await hostile.run(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    )
    assert bomb.status == "timeout" and bomb.restarted
    closed = await hostile.run("import os; os.close(4)")
    assert closed.status == "killed" and closed.restarted
    assert (await hostile.run("2 + 2")).value == "4"
    await hostile.close()
    assert await one_slot.until_warm(1)

    after = await one_slot.open_session(SessionSpec())
    assert after.container.id == hostile.container.id
    seen = await look(after)
    assert seen["others"] == [] and seen["tmp"] == [] and seen["work"] == []
    assert (await after.run("sum(range(10))")).value == "45"
    await after.close()
    # And the container still judges programs as if nothing happened.
    reused = one_slot.stats["reused"]
    result = await one_slot.run(job(one_slot, "print('still fine')"))
    [run] = result.tests
    assert run is not None and run.stdout == b"still fine\n"
    assert one_slot.stats["reused"] == reused + 1


async def test_a_lost_kernel_restarts_with_the_files_kept(one_slot: SandboxPool) -> None:
    session = await one_slot.open_session(SessionSpec(limits=SessionLimits(call_time_s=1.0, memory_mb=64)))
    await session.run("x = 1\nopen('keep.txt', 'w').write('still here')")
    slow = await session.run("import time\ntime.sleep(30)")
    assert (slow.status, slow.restarted) == ("timeout", True)
    assert 1.0 <= slow.duration_s < 5.0
    assert "NameError" in ((await session.run("x")).error or "")
    assert (await session.run("open('keep.txt').read()")).value == "'still here'"
    hog = await session.run("blocks = [bytearray(1 << 20) for _ in range(512)]")
    assert (hog.status, hog.restarted) == ("memory_limit_exceeded", True), hog
    died = await session.run("import os; os._exit(3)")
    assert (died.status, died.restarted) == ("killed", True)
    assert (await session.run("'alive'")).value == "'alive'"
    assert session.restarts == 3
    await session.close()


async def test_output_is_capped_per_call_and_errors_are_tracebacks(one_slot: SandboxPool) -> None:
    session = await one_slot.open_session(
        SessionSpec(limits=SessionLimits(output_bytes=1000, value_bytes=100))
    )
    loud = await session.run("import sys\nprint('x' * 100_000)\nsys.stderr.write('e' * 5000)\n'v' * 1000")
    assert loud.status == "ok" and loud.truncated
    assert loud.stdout == "x" * 1000 and loud.stderr == "e" * 1000 and loud.value == "'" + "v" * 99
    failed = await session.run("def f():\n    raise ValueError('bad input')\nf()")
    assert failed.status == "error" and failed.value is None
    assert failed.error is not None and "ValueError: bad input" in failed.error
    assert "session_kernel" not in failed.error  # the cell's frames only
    exited = await session.run("raise SystemExit(2)")
    assert exited.status == "error" and not exited.restarted  # a cell cannot end its session
    assert (await session.run("input()")).status == "error"  # stdin is empty: EOFError
    await session.close()


async def test_the_session_cpu_budget_survives_restarts(one_slot: SandboxPool) -> None:
    limits = SessionLimits(call_time_s=8.0, session_cpu_s=1.0)
    session = await one_slot.open_session(SessionSpec(limits=limits))
    spin = await session.run("while True:\n    pass")
    assert spin.status == "killed" and spin.restarted  # RLIMIT_CPU ended the kernel
    after = await session.run("1")
    assert after.status == "killed" and "CPU time is used up" in (after.error or "")
    await session.close()


@pytest.mark.slow
async def test_64_sessions_at_once_with_the_pool_bounded(sandbox_image: str) -> None:
    pool = SandboxPool(make_sandbox_settings(pool_size=2, max_parallel=2, max_sessions=64))
    await pool.start()
    try:
        sessions = await asyncio.gather(*(pool.open_session(SessionSpec()) for _ in range(64)))
        assert pool.sessions_open == 64
        assert len({s.container.id for s in sessions}) == 64
        with pytest.raises(SandboxUnavailable, match="session slot"):
            await pool.open_session(SessionSpec())
        # Each keeps its own state while all are open, and scoring still gets containers.
        await asyncio.gather(*(s.run(f"mine = {i}") for i, s in enumerate(sessions)))
        values = await asyncio.gather(*(s.run("mine") for s in sessions))
        assert [v.value for v in values] == [str(i) for i in range(64)]
        assert pool.containers <= pool.max_containers
        result = await pool.run(job(pool, "print(6 * 7)"))
        assert result.tests[0] is not None and result.tests[0].stdout == b"42\n"
        await asyncio.gather(*(s.close() for s in sessions))
        assert pool.sessions_open == 0
        assert await pool.until_warm(2)
        assert pool.warm <= pool.settings.pool_size  # the returned containers do not pile up
    finally:
        await pool.close()


async def test_sessions_closing_while_a_program_runs_leave_the_pool_bounded(sandbox_image: str) -> None:
    """Sessions handing their containers back while a program runs fill the warm set (the pool
    refilled behind them): the program's container, scrubbed after theirs, then makes room too."""
    pool = SandboxPool(make_sandbox_settings(pool_size=2, max_parallel=2, max_sessions=4))
    await pool.start()
    try:
        for _ in range(2):
            sessions = await asyncio.gather(*(pool.open_session(SessionSpec()) for _ in range(3)))
            assert await pool.until_warm(2)

            async def close_all(sessions: list[SandboxSession]) -> None:
                await asyncio.sleep(0.3)  # the program is running by then
                await asyncio.gather(*(s.close() for s in sessions))

            source = "import time\ntime.sleep(1.5)\nprint(6 * 7)\n"
            result, _ = await asyncio.gather(pool.run(job(pool, source)), close_all(sessions))
            assert result.tests[0] is not None and result.tests[0].stdout == b"42\n"
            assert await pool.until_warm(2)
            assert pool.warm == 2 and pool.containers <= pool.max_containers
    finally:
        await pool.close()
