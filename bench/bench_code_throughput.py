"""C++ and Java sustained throughput through the sandbox pool, against the same compiled program
run directly on the host, measured in the same run on the same cores.

    .venv/bin/python -m bench.bench_code_throughput [--tests 20] [--cpp 16] [--java 6] [--rounds 3]

Workload: a program that reads two integers and prints their sum, with `--tests` stdio tests,
submitted many times at once (the pool runs `max_parallel` of them, one per core). Three
sandbox cases per language:
  - the same program again, compile cache on: every submission after the first (which is run
    before the clock starts) gets its artifacts from the cache and compiles nothing;
  - the same program again, cache off (`compile_cache_bytes=0`): every submission compiles;
  - distinct programs (a comment apart), cache on: every compile is a miss, and its artifacts
    come back to the host for the cache (the cost of keeping them).
Host baseline: the sandbox's own artifact (`sol`, `main.jar`, taken from the compile cache) run
by subprocess per test, one worker per core, with the language's run command (the JVM given the
sandbox's memory): what the tests cost with no sandbox, no container and no judge, and no
compile at all. Every case and the baseline run once per round, interleaved; medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from referee.sandbox import LANGUAGES, Job, Limits, SandboxPool, TestInput
from referee.sandbox.compile_cache import CompiledProgram, compile_limits, program_key
from referee.sandbox.image import build_image
from referee.sandbox.protocol import Judgement, TestRun
from referee.sandbox.settings import SandboxSettings

CORES = os.cpu_count() or 1
PROGRAMS = {
    "cpp": '#include <cstdio>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);}\n',
    "java": (
        "public class Main { public static void main(String[] x) {"
        " java.util.Scanner s = new java.util.Scanner(System.in);"
        " System.out.println(s.nextLong() + s.nextLong()); } }\n"
    ),
}
COMMENT = "//"
LIMITS = Limits.from_settings(SandboxSettings())


@dataclass(frozen=True)
class Case:
    name: str
    cache: bool
    distinct: bool


CASES = (
    Case("one program again, compile cache on", cache=True, distinct=False),
    Case("one program again, compile cache off", cache=False, distinct=False),
    Case("distinct programs (every compile a miss)", cache=True, distinct=True),
)


def tests(n: int) -> tuple[TestInput, ...]:
    return tuple(TestInput(stdin=f"{i} {i * 3}\n".encode()) for i in range(n))


def expected(index: int) -> bytes:
    return f"{index * 4}\n".encode()


def judge(index: int, run: TestRun) -> Judgement:
    if run.status == "exited" and run.exit_code == 0 and run.stdout == expected(index):
        return "accepted", None
    return "wrong_answer", f"{run.status} {run.stdout[:40]!r} {run.stderr[-200:]!r}"


def job(language: str, source: str, n_tests: int) -> Job:
    return Job(LANGUAGES[language], "stdio", source.encode(), tests(n_tests), LIMITS, judge=judge)


# -- the host baseline ---------------------------------------------------------------------------


def host_command(language: str) -> list[str]:
    """The language's run command; the JVM is given the sandbox's memory (its heap is a share of
    it), not the host's, which would size its heap, and so its start, differently."""
    run = list(LANGUAGES[language].run)
    if run[0] == "java":
        run.insert(1, f"-XX:MaxRAM={SandboxSettings().container_memory_mb()}m")
    return run


def host_tests_per_s(language: str, program: CompiledProgram, n_tests: int, total: int) -> float:
    """The sandbox's artifacts in a temporary dir, each test a subprocess, one worker per core."""
    run = host_command(language)
    with tempfile.TemporaryDirectory() as workdir:
        for name, (data, mode) in program.files.items():
            path = Path(workdir, name)
            path.write_bytes(data)
            path.chmod(mode & 0o755)

        def one(i: int) -> None:
            index = i % n_tests
            out = subprocess.run(
                run, cwd=workdir, input=tests(n_tests)[index].stdin, capture_output=True, check=True
            )
            assert out.stdout == expected(index), out

        with ThreadPoolExecutor(CORES) as pool:
            list(pool.map(one, range(CORES)))  # warm the page cache and the threads
            start = time.perf_counter()
            list(pool.map(one, range(total)))
            return total / (time.perf_counter() - start)


