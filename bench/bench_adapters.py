"""Trainer adapters' overhead: one step's rewards (1024 prompts x 8 completions) through each
adapter, against calling `/v1/groups` directly with the same groups, in the same run.

    .venv/bin/python -m bench.bench_adapters [--prompts 1024] [--g 8] [--rounds 5]

Against `referee serve` in its own process (default settings). The workload is the math dev
set's responses (the `math` verifier), so the service's own work is realistic and identical
for every path. Target (issue 12): every adapter adds < 10% to the direct call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Callable

import httpx
from tests.data import devset

from bench._common import uvicorn_server
from referee.client import Client
from referee.grouping import Sample, group_samples
from referee.models import AdvantageConfig
from referee.trainer_adapter import verl
from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward


def workload(prompts: int, g: int) -> tuple[list[str], list[str], list[str]]:
    """Flat (prompt, completion, reference) lists: each prompt's reference with G dev-set responses."""
    rng = random.Random(0)
    rows = devset("math").rows
    flat_prompts, completions, references = [], [], []
    for i in range(prompts):
        gold = rng.choice(rows)["gold"]
        for _ in range(g):
            flat_prompts.append(f"prompt {i}")
            completions.append(rng.choice(rows)["response"])
            references.append(gold)
    return flat_prompts, completions, references


def timed(paths: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median wall per path; every round runs every path, in a rotated order (no path always
    runs first, or on a service warmed by the one before it)."""
    names = list(paths)
    for name in names:  # warm: connections, worker processes, caches
        paths[name]()
    walls: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            paths[name]()
            walls[name].append(time.perf_counter() - start)
    return {name: statistics.median(w) for name, w in walls.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=1024)
    parser.add_argument("--g", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    prompts, completions, references = workload(args.prompts, args.g)
    n = len(completions)
    with uvicorn_server(REFEREE_SANDBOX="false") as url:
        client = Client(url)
        specs, _ = group_samples(
            [Sample(c, r, "math", key=p) for p, c, r in zip(prompts, completions, references, strict=True)]
        )
        trl_sync = RefereeReward(url, verifier="math", reference_column="answer")
        trl_async = AsyncRefereeReward(url, verifier="math", reference_column="answer")
        sources = ["openai/gsm8k"] * n

        async def verl_async_step() -> list[object]:
            return list(
                await asyncio.gather(
                    *(
                        verl.compute_score_async("openai/gsm8k", c, r, {}, url=url)
                        for c, r in zip(completions, references, strict=True)
                    )
                )
            )

        loop = asyncio.new_event_loop()
        labels = [json.dumps({"verifier": "math", "reference": r}) for r in references]
        openrlhf = {"query": completions, "prompts": [""] * n, "labels": labels}
        paths: dict[str, Callable[[], object]] = {
            "direct /v1/groups (client)": lambda: client.score_groups(specs, AdvantageConfig()),
            "TRL RefereeReward": lambda: trl_sync(
                prompts=prompts, completions=completions, answer=references
            ),
            "TRL AsyncRefereeReward": lambda: loop.run_until_complete(
                trl_async(prompts=prompts, completions=completions, answer=references)
            ),
            "verl compute_score_batch": lambda: verl.compute_score_batch(
                sources, completions, references, url=url
            ),
            "verl compute_score_async (gathered)": lambda: loop.run_until_complete(verl_async_step()),
            "OpenRLHF route, whole batch": lambda: httpx.post(
                f"{url}/v1/openrlhf/reward", params={"verifier": "math"}, json=openrlhf, timeout=600
            ).raise_for_status(),
        }
        results = timed(paths, args.rounds)
        loop.close()
    base = results["direct /v1/groups (client)"]
    print(f"{args.prompts} prompts x {args.g} completions ({n} math verdicts), median of {args.rounds}")
    for name, seconds in results.items():
        print(f"{name:38} {seconds:7.3f} s  {seconds / base:5.2f}x direct  (target < 1.10x)")


if __name__ == "__main__":
    main()
