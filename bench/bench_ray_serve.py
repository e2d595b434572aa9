"""Referee on Ray Serve next to plain `referee serve`, in one run on this machine: math
`/v1/groups` throughput (groups of 16 development-set responses) and the per-request overhead of
Serve's HTTP proxy and of the `DeploymentHandle` path (`RayGroupRewarder`).

    .venv/bin/python -m bench.bench_ray_serve [--seconds 8] [--concurrency 8]

Configurations: plain `referee serve` with 1 and 2 workers; Ray Serve with 1 replica × 1
worker and 2 replicas × 1 worker (the same CPU as the plain service's 1 and 2 workers), over
the proxy and over a handle. Overhead: median latency of a cheap request (an `exact` group of 16)
sent one at a time, minus the plain service's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from tests.data import devset

from bench._common import emit, free_port, summarize, uvicorn_server
from referee.models import GroupSpec

GROUP_SIZE = 16


def math_groups() -> list[dict[str, Any]]:
    rows = devset("math").rows
    groups = []
    for start in range(0, len(rows) - GROUP_SIZE + 1, 4):
        chunk = rows[start : start + GROUP_SIZE]
        groups.append(
            {"verifier": "math", "reference": chunk[0]["gold"], "responses": [r["response"] for r in chunk]}
        )
    return groups


CHEAP = {"verifier": "exact", "reference": "42", "responses": ["42", "41"] * (GROUP_SIZE // 2)}


async def closed_loop(
    send: Callable[[dict[str, Any]], Awaitable[object]],
    groups: list[dict[str, Any]],
    seconds: float,
    concurrency: int,
) -> dict[str, float]:
    """`concurrency` senders, each sending one group per request, for `seconds` (after a warm-up)."""
    await asyncio.gather(*[send(g) for g in groups[:concurrency]])
    done = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()

    async def loop(i: int) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await send(groups[(i + done * concurrency) % len(groups)])
            done += 1

    await asyncio.gather(*[loop(i) for i in range(concurrency)])
    elapsed = time.perf_counter() - start
    return {
        "groups_per_s": round(done / elapsed, 1),
        "responses_per_s": round(done * GROUP_SIZE / elapsed, 1),
    }


async def http_throughput(
    url: str, groups: list[dict[str, Any]], seconds: float, concurrency: int
) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:

        async def send(group: dict[str, Any]) -> None:
            (await client.post("/v1/groups", json={"groups": [group]})).raise_for_status()

        return await closed_loop(send, groups, seconds, concurrency)


async def handle_throughput(
    rewarder: Any, groups: list[dict[str, Any]], seconds: float, concurrency: int
) -> dict[str, float]:
    async def send(group: dict[str, Any]) -> None:
        await rewarder.score_results([GroupSpec.model_validate(group)])

    return await closed_loop(send, groups, seconds, concurrency)


def http_latency(url: str, n: int) -> list[float]:
    times = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(-20, n):
            start = time.perf_counter()
            client.post("/v1/groups", json={"groups": [CHEAP]}).raise_for_status()
            if i >= 0:
                times.append(time.perf_counter() - start)
    return times


async def handle_latency(rewarder: Any, n: int) -> list[float]:
    spec = [GroupSpec.model_validate(CHEAP)]
    times = []
    for i in range(-20, n):
        start = time.perf_counter()
        await rewarder.score_results(spec)
        if i >= 0:
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-requests", type=int, default=200)
    args = parser.parse_args()
    groups = math_groups()
    result: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "group_size": GROUP_SIZE,
        "concurrency": args.concurrency,
    }
    throughput: dict[str, Any] = {}
    latency: dict[str, Any] = {}

    base_env = {"REFEREE_SANDBOX": "false"}
    for workers in (1, 2):
        with uvicorn_server(REFEREE_WORKERS=str(workers), **base_env) as url:
            throughput[f"plain_workers{workers}"] = asyncio.run(
                http_throughput(url, groups, args.seconds, args.concurrency)
            )
            if workers == 1:
                latency["plain"] = summarize(http_latency(url, args.latency_requests))

    from ray import serve

    from referee.deploy import RayGroupRewarder, run
    from referee.deploy.proxy import CALLBACK_ENV, CALLBACK_PATH
    from referee.deploy.ray_serve import RayConnection
    from referee.settings import Settings

    os.environ[CALLBACK_ENV] = CALLBACK_PATH
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # A loopback cluster whose every process is reaped at the end, as `referee serve --ray`'s.
    connection = RayConnection(
        Settings().ray, include_dashboard=False, num_cpus=os.cpu_count(), log_to_driver=False
    )
    connection.start()
    try:
        for replicas in (1, 2):
            ray_shape = {"replicas": replicas, "num_cpus": 0.5, "http_host": "127.0.0.1", "http_port": port}
            handle = run(Settings(ray=ray_shape, workers=1, sandbox=False, log_level="warning"))
            deadline = time.monotonic() + 120
            while (
                serve.status().applications["referee"].deployments["Referee"].replica_states.get("RUNNING", 0)
                != replicas
            ):
                assert time.monotonic() < deadline, "replicas did not start"
                time.sleep(0.5)
            rewarder = RayGroupRewarder(handle)
            throughput[f"ray_proxy_replicas{replicas}"] = asyncio.run(
                http_throughput(url, groups, args.seconds, args.concurrency)
            )
            throughput[f"ray_handle_replicas{replicas}"] = asyncio.run(
                handle_throughput(rewarder, groups, args.seconds, args.concurrency)
            )
            if replicas == 1:
                latency["ray_proxy"] = summarize(http_latency(url, args.latency_requests))
                latency["ray_handle"] = summarize(
                    asyncio.run(handle_latency(rewarder, args.latency_requests))
                )
    finally:
        connection.close()

    plain = latency["plain"]["median_ms"]
    result["throughput"] = throughput
    result["latency_cheap_group"] = latency
    result["overhead_ms_vs_plain"] = {
        "proxy": round(latency["ray_proxy"]["median_ms"] - plain, 3),
        "handle": round(latency["ray_handle"]["median_ms"] - plain, 3),
    }
    result["scaling"] = {
        "plain_2_over_1_workers": round(
            throughput["plain_workers2"]["groups_per_s"] / throughput["plain_workers1"]["groups_per_s"], 2
        ),
        "ray_proxy_2_over_1_replicas": round(
            throughput["ray_proxy_replicas2"]["groups_per_s"]
            / throughput["ray_proxy_replicas1"]["groups_per_s"],
            2,
        ),
        "ray_handle_2_over_1_replicas": round(
            throughput["ray_handle_replicas2"]["groups_per_s"]
            / throughput["ray_handle_replicas1"]["groups_per_s"],
            2,
        ),
    }
    result["ratio_ray1_over_plain1"] = round(
        statistics.mean(
            [
                throughput["ray_proxy_replicas1"]["groups_per_s"],
                throughput["ray_handle_replicas1"]["groups_per_s"],
            ]
        )
        / throughput["plain_workers1"]["groups_per_s"],
        2,
    )
    emit("ray_serve", result)


if __name__ == "__main__":
    main()
