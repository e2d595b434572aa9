"""In-process throughput of the `math` verifier against Math-Verify 0.9.0 on the dev set.

Each labelled row (the dev set and the real-world answer patterns of
tests/data/math_patterns.jsonl, `--dev-only` for the dev set alone) becomes a GRPO-like group: its gold and 16 responses (the row's own response and
the next 15 rows' responses, cyclically), judged against that gold. Referee parses the gold once
per group (`prepare`) and checks each response; Math-Verify parses `\\boxed{gold}` once per group
(its best mode) and parses + verifies each response, in this one Python process.

    .venv/bin/python bench/bench_math_inprocess.py [--group-size 16] [--rounds 1] [--no-anchor]

Prints verdicts/s and per-check latency (median, p99, max) for both, and each one's accuracy on
the labelled rows (the row's own response in its group). Math-Verify is a bench-only extra
(`pip install -e .[bench]`); it is never imported by the service.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.data import DATA_DIR, devset

from referee.verifiers.math import MathVerifier

REPO = Path(__file__).resolve().parents[1]


def load_groups(group_size: int, dev_only: bool = False) -> list[tuple[dict[str, Any], list[str]]]:
    rows = devset("math").rows
    if not dev_only:
        patterns = (DATA_DIR / "math_patterns.jsonl").read_text("utf-8").splitlines()
        rows = rows + [json.loads(line) for line in patterns if line.strip()]
    groups = []
    for i, row in enumerate(rows):
        responses = [rows[(i + k) % len(rows)]["response"] for k in range(group_size)]
        groups.append((row, responses))
    return groups


def run(
    name: str,
    groups: list[tuple[dict[str, Any], list[str]]],
    prepare: Callable[[str], Any],
    check: Callable[[str, Any], bool],
    rounds: int,
) -> dict[str, float]:
    latencies: list[float] = []
    right = 0
    start = time.perf_counter()
    for _ in range(rounds):
        for row, responses in groups:
            t0 = time.perf_counter()
            prepared = prepare(row["gold"])
            prep_s = time.perf_counter() - t0
            for k, response in enumerate(responses):
                t1 = time.perf_counter()
                verdict = check(response, prepared)
                # The gold's parse is shared by the group: charge it to the group's checks.
                latencies.append(time.perf_counter() - t1 + prep_s / len(responses))
                if k == 0:
                    right += verdict == row["expected"]
    wall = time.perf_counter() - start
    latencies.sort()
    result = {
        "verdicts_per_s": len(latencies) / wall,
        "median_ms": statistics.median(latencies) * 1e3,
        "p99_ms": latencies[int(0.99 * len(latencies))] * 1e3,
        "max_ms": latencies[-1] * 1e3,
        "accuracy": right / (len(groups) * rounds),
    }
    print(
        f"{name:12s} {result['verdicts_per_s']:9.0f} verdicts/s   median {result['median_ms']:7.2f} ms   "
        f"p99 {result['p99_ms']:8.2f} ms   max {result['max_ms']:8.2f} ms   accuracy {result['accuracy']:.3f}"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-anchor", action="store_true", help="skip Math-Verify")
    parser.add_argument("--dev-only", action="store_true", help="the dev set without the pattern rows")
    args = parser.parse_args()
    groups = load_groups(args.group_size, args.dev_only)
    print(f"{len(groups)} groups x {args.group_size} responses, {args.rounds} round(s)")

    verifier = MathVerifier()
    options = verifier.validate_options({})
    ours = run(
        "referee",
        groups,
        lambda gold: verifier.prepare(verifier.validate_reference(gold), options),
        lambda response, prepared: verifier.check(response, prepared, options).score == 1.0,
        args.rounds,
    )
    if args.no_anchor:
        return
    from math_verify import parse, verify  # bench-only anchor

    anchor = run(
        "math-verify",
        groups,
        lambda gold: parse(f"\\boxed{{{gold}}}"),
        lambda response, gold: bool(verify(gold, parse(response))),
        args.rounds,
    )
    print(f"throughput ratio referee / math-verify: {ours['verdicts_per_s'] / anchor['verdicts_per_s']:.1f}x")


if __name__ == "__main__":
    main()
