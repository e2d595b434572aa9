"""What statistics cost: `/v1/groups` throughput with statistics on (every group names its
prompt) against the same service with `REFEREE_STATS=false`, both real `referee serve`
processes driven in alternating rounds (so machine noise hits both alike); plus the tracker's
own cost per group in-process and its memory per prompt record (the stated bound).

    .venv/bin/python -m bench.bench_stats_overhead [--rounds 12] [--requests 40]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
import tracemalloc

import httpx

from bench._common import emit, uvicorn_server
from referee.models import Verdict, VerdictStatus
from referee.stats import Statistics

GROUP_SIZE = 16
GROUPS_PER_REQUEST = 8
PROMPTS = 5000  # distinct prompt ids cycled through: records are created, then revisited


def body(i: int) -> dict[str, object]:
    groups = []
    for g in range(GROUPS_PER_REQUEST):
        n = i * GROUPS_PER_REQUEST + g
        reference = f"answer-{n % 50}"
        responses = [reference if j % 3 == 0 else f"answer-{j}" for j in range(GROUP_SIZE)]
        groups.append(
            {
                "verifier": "exact",
                "reference": reference,
                "responses": responses,
                "prompt_id": f"row-{n % PROMPTS}",
            }
        )
    return {"groups": groups}


def round_rate(client: httpx.Client, start: int, requests: int) -> float:
    """Groups per second over `requests` sequential requests."""
    began = time.perf_counter()
    for i in range(start, start + requests):
        client.post("/v1/groups", json=body(i)).raise_for_status()
    return requests * GROUPS_PER_REQUEST / (time.perf_counter() - began)


def in_process(groups: int) -> dict[str, float]:
    """Tracker cost of one group (16 verdicts observed, one prompt visit), in microseconds."""
    stats = Statistics()
    verdict = Verdict(score=1.0, status=VerdictStatus.ok, verifier="exact@1", duration_ms=0.4)
    rewards: list[float | None] = [1.0, 0.0] * (GROUP_SIZE // 2)
    began = time.perf_counter()
    for n in range(groups):
        for _ in range(GROUP_SIZE):
            stats.observe_verdict(verdict, "exact")
        stats.record_visit("key:bench", f"row-{n % PROMPTS}", rewards)
    return {"us_per_group": round((time.perf_counter() - began) / groups * 1e6, 2)}


def bytes_per_prompt(prompts: int) -> int:
    gc.collect()
    tracemalloc.start()
    stats = Statistics(max_prompts=prompts)
    before = tracemalloc.get_traced_memory()[0]
    for n in range(prompts):
        stats.record_visit("key:0123456789abcdef", f"dataset-row-{n:08d}", [1.0, 0.0])
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return round(used / prompts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--requests", type=int, default=40, help="Requests per round and service.")
    args = parser.parse_args()
    common = {"REFEREE_WORKERS": "1", "REFEREE_SANDBOX": "false"}
    with tempfile.TemporaryDirectory() as tmp:
        with (
            uvicorn_server(**common, REFEREE_STATS="true", REFEREE_DB_PATH=f"{tmp}/on.db") as on_url,
            uvicorn_server(**common, REFEREE_STATS="false", REFEREE_DB_PATH=f"{tmp}/off.db") as off_url,
            httpx.Client(base_url=on_url, timeout=60) as on,
            httpx.Client(base_url=off_url, timeout=60) as off,
        ):
            round_rate(on, 0, 10), round_rate(off, 0, 10)  # warm-up
            ratios, on_rates, off_rates = [], [], []
            for r in range(args.rounds):
                start = (r + 1) * args.requests
                # Alternate which goes first, so a slow phase of the machine is shared.
                if r % 2:
                    off_rate, on_rate = (
                        round_rate(off, start, args.requests),
                        round_rate(on, start, args.requests),
                    )
                else:
                    on_rate, off_rate = (
                        round_rate(on, start, args.requests),
                        round_rate(off, start, args.requests),
                    )
                on_rates.append(on_rate)
                off_rates.append(off_rate)
                ratios.append(off_rate / on_rate)
            tracked = httpx.get(f"{on_url}/v1/stats/prompts", params={"limit": 0}).json()["tracked"]
    tracker = in_process(20_000)
    off_median = statistics.median(off_rates)
    emit(
        "stats_overhead",
        {
            "group_size": GROUP_SIZE,
            "groups_per_request": GROUPS_PER_REQUEST,
            "rounds": args.rounds,
            "groups_per_s_stats_on": round(statistics.median(on_rates), 1),
            "groups_per_s_stats_off": round(statistics.median(off_rates), 1),
            "slowdown_median_off_over_on": round(statistics.median(ratios), 3),
            "slowdown_per_round": [round(x, 3) for x in ratios],
            "prompts_tracked": tracked,
            "tracker_in_process": tracker,
            # The tracker's work as a share of a group's time in the service without it: the
            # overhead free of the machine's noise (the HTTP ratio above carries that noise).
            "tracker_share_of_group_time": round(tracker["us_per_group"] * 1e-6 * off_median, 4),
            "bytes_per_prompt_record": bytes_per_prompt(100_000),
        },
    )


if __name__ == "__main__":
    main()
