"""Code verification throughput at RL scale: the sandbox against unsandboxed host baselines,
all measured in the same run on the same cores.

    .venv/bin/python -m bench.bench_sandbox [--groups 12] [--tests 10] [--rounds 10]

Workload: groups of 16 programs x N trivial Python tests (read two ints, print the sum),
scored back to back through the warm pool (default settings: containers serve many programs,
Python tests fork from the in-container template).

Baselines, each with one worker per core:
  (a) every test a fresh `python3 -I -c PROGRAM` process on the host;
  (b) the physical limit: every test forked from a warm host interpreter that execs the
      program (no sandbox, no container, no judge).
Targets (issue 11): sustained >= 2x (a) and >= 0.3x (b); a single program's latency (its N
tests, one after the other) <= 2x (a)'s. Function-call tests (the harness) and C++ (compile
time apart) are reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import Pool
from typing import Any

from referee.sandbox.image import build_image
from referee.sandbox.pool import SandboxPool
from referee.sandbox.settings import SandboxSettings
from referee.verifiers.base import Resources
from referee.verifiers.code import CodeOptions, CodeVerifier

PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"


def distinct(program: str, comment: str) -> list[str]:
    """A group of GROUP different programs (a comment apart): identical programs of a group run
    once and share their verdict, which would measure nothing here."""
    return [f"{program}{comment} sample {i}\n" for i in range(GROUP)]


FUNCTION_PROGRAM = "def add(a, b):\n    return a + b\n"
CPP_PROGRAM = '#include <cstdio>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);}\n'
GROUP = 16
CORES = os.cpu_count() or 1


def reference(n: int, language: str = "python") -> dict[str, Any]:
    tests = [{"input": f"{i} 1\n", "output": f"{i + 1}\n"} for i in range(n)]
    return {"language": language, "tests": tests}


def function_reference(n: int) -> dict[str, Any]:
    tests = [{"fn_name": "add", "args": [i, 1], "expected": i + 1} for i in range(n)]
    return {"language": "python", "test_format": "function", "tests": tests}


# -- (a) a fresh host python3 per test ---------------------------------------------------------


def fresh_python(i: int) -> None:
    out = subprocess.run(
        ["/usr/bin/python3", "-I", "-c", PROGRAM],
        input=f"{i} 1\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == f"{i + 1}\n"


def baseline_fresh(n_tests: int) -> float:
    """Tests/s with one worker per core, each test a new interpreter."""
    with ThreadPoolExecutor(CORES) as pool:
        start = time.perf_counter()
        list(pool.map(fresh_python, range(n_tests)))
        return n_tests / (time.perf_counter() - start)


# -- (b) forked from a warm interpreter ----------------------------------------------------------

_CODE = compile(PROGRAM, "<program>", "exec")  # safe: the benchmark's own constant program


def forked_test(i: int) -> None:
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        exec(_CODE, {"__name__": "__main__"})  # safe: the benchmark's own constant program  # noqa: S102
        sys.stdout.flush()
        os._exit(0)
    os.close(stdin_r)
    os.close(out_w)
    os.write(stdin_w, f"{i} 1\n".encode())
    os.close(stdin_w)
    out = b""
    while chunk := os.read(out_r, 65536):
        out += chunk
    os.close(out_r)
    os.waitpid(pid, 0)
    assert out == f"{i + 1}\n".encode()


def _forked_batch(indices: list[int]) -> None:
    for i in indices:
        forked_test(i)


def baseline_forked(n_tests: int) -> float:
    """Tests/s with one warm worker process per core, each test a fork of it."""
    batches = [list(range(k, n_tests, CORES)) for k in range(CORES)]
    with Pool(CORES) as pool:
        pool.map(_forked_batch, [[0]] * CORES)  # warm the workers
        start = time.perf_counter()
        pool.map(_forked_batch, batches)
        return n_tests / (time.perf_counter() - start)


def single_program_fresh(n_tests: int, rounds: int) -> float:
    """(a)'s latency for one program: its tests one after the other, seconds (median)."""
    walls = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(n_tests):
            fresh_python(i)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


# -- the sandbox ---------------------------------------------------------------------------------


