"""The compile cache (sandbox/compile_cache.py): a program submitted again is not compiled again,
and gets the same verdicts; another program is compiled; a diagnosed compile error is kept,
a compile the limits may have failed is not; the bound evicts the least recently used.

The LRU and the supervisor's half (what it returns, what it loads) are tested without Docker;
the rest through a real pool (`docker` marker)."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest

from referee.sandbox import LANGUAGES, Job, Limits, SandboxPool, TestInput
from referee.sandbox.compile_cache import (
    ENTRY_OVERHEAD_BYTES,
    CompileCache,
    CompiledProgram,
    compile_limits,
    program_key,
)
from referee.sandbox.in_container import supervisor
from referee.sandbox.protocol import Judgement, RunResult, TestRun
from tests.sandbox.helpers import (
    docker_client,
    labelled_containers,
    make_sandbox_settings,
    sandbox_uid_processes,
)
from tests.timing import wait_until_async

LIMITS = Limits(time_s=2.0, memory_mb=256, stdout_bytes=1 << 20, stderr_bytes=4096, compile_timeout_s=20.0)
SUMS = [(i, i + i % 2) for i in range(6)]  # odd sums at odd i
TESTS = tuple(TestInput(stdin=f"{a} {b}\n".encode()) for a, b in SUMS)

CPP = '#include <bits/stdc++.h>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<"\\n";}\n'
# Right on even sums only: a cached binary must give exactly the verdicts the compiled one gave.
CPP_HALF_RIGHT = (
    '#include <cstdio>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",(a+b)%2?0:a+b);}\n'
)
CPP_BROKEN = "int main() { return missing_name; }\n"
JAVA = (
    "public class Main { public static void main(String[] x) {"
    " java.util.Scanner s = new java.util.Scanner(System.in);"
    " System.out.println(s.nextLong() + s.nextLong()); } }\n"
)


def expected_sum(index: int, run: TestRun) -> Judgement:
    a, b = SUMS[index]
    if run.status != "exited" or run.exit_code != 0:
        return "runtime_error", run.status
    return ("accepted", None) if run.stdout == f"{a + b}\n".encode() else ("wrong_answer", None)


def job(language: str, source: str, tests: tuple[TestInput, ...] = TESTS) -> Job:
    return Job(LANGUAGES[language], "stdio", source.encode(), tests, LIMITS, judge=expected_sum)


def verdicts(result: RunResult) -> list[Judgement | None]:
    return [t.verdict if t is not None else None for t in result.tests]


def entry(size: int, *, ok: bool = True) -> CompiledProgram:
    """An entry of exactly `size` bytes as the cache counts them."""
    files = {"sol": (b"x" * (size - ENTRY_OVERHEAD_BYTES), 0o755)}
    return CompiledProgram(ok=ok, output="", files=files, code=None, failed_under=None)


# -- the LRU, without Docker ---------------------------------------------------------------------


def test_the_bound_evicts_the_least_recently_used() -> None:
    cache = CompileCache(max_bytes=3000)
    limits = compile_limits(job("cpp", CPP))
    cache.put("a", entry(1000))
    cache.put("b", entry(1000))
    cache.put("c", entry(1000))
    assert cache.get("a", limits) is not None  # a is now the most recently used
    cache.put("d", entry(1000))
    assert cache.get("b", limits) is None  # b was the least recently used
    assert all(cache.get(k, limits) is not None for k in "acd")
    assert cache.bytes == 3000 and cache.stats["evicted"] == 1
    cache.put("a", entry(2000))  # replacing an entry counts its new size only
    assert cache.bytes <= 3000 and cache.get("a", limits) is not None


def test_an_entry_larger_than_the_bound_is_not_kept() -> None:
    cache = CompileCache(max_bytes=1000)
    cache.put("big", entry(1001))
    assert len(cache) == 0 and cache.bytes == 0


def test_a_compile_error_is_served_only_under_the_limits_it_failed_under() -> None:
    cache = CompileCache(max_bytes=1 << 20)
    limits = compile_limits(job("java", JAVA))
    failure = CompiledProgram(ok=False, output="error", files={}, code=None, failed_under=limits)
    cache.put("k", failure)
    assert cache.get("k", limits) is failure
    assert cache.get("k", (limits[0], limits[1] * 2, limits[2], limits[3])) is None  # javac's heap


def test_the_key_holds_everything_that_shapes_the_artifacts() -> None:
    base = program_key(job("cpp", CPP), "img:1")
    assert program_key(job("cpp", CPP), "img:1") == base
    assert program_key(job("cpp", CPP + " "), "img:1") != base  # one byte of source
    assert program_key(job("cpp", CPP), "img:2") != base  # another image (compilers, flags)
    assert program_key(job("c", CPP), "img:1") != base  # another command
    # The tests and limits do not shape a compile: the same program for another problem hits.
    assert program_key(job("cpp", CPP, TESTS[:1]), "img:1") == base


def test_a_disabled_cache_sees_no_job() -> None:
    assert CompileCache(max_bytes=0).for_job(job("cpp", CPP), "img") is None


# -- the supervisor's half, without Docker -------------------------------------------------------

REQ = {"artifacts": ["sol"], "compile_timeout_s": 10.0, "memory_mb": 256, "return_compiled_bytes": 1 << 20}


def compiler_result(**facts: Any) -> dict[str, Any]:
    return {
        "status": "exited",
        "exit_code": 1,
        "oom": False,
        "time_s": 0.5,
        "max_rss_kb": 50_000,
        "tree_peak_kb": None,
    } | facts


def test_the_supervisor_returns_artifacts_and_diagnosed_errors_only() -> None:
    files = {"sol.cpp": (b"src", 0o644), "sol": (b"\x7fELF", 0o755)}
    ok = supervisor.compiled_program(REQ, files, None, compiler_result(exit_code=0), True)
    assert ok == {"files": {"sol": [base64.b64encode(b"\x7fELF").decode(), 0o755]}, "code": None}
    assert supervisor.compiled_program(REQ, files, None, compiler_result(), False) == {
        "files": {},
        "code": None,
    }
    for limit_may_have_failed_it in (
        {"status": "timeout"},
        {"status": "signaled", "exit_code": None},
        {"oom": True},
        {"time_s": 6.0},  # past half its time: a busier node might not finish it
        {"max_rss_kb": 300 << 10},
    ):
        assert (
            supervisor.compiled_program(REQ, files, None, compiler_result(**limit_may_have_failed_it), False)
            is None
        )
    over = REQ | {"return_compiled_bytes": 3}
    assert supervisor.compiled_program(over, files, None, compiler_result(exit_code=0), True) is None


def test_the_supervisor_loads_only_the_languages_artifacts_and_no_setuid_bit() -> None:
    program = {
        "ok": True,
        "output": "",
        "files": {"sol": [base64.b64encode(b"bin").decode(), 0o4755], "../evil": ["", 0o755]},
        "code": base64.b64encode(b"marshalled").decode(),
    }
    files: dict[str, tuple[bytes, int]] = {}
    compiled, code_fd = supervisor.load_precompiled(
        REQ | {"precompiled": program}, files, {"type": "compiled"}
    )
    try:
        assert compiled["cached"] and compiled["ok"]
        assert files == {"sol": (b"bin", 0o755)}
        assert code_fd is not None and os.pread(code_fd, 100, 0) == b"marshalled"
        with pytest.raises(OSError):
            os.pwrite(code_fd, b"changed", 0)  # sealed: no test can change it
        assert not stat.S_IMODE(files["sol"][1]) & stat.S_ISUID
    finally:
        if code_fd is not None:
            os.close(code_fd)


# -- through a real pool -------------------------------------------------------------------------


@asynccontextmanager
async def started_pool(**settings: object) -> AsyncIterator[SandboxPool]:
    """A pool of one container (programs one after the other, unless `settings` say otherwise)."""
    pool = SandboxPool(make_sandbox_settings(**{"pool_size": 1, "max_parallel": 1, **settings}))
    await pool.start()
    try:
        yield pool
    finally:
        await pool.close()


@pytest.mark.docker
@pytest.mark.parametrize(("language", "source"), [("cpp", CPP_HALF_RIGHT), ("java", JAVA)])
async def test_a_second_submission_is_not_compiled_and_gets_the_same_verdicts(
    sandbox_pool: SandboxPool, language: str, source: str
) -> None:
    first = await sandbox_pool.run(job(language, source))
    assert first.compile_ok and not first.compile_cached and first.compile_time_s > 0
    second = await sandbox_pool.run(job(language, source))
    assert second.compile_ok and second.compile_cached and second.compile_time_s == 0
    assert verdicts(second) == verdicts(first)
    assert {v for v, _ in filter(None, verdicts(first))} == (
        {"accepted", "wrong_answer"} if source == CPP_HALF_RIGHT else {"accepted"}
    )
    assert sandbox_pool.compile_cache.stats["hits"] == 1 and sandbox_pool.compile_cache.stats["misses"] == 1


def honest_programs() -> dict[str, str]:
    """Each compiled language's a+b program, from the languages' own hostile sets."""
    from tests.sandbox import test_languages, test_languages_more

    programs = {p.language: p.honest for p in (*test_languages.PROGRAMS, *test_languages_more.PROGRAMS)}
    c = '#include <stdio.h>\nint main(void){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);return 0;}\n'
    return {"c": c, "cpp": CPP, "java": JAVA, **programs}


@pytest.mark.docker
@pytest.mark.parametrize("language", [name for name, lang in LANGUAGES.items() if lang.artifacts])
async def test_every_language_with_artifacts_compiles_a_program_once(
    sandbox_pool: SandboxPool, language: str
) -> None:
    source = honest_programs()[language]
    first = await sandbox_pool.run(job(language, source))
    assert first.compile_ok and not first.compile_cached, first.compile_output
    second = await sandbox_pool.run(job(language, source))
    assert second.compile_cached and second.compile_time_s == 0
    assert verdicts(second) == verdicts(first) == [("accepted", None)] * len(TESTS)


@pytest.mark.docker
async def test_another_program_is_compiled(sandbox_pool: SandboxPool) -> None:
    await sandbox_pool.run(job("cpp", CPP))
    other = await sandbox_pool.run(job("cpp", CPP + "// another program\n"))
    assert not other.compile_cached and other.compile_time_s > 0
    assert all(v == ("accepted", None) for v in verdicts(other))


@pytest.mark.docker
async def test_a_compile_error_is_kept_and_served_again(sandbox_pool: SandboxPool) -> None:
    first = await sandbox_pool.run(job("cpp", CPP_BROKEN))
    assert not first.compile_ok and not first.compile_cached
    assert "missing_name" in first.compile_output
    second = await sandbox_pool.run(job("cpp", CPP_BROKEN))
    assert not second.compile_ok and second.compile_cached and second.compile_time_s == 0
    assert second.compile_output == first.compile_output
    assert second.tests == [None] * len(TESTS)  # nothing ran, as after the compile itself


@pytest.mark.docker
async def test_a_python_program_gets_its_compiled_code_from_the_cache(sandbox_pool: SandboxPool) -> None:
    source = "a, b = map(int, input().split())\nprint(a + b)\n"
    await sandbox_pool.run(job("python", source))
    second = await sandbox_pool.run(job("python", source))
    assert second.compile_cached and all(v == ("accepted", None) for v in verdicts(second))


@pytest.mark.docker
async def test_the_cache_is_off_with_zero_bytes(sandbox_image: str) -> None:
    async with started_pool(compile_cache_bytes=0) as pool:
        await pool.run(job("cpp", CPP))
        second = await pool.run(job("cpp", CPP))
        assert not second.compile_cached and second.compile_time_s > 0


@pytest.mark.docker
async def test_the_byte_bound_evicts_the_least_recently_used_program(sandbox_image: str) -> None:
    # A small C++ binary is ~16 KB: room for two, not three.
    async with started_pool(compile_cache_bytes=45_000) as pool:
        programs = [CPP + f"// program {i}\n" for i in range(3)]
        await pool.run(job("cpp", programs[0]))
        assert 15_000 < pool.compile_cache.bytes < 22_500, "the binary's size this test assumes"
        await pool.run(job("cpp", programs[1]))
        assert (await pool.run(job("cpp", programs[0]))).compile_cached  # 0 is now the recent one
        await pool.run(job("cpp", programs[2]))  # evicts 1
        assert pool.compile_cache.stats["evicted"] == 1 and pool.compile_cache.bytes <= 45_000
        assert (await pool.run(job("cpp", programs[0]))).compile_cached
        assert not (await pool.run(job("cpp", programs[1]))).compile_cached


# Sleeps on its second test, long enough for the test to kill its container meanwhile.
CPP_SLOW_SECOND = (
    "#include <cstdio>\n#include <unistd.h>\n"
    'int main(){long a,b;scanf("%ld %ld",&a,&b);if(a==1)sleep(3);printf("%ld\\n",a+b);}\n'
)


@pytest.mark.docker
async def test_tests_moved_to_another_container_are_not_compiled_again(sandbox_image: str) -> None:
    """The engine kills the container mid-run: the remaining tests go to a new container, which
    gets the program from the cache (stored when the first one compiled it)."""
    async with started_pool(pool_size=2, max_parallel=1) as pool:
        patient = replace(job("cpp", CPP_SLOW_SECOND), limits=replace(LIMITS, time_s=10.0))
        run = asyncio.create_task(pool.run(patient))
        await wait_until_async(lambda: pool.compile_cache.stats["stored"] == 1, 60, what="the compile")
        await asyncio.sleep(0.5)  # the first test takes milliseconds: this is the second's sleep
        ours = set(labelled_containers())  # other runs' programs may be running on this engine
        [cid] = {c for c in sandbox_uid_processes().values() if c in ours}
        client = docker_client()
        try:
            await asyncio.to_thread(client.api.kill, cid)
        finally:
            client.close()
        result = await run
        assert result.containers == 2 and result.compile_cached
        assert all(v == ("accepted", None) for v in verdicts(result))
        assert pool.compile_cache.stats == {"hits": 0, "misses": 1, "stored": 1, "evicted": 0}
