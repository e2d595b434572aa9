"""Per-test overhead of the warm sandbox pool vs a cold hardened `docker run` and a host
`python3 -c`, measured in the same run on trivial tests, plus group throughput.

    .venv/bin/python -m bench.bench_sandbox [--tests 10] [--cold 10] [--host 50] [--rounds 8]

Targets (issue 4): warm pool >= 10x faster per test than (a) cold docker run, within 2x of
(b) host python3 -c, and >= 100 trivial tests/s on this 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
from typing import Any

from referee.sandbox.hardening import container_create_kwargs
from referee.sandbox.image import build_image
from referee.sandbox.pool import SandboxPool
from referee.sandbox.settings import SandboxSettings
from referee.verifiers.code import CodeOptions, CodeVerifier

PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"


def reference(n: int) -> dict[str, Any]:
    return {"language": "python", "tests": [{"input": f"{i} 1\n", "output": f"{i + 1}\n"} for i in range(n)]}


def host_python(n: int) -> float:
    times = []
    for i in range(n):
        t = time.perf_counter()
        out = subprocess.run(
            ["/usr/bin/python3", "-c", PROGRAM], input=f"{i} 1\n", capture_output=True, text=True
        )
        times.append(time.perf_counter() - t)
        assert out.stdout == f"{i + 1}\n"
    return statistics.median(times)


def cold_docker(settings: SandboxSettings, image: str, n: int) -> float:
    """create + start + wait + logs + remove of a container hardened like the pool's, per test."""
    import docker

    client = docker.from_env()
    api = client.api
    kwargs = container_create_kwargs(api, settings, image)
    kwargs["host_config"]["LogConfig"] = {"Type": "json-file", "Config": {}}  # to read the output
    kwargs.update(stdin_open=False, command=["python3", "-c", "print(41 + 1)"])
    times = []
    for _ in range(n):
        t = time.perf_counter()
        cid = api.create_container(**kwargs)["Id"]
        api.start(cid)
        api.wait(cid)
        out = api.logs(cid, stdout=True, stderr=False)
        api.remove_container(cid, force=True)
        times.append(time.perf_counter() - t)
        assert out == b"42\n", out
    client.close()
    return statistics.median(times)


async def wait_warm(pool: SandboxPool, n: int) -> None:
    while len(pool._warm) < n or pool._starting:
        await asyncio.sleep(0.02)


async def warm_pool(args: argparse.Namespace) -> dict[str, float]:
    verifier, opts = CodeVerifier(), CodeOptions()
    results: dict[str, float] = {}
    pool = SandboxPool(SandboxSettings(instance="bench", pool_size=16))
    await pool.start()
    try:
        assert pool.health()[0], pool.health()
        prepared = verifier.prepare(verifier.validate_reference(reference(args.tests)), opts)
        per_test, in_container = [], []
        for _ in range(args.rounds):
            await wait_warm(pool, 16)
            t = time.perf_counter()
            [check] = await verifier.check_group([PROGRAM], prepared, opts, {"sandbox": pool})
            per_test.append((time.perf_counter() - t) / args.tests)
            assert check.score == 1.0, check
            in_container += [x["time_ms"] / 1000 for x in check.details["tests"]]
        results["warm_per_test_s"] = statistics.median(per_test)
        results["in_container_per_test_s"] = statistics.median(in_container)
        # A GRPO group: 16 programs x N tests, with 16 warm containers ready.
        await wait_warm(pool, 16)
        t = time.perf_counter()
        checks = await verifier.check_group([PROGRAM] * 16, prepared, opts, {"sandbox": pool})
        results["group_burst_s"] = time.perf_counter() - t
        assert all(c.score == 1.0 for c in checks)
    finally:
        await pool.close()
    # Sustained: 4 groups back to back with the default pool size (containers churn).
    pool = SandboxPool(SandboxSettings(instance="bench"))
    await pool.start()
    try:
        await wait_warm(pool, pool.settings.pool_size)
        t = time.perf_counter()
        for _ in range(4):
            checks = await verifier.check_group([PROGRAM] * 16, prepared, opts, {"sandbox": pool})
            assert all(c.score == 1.0 for c in checks)
        results["group_sustained_s"] = (time.perf_counter() - t) / 4
    finally:
        await pool.close()
    return results


def groups_over_http(tests: int, rounds: int, pause_s: float) -> list[float]:
    """`/v1/groups` with 16 programs x `tests` tests against `referee serve` (default sandbox
    settings), one group per round with `pause_s` between rounds: in RL the trainer generates
    the next batch meanwhile, and the pool refills its containers."""
    import httpx

    from bench._common import uvicorn_server

    group = {"verifier": "code", "reference": reference(tests), "responses": [PROGRAM] * 16}
    walls = []
    with uvicorn_server(REFEREE_WORKERS="2", REFEREE_SANDBOX_INSTANCE="bench-http") as url:
        time.sleep(pause_s)  # the pool fills at start-up
        with httpx.Client(base_url=url, timeout=300) as client:
            for _ in range(rounds):
                t = time.perf_counter()
                r = client.post("/v1/groups", json={"groups": [group]})
                walls.append(time.perf_counter() - t)
                verdicts = r.json()["groups"][0]["verdicts"]
                assert all(v["score"] == 1.0 for v in verdicts), verdicts[0]
                time.sleep(pause_s)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=10, help="trivial tests per program")
    parser.add_argument("--cold", type=int, default=10, help="cold docker runs")
    parser.add_argument("--host", type=int, default=50, help="host python3 -c runs")
    parser.add_argument("--rounds", type=int, default=8, help="warm-pool submissions")
    parser.add_argument("--http-rounds", type=int, default=5, help="/v1/groups requests")
    parser.add_argument("--pause", type=float, default=5.0, help="seconds between /v1/groups requests")
    args = parser.parse_args()
    settings = SandboxSettings(instance="bench")
    image = build_image(settings, log=lambda _m: None)
    host = host_python(args.host)
    cold = cold_docker(settings, image, args.cold)
    warm = asyncio.run(warm_pool(args))
    http = statistics.median(groups_over_http(args.tests, args.http_rounds, args.pause))
    per_test = warm["warm_per_test_s"]
    n = 16 * args.tests
    print(f"image {image}; trivial python test; {args.tests} tests per program")
    print(f"(b) host /usr/bin/python3 -c per test      {host * 1000:7.1f} ms (median of {args.host})")
    print(f"(a) cold hardened docker run per test      {cold * 1000:7.1f} ms (median of {args.cold})")
    print(f"warm pool per test (submission wall / N)   {per_test * 1000:7.1f} ms (median of {args.rounds})")
    print(f"  of which the test process in the sandbox {warm['in_container_per_test_s'] * 1000:7.1f} ms")
    print(f"speed-up vs cold docker run                {cold / per_test:7.1f}x   (target >= 10x)")
    print(f"ratio to host python3 -c                   {per_test / host:7.2f}x   (target <= 2x)")
    print(
        f"group 16 x {args.tests}, 16 warm containers         {warm['group_burst_s']:7.2f} s = "
        f"{n / warm['group_burst_s']:.0f} tests/s (target >= 100)"
    )
    print(
        f"group 16 x {args.tests}, sustained, pool_size=4     {warm['group_sustained_s']:7.2f} s = "
        f"{n / warm['group_sustained_s']:.0f} tests/s (container churn: one per program)"
    )
    print(
        f"/v1/groups 16 x {args.tests} over HTTP, default pool  {http:7.2f} s = "
        f"{n / http:.0f} tests/s (median of {args.http_rounds}, {args.pause:g} s apart)"
    )


if __name__ == "__main__":
    main()
