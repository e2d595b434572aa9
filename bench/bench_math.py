"""Math verdicts: Referee versus Math-Verify 0.9.0, accuracy and speed, in one run.

Accuracy: every labelled row of the expanded dev set (tests/data/math_dev.jsonl and the
real-world answer patterns of tests/data/math_patterns.jsonl), judged in process by both, split
into positives (expected TRUE) and near-miss negatives (expected FALSE); a negative scored 1 is a
false positive. Math-Verify parses `\\boxed{gold}` (its best mode) and runs in the main thread,
where its SIGALRM timeouts work.

Speed: Referee's /v1/groups over HTTP versus Math-Verify in one process.

Both score the same (gold, response) pairs: for every distinct gold of the development set, a
group of 16 responses (its own labelled responses, filled up with responses written for other
golds, as a GRPO group mixes right and wrong answers). Math-Verify parses each gold once per
group too (wrapped in \\boxed{}, its best mode) and runs in the main thread, where its SIGALRM
timeouts work.

    .venv/bin/pip install math-verify==0.9.0   # the `bench` extra
    .venv/bin/python -m bench.bench_math [--workers 2] [--accuracy-only]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import httpx
from tests.data import DATA_DIR, devset

from bench._common import emit, summarize, uvicorn_server
from referee.verifiers.math import MathVerifier

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


def expanded_rows() -> list[dict[str, Any]]:
    """The labelled rows: the dev set, then the real-world answer patterns."""
    patterns = (DATA_DIR / "math_patterns.jsonl").read_text("utf-8").splitlines()
    rows = [{**row, "set": "math_dev"} for row in devset("math").rows]
    return rows + [{**json.loads(line), "set": "math_patterns"} for line in patterns if line.strip()]


def _judge(name: str, rows: list[dict[str, Any]], says_equal: Callable[[str, str], bool]) -> dict[str, Any]:
    tally: Counter[str] = Counter()
    false_positives: list[str] = []
    latencies: list[float] = []
    for row in rows:
        t0 = time.perf_counter()
        got = says_equal(row["response"], row["gold"])
        latencies.append(time.perf_counter() - t0)
        kind = "positives" if row["expected"] else "negatives"
        tally[f"{row['set']}/{kind}"] += 1
        tally[f"{row['set']}/{kind}/right"] += got == row["expected"]
        if got and not row["expected"]:
            false_positives.append(row["id"])
    out: dict[str, Any] = {}
    for subset in ("math_dev", "math_patterns"):
        for kind in ("positives", "negatives"):
            key = f"{subset}/{kind}"
            out[key] = f"{tally[key + '/right']}/{tally[key]}"
    right = sum(v for k, v in tally.items() if k.endswith("/right"))
    out["accuracy"] = round(right / len(rows), 4)
    out["false_positives"] = len(false_positives)
    out["false_positive_ids"] = false_positives[:40]
    out["latency"] = summarize(latencies)
    print(f"{name:12s} accuracy {out['accuracy']:.4f}  false positives {len(false_positives)}  {out}")
    return out


def accuracy() -> dict[str, Any]:
    """Both verifiers on every labelled row, positives and near-miss negatives apart."""
    rows = expanded_rows()
    verifier = MathVerifier()
    ours = _judge("referee", rows, lambda response, gold: verifier.score(response, gold).score == 1.0)
    from math_verify import parse, verify  # bench-only anchor

    def math_verify_equal(response: str, gold: str) -> bool:
        with contextlib.suppress(Exception):
            return bool(verify(parse(f"\\boxed{{{gold}}}"), parse(response)))
        return False

    anchor = _judge("math-verify", rows, math_verify_equal)
    return {"rows": len(rows), "referee": ours, "math_verify_0_9_0": anchor}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="groups in flight, as a trainer's batch")
    parser.add_argument("--accuracy-only", action="store_true", help="skip the HTTP throughput part")
    args = parser.parse_args()
    emit("math_accuracy", accuracy())
    if args.accuracy_only:
        return
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