# -- the sandbox ---------------------------------------------------------------------------------


async def started_pool(cache: bool) -> SandboxPool:
    pool = SandboxPool(
        SandboxSettings(
            instance=f"bench-code-{int(cache)}",
            pool_size=2 * CORES,
            compile_cache_bytes=(256 << 20) if cache else 0,
        )
    )
    await pool.start()
    assert pool.health()[0], pool.health()
    return pool


async def sandbox_round(
    pool: SandboxPool, language: str, sources: list[str], n_tests: int
) -> tuple[float, list[float]]:
    """(tests/s, compile times of the misses) of `sources` submitted at once."""
    await pool.until_warm()
    start = time.perf_counter()
    results = await asyncio.gather(*(pool.run(job(language, s, n_tests)) for s in sources))
    wall = time.perf_counter() - start
    for result in results:
        assert all(t is not None and t.verdict == ("accepted", None) for t in result.tests), result.tests[0]
    return len(sources) * n_tests / wall, [r.compile_time_s for r in results if not r.compile_cached]


async def measure(language: str, submissions: int, n_tests: int, rounds: int) -> None:
    """Every case and the host baseline once per round, interleaved (the node's load drifts);
    medians over the rounds."""
    source = PROGRAMS[language]
    pools = {True: await started_pool(cache=True), False: await started_pool(cache=False)}
    try:
        first = job(language, source, n_tests)
        await pools[True].run(first)  # the program's compile, before any clock starts
        await pools[False].run(first)  # the JVM's and the compiler's files into the page cache
        artifact = pools[True].compile_cache.get(program_key(first, pools[True].image), compile_limits(first))
        assert artifact is not None, "the compile cache kept no artifact to run on the host"
        host: list[float] = []
        rates: dict[str, list[float]] = {case.name: [] for case in CASES}
        compiles: dict[str, list[float]] = {case.name: [] for case in CASES}
        for r in range(rounds):
            host.append(
                await asyncio.to_thread(host_tests_per_s, language, artifact, n_tests, submissions * n_tests)
            )
            for case in CASES:
                sources = [
                    f"{source}{COMMENT} round {r} {i}\n" if case.distinct else source
                    for i in range(submissions)
                ]
                rate, times = await sandbox_round(pools[case.cache], language, sources, n_tests)
                rates[case.name].append(rate)
                compiles[case.name] += times
    finally:
        for pool in pools.values():
            await pool.close()
    base = statistics.median(host)
    load = os.getloadavg()[0]  # other work on the node skews every figure: say how much there was
    print(
        f"\n{language}: {submissions} submissions x {n_tests} stdio tests, {rounds} rounds, {CORES} cores, load {load:.1f}"
    )
    print(f"  host: the sandbox's artifact, subprocess per test   {base:8.1f} tests/s")
    for case in CASES:
        rate, times = statistics.median(rates[case.name]), compiles[case.name]
        compile_ms = (
            f"compile {statistics.median(times) * 1000:.0f} ms x {len(times)}" if times else "no compile"
        )
        print(f"  sandbox, {case.name:42s} {rate:8.1f} tests/s = {rate / base:5.2f}x host  ({compile_ms})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=20, help="stdio tests per submission")
    parser.add_argument("--cpp", type=int, default=16, help="C++ submissions per case")
    parser.add_argument("--java", type=int, default=6, help="Java submissions per case")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every case (medians)")
    args = parser.parse_args()
    build_image(SandboxSettings(), log=lambda _m: None)
    asyncio.run(measure("cpp", args.cpp, args.tests, args.rounds))
    asyncio.run(measure("java", args.java, args.tests, args.rounds))


if __name__ == "__main__":
    main()
