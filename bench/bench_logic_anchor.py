"""Anchor: reasoning-gym's own scorers on the logic dev set, in process.

Run with the benchmark's separate environment (reasoning-gym is never installed into .venv):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install reasoning-gym
    .venv-bench/bin/python bench/bench_logic_anchor.py > anchor.json

Each dev row is mapped to the closest reasoning-gym dataset; the dataset entry is built from the
row's `answer_spec` (oracle answer + the metadata that dataset's `score_answer` reads), the
answer is extracted with reasoning-gym's own `extract_answer`, and the verdict counts as
"correct" when the score is 1.0 (its scorers give partial credit; anything less is "wrong").

Some of those scorers run model text through `eval`/sympy's `parse_expr` (an injected
`print(...)` runs, `9**9**9` hangs for minutes). So the scorers run in a forked child process
whose stdout is captured (to detect injected prints), with a per-case deadline: a case that
overruns is recorded as a timeout, the child is killed and a new one continues with the next
case. Throughput is then measured on the cases that finished, by calling the scorer `--repeats`
times each in a fresh child. JSON goes to stdout; progress to stderr.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.data import devsets_dir

CANARY = "RG_CANARY"


def _grid_text(grid: list[list[Any]]) -> str:
    return "\n".join(" ".join(str(c) for c in row) for row in grid)


def _sudoku(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "answer": _grid_text(spec["reference_solution"]),
        "metadata": {"solution": spec["reference_solution"]},
    }


def _queens(spec: dict[str, Any]) -> dict[str, Any]:
    return {"answer": spec["reference_solution"], "metadata": {"valid_answers": spec["valid_completions"]}}


def _knights(spec: dict[str, Any]) -> dict[str, Any]:
    roles = [
        f"{n} is a {'knight' if k else 'knave'}" for n, k in zip(spec["names"], spec["solution"], strict=True)
    ]
    return {"answer": ", ".join(roles), "metadata": {}}


def _arith(spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"numbers": spec["numbers"], "target": spec["target"]}
    return {"answer": spec.get("reference_solution", ""), "metadata": meta}


def _coloring(spec: dict[str, Any]) -> dict[str, Any]:
    puzzle = {
        "vertices": spec["vertices"],
        "edges": spec["edges"],
        "color_options": list(range(1, spec["k"] + 1)),
    }
    return {"answer": json.dumps(spec.get("reference_solution")), "metadata": {"puzzle": puzzle}}


def _zebra(spec: dict[str, Any]) -> dict[str, Any]:
    # reasoning-gym's zebra asks for one attribute; its scorer is a case-insensitive exact match,
    # applied here to the stored table in the prompt's format.
    categories = list(spec["attributes"])
    solution = spec["reference_solution"]
    lines = [
        f"House {h}: " + ", ".join(str(solution[h][c]) for c in categories) for h in sorted(solution, key=int)
    ]
    return {"answer": "\n".join(lines), "metadata": {}}


def _sorting(spec: dict[str, Any]) -> dict[str, Any]:
    return {"answer": json.dumps(spec["reference_solution"]), "metadata": {"direction": spec["direction"]}}


def _hanoi(spec: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "num_disks": spec["disks"],
        "num_pegs": spec["pegs"],
        "start_peg": spec["start_peg"],
        "target_peg": spec["target_peg"],
        "solution_length": spec["min_moves"],
    }
    return {"answer": spec.get("reference_solution", ""), "metadata": meta}


def _maze(spec: dict[str, Any]) -> dict[str, Any]:
    return {"answer": spec.get("reference_solution") or "infeasible", "metadata": {"matrix": spec["grid"]}}


# task -> (reasoning-gym dataset, dataset config, entry builder); None: no dataset scores it.
ANCHORS: dict[str, tuple[str, dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]] | None] = {
    "sudoku_4x4": ("mini_sudoku", {}, _sudoku),
    "sudoku_9x9": ("sudoku", {}, _sudoku),
    "n_queens": ("n_queens", {}, _queens),
    "knights_knaves": ("knights_knaves", {}, _knights),
    "countdown": ("countdown", {}, _arith),
    "game24": ("puzzle24", {}, _arith),  # its config caps numbers at 10 (max_value <= 10)
    "graph_coloring": ("graph_color", {}, _coloring),
    "zebra": ("zebra_puzzles", {}, _zebra),
    "number_sorting": ("number_sorting", {}, _sorting),
    "tower_of_hanoi": ("tower_of_hanoi", {}, _hanoi),
    "maze_path": ("shortest_path", {}, _maze),
    "toposort": None,  # course_schedule only answers "possible or not"
    "sat_cnf": None,  # no CNF-assignment dataset
}


def _child(
    conn: Any, dataset: Any, cases: list[tuple[str, str, dict[str, Any]]], repeats: int, out: str
) -> None:
    from reasoning_gym.utils import extract_answer

    # Whatever injected code prints lands in a file the parent inspects, not in our JSON.
    fd = os.open(out, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    for case_id, response, entry in cases:
        durations = []
        score: float | None = None
        error = None
        for _ in range(repeats):
            start = time.perf_counter()
            try:
                score = float(dataset.score_answer(extract_answer(response), entry))
            except Exception as exc:  # an anchor crash is a result worth recording
                error = f"{type(exc).__name__}: {exc}"[:200]
            durations.append(time.perf_counter() - start)
        conn.send((case_id, score, durations, error))
    conn.send(None)


def run_cases(
    dataset: Any, cases: list[tuple[str, str, dict[str, Any]]], repeats: int, timeout_s: float
) -> tuple[dict[str, tuple[float | None, list[float], str | None]], list[str], str]:
    """Score every case in forked children with a per-case deadline (scaled by repeats)."""
    ctx = mp.get_context("fork")
    results: dict[str, tuple[float | None, list[float], str | None]] = {}
    timeouts: list[str] = []
    captured = ""
    remaining = list(cases)
    while remaining:
        with tempfile.NamedTemporaryFile("w+", suffix=".out", delete=False) as tmp:
            out_path = tmp.name
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, dataset, remaining, repeats, out_path), daemon=True)
        proc.start()
        child.close()
        done = 0
        while True:
            if not parent.poll(timeout_s * repeats):
                stuck = remaining[done][0]
                timeouts.append(stuck)
                proc.kill()
                proc.join()
                remaining = remaining[done + 1 :]
                break
            try:
                msg = parent.recv()
            except EOFError:  # the child died (e.g. a scorer crashed the interpreter)
                results[remaining[done][0]] = (None, [], "child process died")
                remaining = remaining[done + 1 :]
                break
            if msg is None:
                remaining = []
                proc.join()
                break
            case_id, score, durations, error = msg
            results[case_id] = (score, durations, error)
            done += 1
        captured += Path(out_path).read_text(errors="replace")
        os.unlink(out_path)
    return results, timeouts, captured


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--evals", type=Path, default=devsets_dir())
    parser.add_argument("--timeout", type=float, default=5.0, help="per-case deadline in seconds")
    parser.add_argument("--repeats", type=int, default=20, help="scorer calls per case for the timing pass")
    args = parser.parse_args()

    import reasoning_gym

    lines = (args.evals / "logic_dev.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines[1:] if line.strip()]
    by_id = {row["id"]: row for row in rows}
    report: dict[str, Any] = {
        "anchor": f"reasoning-gym {importlib.metadata.version('reasoning-gym')}",
        "python": sys.version.split()[0],
        "per_case_timeout_s": args.timeout,
        "repeats": args.repeats,
        "correct_means": "score == 1.0 (partial credit counts as wrong)",
        "tasks": {},
    }
    total = agree_total = 0
    for task in sorted({row["task"] for row in rows}):
        task_rows = [row for row in rows if row["task"] == task]
        anchor = ANCHORS.get(task)
        if anchor is None:
            report["tasks"][task] = {
                "dataset": None,
                "cases": len(task_rows),
                "note": "no reasoning-gym scorer",
            }
            continue
        name, config, build = anchor
        print(f"{task}: {name} ({len(task_rows)} cases)", file=sys.stderr)
        dataset = reasoning_gym.create_dataset(name, size=1, seed=0, **config)
        cases = [(row["id"], row["response"], build(row["answer_spec"])) for row in task_rows]
        first, timeouts, captured = run_cases(dataset, cases, 1, args.timeout)
        # Timing pass: only cases that finished quickly, each scored `repeats` times.
        fast = [c for c in cases if c[0] in first and first[c[0]][1] and first[c[0]][1][0] < 0.5]
        timed, _, _ = run_cases(dataset, fast, args.repeats, args.timeout)
        durations = [d for _, ds, _ in timed.values() for d in ds]
        disagreements = []
        agree = 0
        for case_id, (score, _, error) in first.items():
            row = by_id[case_id]
            verdict = 1.0 if score is not None and score >= 1.0 - 1e-9 else 0.0
            if verdict == row["expected_score"]:
                agree += 1
            else:
                disagreements.append(
                    {
                        "id": case_id,
                        "expected": row["expected_score"],
                        "anchor_score": score,
                        "tags": row["tags"],
                    }
                    | ({"error": error} if error else {})
                )
        scored = len(first)
        total += scored
        agree_total += agree
        report["tasks"][task] = {
            "dataset": name,
            "cases": len(task_rows),
            "scored": scored,
            "agree": agree,
            "agreement": round(agree / scored, 4) if scored else None,
            "timeouts": [{"id": t, "tags": by_id[t]["tags"]} for t in timeouts],
            "injected_code_ran": CANARY in captured,
            "verdicts_per_s": round(len(durations) / sum(durations), 1) if durations else None,
            "median_ms": round(statistics.median(durations) * 1000, 4) if durations else None,
            "p99_ms": round(p99(durations) * 1000, 4) if durations else None,
            "slowest_single_ms": round(
                max((ds[0] for _, ds, _ in first.values() if ds), default=0) * 1000, 2
            ),
            "disagreements": disagreements,
        }
    report["overall"] = {
        "scored": total,
        "agree": agree_total,
        "agreement": round(agree_total / total, 4) if total else None,
        "timeouts": sum(len(t.get("timeouts", [])) for t in report["tasks"].values()),
        "note": "timeouts are excluded from agreement; a trainer would have to kill those calls",
    }
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
