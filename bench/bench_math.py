"""Math verdicts: Referee's /v1/groups over HTTP versus Math-Verify 0.9.0 in one process.

Both score the same (gold, response) pairs: for every distinct gold of the development set, a
group of 16 responses (its own labelled responses, filled up with responses written for other
golds, as a GRPO group mixes right and wrong answers). Math-Verify parses each gold once per
group too (wrapped in \\boxed{}, its best mode) and runs in the main thread, where its SIGALRM
timeouts work.

    .venv/bin/pip install math-verify==0.9.0   # the `bench` extra
    .venv/bin/python -m bench.bench_math [--workers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from collections import defaultdict

import httpx
from tests.data import devset

from bench._common import emit, summarize, uvicorn_server

GROUP_SIZE = 16


def build_groups(seed: int = 0) -> list[tuple[str, list[str]]]:
    rows = devset("math").rows
    by_gold: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_gold[row["gold"]].append(row["response"])
    all_responses = [row["response"] for row in rows]
    rng = random.Random(seed)
    groups = []
    for gold, own in by_gold.items():
        fill = rng.sample(all_responses, GROUP_SIZE)
        groups.append((gold, (own + fill)[:GROUP_SIZE]))
    return groups


def run_math_verify(groups: list[tuple[str, list[str]]]) -> tuple[float, list[float]]:
    from math_verify import parse, verify

    per_verdict: list[float] = []
    start = time.perf_counter()
    for gold, responses in groups:
        t0 = time.perf_counter()
        parsed_gold = parse(f"\\boxed{{{gold}}}")
        gold_time = time.perf_counter() - t0
        for i, response in enumerate(responses):
            t1 = time.perf_counter()
            with contextlib.suppress(Exception):
                verify(parsed_gold, parse(response))
            per_verdict.append(time.perf_counter() - t1 + (gold_time if i == 0 else 0.0))
    return time.perf_counter() - start, per_verdict


def run_referee(
    url: str, groups: list[tuple[str, list[str]]], concurrency: int
) -> tuple[float, list[float], list[float]]:
    import asyncio

    per_group: list[float] = []
    per_verdict: list[float] = []

    async def one(client: httpx.AsyncClient, gold: str, responses: list[str]) -> None:
        body = {"groups": [{"verifier": "math", "reference": gold, "responses": responses}]}
        t0 = time.perf_counter()
        r = await client.post("/v1/groups", json=body)
        r.raise_for_status()
        per_group.append(time.perf_counter() - t0)
        per_verdict.extend(v["duration_ms"] / 1000 for v in r.json()["groups"][0]["verdicts"])

    async def main() -> float:
        async with httpx.AsyncClient(base_url=url, timeout=300) as client:
            semaphore = asyncio.Semaphore(concurrency)

            async def bounded(gold: str, responses: list[str]) -> None:
                async with semaphore:
                    await one(client, gold, responses)

            start = time.perf_counter()
            await asyncio.gather(*(bounded(g, rs) for g, rs in groups))
            return time.perf_counter() - start

    total = asyncio.run(main())
    return total, per_group, per_verdict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="groups in flight, as a trainer's batch")
    args = parser.parse_args()
    groups = build_groups()
    n = sum(len(r) for _, r in groups)
    with uvicorn_server(REFEREE_WORKERS=str(args.workers), REFEREE_SANDBOX="false") as url:
        # Warm-up: one pass of a few groups so worker imports are not measured.
        run_referee(url, groups[:4], args.concurrency)
        ref_total, ref_groups, ref_verdicts = run_referee(url, groups, args.concurrency)
    mv_total, mv_verdicts = run_math_verify(groups)
    emit(
        "math",
        {
            "groups": len(groups),
            "verdicts": n,
            "referee_http": {
                "verdicts_per_s": round(n / ref_total, 1),
                "group_latency": summarize(ref_groups),
                "verdict_check_time": summarize(ref_verdicts),
            },
            "math_verify_in_process": {
                "verdicts_per_s": round(n / mv_total, 1),
                "verdict_latency": summarize(mv_verdicts),
            },
            "throughput_ratio_referee_over_math_verify": round(mv_total / ref_total, 2),
        },
    )


if __name__ == "__main__":
    main()
