"""Logic verdicts per task through /v1/groups (groups of 16) next to reasoning-gym's scorers.

For each task, every dev row becomes a group: its own response plus 15 responses written for
other puzzles of the same task (a GRPO group mixes right and wrong answers). The anchor,
reasoning-gym's own scorers in process, runs from its own environment (never in .venv):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install reasoning-gym
    .venv/bin/python -m bench.bench_logic [--anchor-python .venv-bench/bin/python]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import httpx
from tests.data import devset

from bench._common import REPO, emit, summarize, uvicorn_server

GROUP_SIZE = 16


def build_groups(seed: int = 0) -> dict[str, list[dict]]:
    rows = devset("logic").rows
    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[row["task"]].append(row)
    rng = random.Random(seed)
    groups: dict[str, list[dict]] = {}
    for task, task_rows in by_task.items():
        pool = [r["response"] for r in task_rows]
        groups[task] = [
            {
                "verifier": f"logic.{task}",
                "reference": row["answer_spec"],
                "responses": [row["response"], *rng.choices(pool, k=GROUP_SIZE - 1)],
            }
            for row in task_rows
        ]
    return groups


async def run_task(url: str, groups: list[dict], concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    semaphore = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:

        async def one(group: dict) -> None:
            async with semaphore:
                t0 = time.perf_counter()
                r = await client.post("/v1/groups", json={"groups": [group]})
                r.raise_for_status()
                latencies.append(time.perf_counter() - t0)

        start = time.perf_counter()
        await asyncio.gather(*(one(g) for g in groups))
        return time.perf_counter() - start, latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="passes over each task's groups")
    parser.add_argument("--anchor-python", type=Path, default=REPO / ".venv-bench" / "bin" / "python")
    args = parser.parse_args()
    groups = build_groups()
    results: dict[str, dict] = {}
    with uvicorn_server(REFEREE_WORKERS=str(args.workers), REFEREE_SANDBOX="false") as url:
        asyncio.run(run_task(url, [g for gs in groups.values() for g in gs][:20], args.concurrency))
        for task, task_groups in sorted(groups.items()):
            work = task_groups * args.rounds
            total, latencies = asyncio.run(run_task(url, work, args.concurrency))
            verdicts = len(work) * GROUP_SIZE
            results[task] = {
                "referee_verdicts_per_s": round(verdicts / total, 1),
                "referee_group_p99_ms": summarize(latencies)["p99_ms"],
            }
    anchor = None
    if args.anchor_python.exists():
        out = subprocess.run(
            [str(args.anchor_python), str(REPO / "bench" / "bench_logic_anchor.py")],
            capture_output=True,
            text=True,
            check=True,
        )
        anchor = json.loads(out.stdout)
        for task, info in anchor["tasks"].items():
            results.setdefault(task, {}).update(
                {
                    "reasoning_gym_verdicts_per_s": info.get("verdicts_per_s"),
                    "reasoning_gym_p99_ms": info.get("p99_ms"),
                    "reasoning_gym_agreement": info.get("agreement"),
                    "reasoning_gym_timeouts": len(info.get("timeouts", [])),
                }
            )
    emit(
        "logic",
        {
            "group_size": GROUP_SIZE,
            "workers": args.workers,
            "tasks": results,
            "reasoning_gym_overall": anchor["overall"] if anchor else "not run (.venv-bench missing)",
        },
    )


if __name__ == "__main__":
    main()
