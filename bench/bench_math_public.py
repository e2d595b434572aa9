"""Math verdicts on material we did not write: public math graders' own test suites.

`tests/data/math_public_graders.jsonl` holds (gold, response, expected) triples harvested from
the test suites of huggingface/Math-Verify, hendrycks/math, QwenLM/Qwen2.5-Math and
volcengine/verl (each row names its repository, path, commit and licence). Where an upstream
test compares extracted answers rather than whole responses, the row's `form` is `answer` and
its response is that answer in a `\\boxed{}`; a gold that upstream extracts from a solution text
is stored as the extracted answer (the row's note says so). `expected` follows
`tests/data/MATH_POLICY.md`; where the upstream label differs (`upstream_expected`), the row's
note names the policy rule and the row is counted apart as a policy row.

Both verifiers judge every row in one run: Referee in process, Math-Verify 0.9.0 in the main
thread (its SIGALRM timeouts work there) with the gold wrapped in `\\boxed{}`, its best mode.
False positives are listed first.

    .venv/bin/python -m bench.bench_math_public [--file PATH | --all] [--json]

`--file` picks one harvest (default the first, `math_public_graders.jsonl`); `--all` judges every
harvest, one after the other, each with its own figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.data import DATA_DIR

from bench._common import emit, summarize
from referee.verifiers.math import MathVerifier

PUBLIC_FILE = DATA_DIR / "math_public_graders.jsonl"
# Issue 25's second harvest: MARIO_EVAL, NeMo-Skills, lighteval, open-r1, latex2sympy2_extended.
PUBLIC_FILES = (PUBLIC_FILE, DATA_DIR / "math_public_graders_2.jsonl")


def public_rows(path: Path = PUBLIC_FILE) -> list[dict[str, Any]]:
    lines = path.read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def judge(rows: list[dict[str, Any]], says_equal: Callable[[str, str], bool]) -> dict[str, Any]:
    """Agreement with `expected`, overall, per source and on policy rows; misses by kind."""
    tally: Counter[str] = Counter()
    false_positives: list[str] = []
    false_negatives: list[str] = []
    latencies: list[float] = []
    for row in rows:
        t0 = time.perf_counter()
        got = int(says_equal(row["response"], row["gold"]))
        latencies.append(time.perf_counter() - t0)
        right = got == row["expected"]
        policy = row["expected"] != row["upstream_expected"]
        for key in ("all", row["source"], "policy" if policy else "upstream_agrees"):
            tally[key] += 1
            tally[key + " right"] += right
        if got and not row["expected"]:
            false_positives.append(row["id"])
        elif row["expected"] and not got:
            false_negatives.append(row["id"])
    out: dict[str, Any] = {
        "agreement": round(tally["all right"] / tally["all"], 4),
        "right": f"{tally['all right']}/{tally['all']}",
        "false_positives": false_positives,
        "false_negatives": false_negatives,
    }
    for key in sorted(k for k in tally if not k.endswith(" right") and k != "all"):
        out[key] = f"{tally[key + ' right']}/{tally[key]}"
    out["latency"] = summarize(latencies)
    return out


def referee_equal() -> Callable[[str, str], bool]:
    verifier = MathVerifier()
    return lambda response, gold: verifier.score(response, gold).score == 1.0


def math_verify_equal() -> Callable[[str, str], bool]:
    from math_verify import parse, verify  # bench-only anchor

    def equal(response: str, gold: str) -> bool:
        with contextlib.suppress(Exception):
            return bool(verify(parse(f"\\boxed{{{gold}}}"), parse(response)))
        return False

    return equal


def report(path: Path, judges: list[tuple[str, Callable[[str, str], bool]]]) -> dict[str, Any]:
    rows = public_rows(path)
    by_id = {row["id"]: row for row in rows}
    results: dict[str, Any] = {
        "rows": len(rows),
        "policy_rows": sum(row["expected"] != row["upstream_expected"] for row in rows),
    }
    print(f"{path.name}: {len(rows)} rows")
    for name, says_equal in judges:
        out = judge(rows, says_equal)
        results[name] = out
        print(
            f"{name}: agreement {out['agreement']:.4f} ({out['right']}), false positives {len(out['false_positives'])}"
        )
        for kind in ("false_positives", "false_negatives"):
            for row_id in out[kind]:
                row = by_id[row_id]
                print(
                    f"  {kind[:-1]:15s} {row_id:14s} gold={row['gold'][:60]!r} response=…{row['response'][-70:]!r}"
                )
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-math-verify", action="store_true", help="only Referee")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--file", type=Path, default=PUBLIC_FILE, help="one harvest (JSONL)")
    which.add_argument("--all", action="store_true", help="every harvest in tests/data")
    args = parser.parse_args()
    judges = [("referee", referee_equal())]
    if not args.no_math_verify:
        judges.append(("math_verify_0_9_0", math_verify_equal()))
    if not args.all:
        emit("math_public_graders", report(args.file, judges))
        return
    emit("math_public_graders", {path.stem: report(path, judges) for path in PUBLIC_FILES})


if __name__ == "__main__":
    main()