async def sandbox_figures(args: argparse.Namespace) -> dict[str, float]:
    verifier, opts = CodeVerifier(), CodeOptions()
    figures: dict[str, float] = {}
    pool = SandboxPool(SandboxSettings(instance="bench"))
    await pool.start()
    try:
        assert pool.health()[0], pool.health()
        resources = Resources(sandbox=pool)
        python = verifier.prepare(verifier.validate_reference(reference(args.tests)), opts)
        await pool.until_warm()
        # One program at a time: the latency a single response sees.
        walls = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            [check] = await verifier.check_group([PROGRAM], python, opts, resources)
            walls.append(time.perf_counter() - start)
            assert check.score == 1.0, check
        figures["single_s"] = statistics.median(walls)
        # Sustained: groups back to back, nothing waits in between.
        await pool.until_warm()
        reused_before = pool.stats["reused"]
        start = time.perf_counter()
        for _ in range(args.groups):
            checks = await verifier.check_group(distinct(PROGRAM, "#"), python, opts, resources)
            assert all(c.score == 1.0 for c in checks), checks[0]
        figures["sustained_tests_per_s"] = args.groups * GROUP * args.tests / (time.perf_counter() - start)
        figures["reused_share"] = (pool.stats["reused"] - reused_before) / (args.groups * GROUP)
        # Function-call tests (MBPP/LeetCode style: the harness calls the entry point): the
        # same sustained workload, 10 calls per program, each a test of its own.
        function = verifier.prepare(verifier.validate_reference(function_reference(args.tests)), opts)
        await pool.until_warm()
        start = time.perf_counter()
        for _ in range(args.function_groups):
            checks = await verifier.check_group(distinct(FUNCTION_PROGRAM, "#"), function, opts, resources)
            assert all(c.score == 1.0 for c in checks), checks[0]
        wall = time.perf_counter() - start
        figures["function_tests_per_s"] = args.function_groups * GROUP * args.tests / wall
        # C++: the same workload, compile time reported apart.
        cpp = verifier.prepare(verifier.validate_reference(reference(args.tests, "cpp")), opts)
        await pool.until_warm()
        compile_ms: list[float] = []
        start = time.perf_counter()
        for _ in range(args.cpp_groups):
            checks = await verifier.check_group(distinct(CPP_PROGRAM, "//"), cpp, opts, resources)
            assert all(c.score == 1.0 for c in checks), checks[0]
            compile_ms += [c.details["compile"]["time_ms"] for c in checks]
        wall = time.perf_counter() - start
        figures["cpp_tests_per_s"] = args.cpp_groups * GROUP * args.tests / wall
        figures["cpp_compile_ms"] = statistics.median(compile_ms)
        # Compiles run in parallel on every core: their share of the wall is sum / cores.
        run_wall = max(1e-9, wall - sum(compile_ms) / 1000 / min(CORES, pool.settings.max_parallel))
        figures["cpp_run_tests_per_s"] = args.cpp_groups * GROUP * args.tests / run_wall
    finally:
        await pool.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=12, help="Python groups of 16 programs, back to back")
    parser.add_argument("--function-groups", type=int, default=4, help="Python function-test groups")
    parser.add_argument("--cpp-groups", type=int, default=4, help="C++ groups of 16 programs")
    parser.add_argument("--tests", type=int, default=10, help="trivial tests per program")
    parser.add_argument("--rounds", type=int, default=10, help="single-program latency samples")
    args = parser.parse_args()
    build_image(SandboxSettings(instance="bench"), log=lambda _m: None)
    n = args.groups * GROUP * args.tests
    fresh = baseline_fresh(n)
    forked = baseline_forked(n)
    fresh_single = single_program_fresh(args.tests, args.rounds)
    box = asyncio.run(sandbox_figures(args))
    sustained = box["sustained_tests_per_s"]
    print(f"{CORES} cores; {args.groups} groups x {GROUP} programs x {args.tests} trivial Python tests")
    print(f"(a) host: fresh python3 per test          {fresh:7.0f} tests/s")
    print(f"(b) host: fork of a warm interpreter      {forked:7.0f} tests/s")
    print(f"sandbox, sustained groups back to back    {sustained:7.0f} tests/s")
    print(f"  ratio to (a)                            {sustained / fresh:7.2f}x  (target >= 2)")
    print(f"  ratio to (b)                            {sustained / forked:7.2f}x  (target >= 0.3)")
    print(f"  programs served by a reused container   {box['reused_share']:7.0%}")
    print(
        f"single program, {args.tests} tests one by one: sandbox {box['single_s'] * 1000:.0f} ms, "
        f"(a) {fresh_single * 1000:.0f} ms = {box['single_s'] / fresh_single:.2f}x  (target <= 2)"
    )
    print(
        f"Python function tests ({args.function_groups} groups, the harness calls the entry point): "
        f"{box['function_tests_per_s']:.0f} tests/s"
    )
    print(
        f"C++ {args.cpp_groups} groups: {box['cpp_tests_per_s']:.0f} tests/s with compiles, "
        f"{box['cpp_run_tests_per_s']:.0f} tests/s without; compile {box['cpp_compile_ms']:.0f} ms (median)"
    )


if __name__ == "__main__":
    main()
