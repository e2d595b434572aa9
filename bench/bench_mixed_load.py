"""Fair service under mixed load: math, logic and code groups from 64 concurrent clients.

    .venv/bin/python -m bench.bench_mixed_load [--clients 64] [--seconds 60]

Starts `referee serve` (default settings, Docker sandbox) and runs `--clients` clients for
`--seconds`, each sending /v1/groups requests of one class (client i sends class i mod 3):
16 math answers, 16 logic answers, or 16 Python programs with 5 tests each, all from the
labelled development sets. A 503 is retried after its Retry-After, as a trainer would.

Reported per class: groups served per second, latency p50/p99 of the attempt that was served
(its queueing and scoring), end-to-end p50/p99 including retries, 503 refusals, and errors
that retrying cannot fix (any other status, a client timeout, or a verdict with status
"error", i.e. no verdict). The target (issue 11): every class is served throughout, no
request waits beyond the queue bound plus its own scoring, and 0 non-retryable errors. Also
the resident memory of the service and its worker processes after a 10-s warm-up and after
the run: growth must stay within RSS_GROWTH_BOUND_MB (issue 14).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections import defaultdict
from typing import Any

import httpx
from tests.data import devset

from bench._common import tree_rss_mb, uvicorn_process

GROUP = 16
# What a 60-s run may add to the service's resident memory after a 10-s warm-up: bounded
# queues and caches, so anything beyond this is a leak.
RSS_GROWTH_BOUND_MB = 64
CLASSES = ("math", "logic", "code")


def request_bodies(seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """A few dozen distinct group bodies per class, built from the development sets."""
    rng = random.Random(seed)
    bodies: dict[str, list[dict[str, Any]]] = {}
    math_rows = devset("math").rows
    bodies["math"] = [
        {
            "verifier": "math",
            "reference": row["gold"],
            "responses": [r["response"] for r in rng.sample(math_rows, GROUP)],
        }
        for row in rng.sample(math_rows, 32)
    ]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in devset("logic").rows:
        by_task[row["task"]].append(row)
    bodies["logic"] = []
    for rows in by_task.values():
        for row in rows[:4]:
            responses = [rng.choice(rows)["response"] for _ in range(GROUP)]
            bodies["logic"].append(
                {"verifier": f"logic.{row['task']}", "reference": row["answer_spec"], "responses": responses}
            )
    code_rows = [
        r
        for r in devset("code").rows
        if r["language"] == "python"
        and r["test_format"] == "stdio"
        and isinstance(r["tests"], list)
        and (r["category"] in ("correct", "wrong_all") or r["category"].endswith("_partial"))
    ]
    bodies["code"] = []
    for row in code_rows[:32]:
        reference = {"language": "python", "tests": row["tests"][:5]}
        bodies["code"].append(
            # 16 distinct programs (a comment apart): identical ones would run once per group.
            {
                "verifier": "code",
                "reference": reference,
                "responses": [f"{row['candidate']}\n# sample {i}\n" for i in range(GROUP)],
            }
        )
    return bodies


async def client_loop(
    http: httpx.AsyncClient, kind: str, bodies: list[dict[str, Any]], until: float, stats: dict[str, Any]
) -> None:
    rng = random.Random(hash((kind, id(stats))))
    while time.monotonic() < until:
        body = {"groups": [rng.choice(bodies)]}
        first = time.monotonic()
        while True:
            attempt = time.monotonic()
            try:
                r = await http.post("/v1/groups", json=body)
            except httpx.TimeoutException:
                stats["fatal"].append("client timeout")
                break
            if r.status_code == 503:
                stats["refused"] += 1
                await asyncio.sleep(min(float(r.headers.get("Retry-After", "1")), 10.0))
                if time.monotonic() >= until:
                    break
                continue
            if r.status_code != 200:
                stats["fatal"].append(f"HTTP {r.status_code}: {r.text[:200]}")
                break
            now = time.monotonic()
            stats["served"].append(now - attempt)
            stats["end_to_end"].append(now - first)
            verdicts = r.json()["groups"][0]["verdicts"]
            stats["no_verdict"] += sum(v["status"] == "error" for v in verdicts)
            stats["finished_at"].append(now)
            break


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def run_load(url: str, clients: int, seconds: float) -> dict[str, dict[str, Any]]:
    bodies = request_bodies()
    stats = {
        kind: {"served": [], "end_to_end": [], "refused": 0, "fatal": [], "no_verdict": 0, "finished_at": []}
        for kind in CLASSES
    }
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        start = time.monotonic()
        until = start + seconds
        await asyncio.gather(
            *(
                client_loop(http, CLASSES[i % 3], bodies[CLASSES[i % 3]], until, stats[CLASSES[i % 3]])
                for i in range(clients)
            )
        )
        wall = time.monotonic() - start
        lanes = (await http.get("/readyz")).json()["lanes"]
    for s in stats.values():
        s["wall_s"] = wall
        s["lanes"] = lanes
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with uvicorn_process(REFEREE_SANDBOX_INSTANCE="bench-load") as (url, proc):
        time.sleep(5)  # the sandbox pool fills at start-up
        # A short warm-up first: worker processes import their verifiers, caches fill. Growth
        # is measured from there to the end of the measured run.
        asyncio.run(run_load(url, args.clients, min(10.0, args.seconds)))
        rss_before = tree_rss_mb(proc.pid)
        stats = asyncio.run(run_load(url, args.clients, args.seconds))
        rss_after = tree_rss_mb(proc.pid)
    print(f"{args.clients} clients for {args.seconds:g} s; groups of {GROUP}; 503s retried after Retry-After")
    print(
        f"{'class':6} {'groups/s':>8} {'p50 s':>7} {'p99 s':>7} {'e2e p50':>8} {'e2e p99':>8} {'503s':>6} {'fatal':>6} {'no verdict':>10}"
    )
    total_fatal = 0
    for kind in CLASSES:
        s = stats[kind]
        total_fatal += len(s["fatal"])
        print(
            f"{kind:6} {len(s['served']) / s['wall_s']:8.2f} {percentile(s['served'], 0.5):7.2f} "
            f"{percentile(s['served'], 0.99):7.2f} {percentile(s['end_to_end'], 0.5):8.2f} "
            f"{percentile(s['end_to_end'], 0.99):8.2f} {s['refused']:6d} {len(s['fatal']):6d} {s['no_verdict']:10d}"
        )
        for message in s["fatal"][:3]:
            print(f"  {kind} fatal: {message}")
    lanes = stats["math"]["lanes"]
    print(
        "lanes at the end:",
        {k: {"rate_per_s": v["rate_per_s"], "refused": v["refused"]} for k, v in lanes.items()},
    )
    print(f"non-retryable errors: {total_fatal}")
    growth = rss_after - rss_before
    print(
        f"service RSS (service + worker processes): {rss_before:.0f} MB after warm-up, "
        f"{rss_after:.0f} MB after the run ({growth:+.0f} MB; bound {RSS_GROWTH_BOUND_MB} MB: "
        f"{'ok' if growth <= RSS_GROWTH_BOUND_MB else 'EXCEEDED'})"
    )
    print(
        "median served latency per class:",
        {k: round(statistics.median(stats[k]["served"]), 2) for k in CLASSES if stats[k]["served"]},
    )


if __name__ == "__main__":
    main()
