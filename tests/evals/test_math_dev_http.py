"""The math development set through the HTTP API, as a trainer sends it: groups per gold."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.data import devset
from tests.evals._data import by_key
from tests.timing import within

ZERO_FP_PREFIXES = ("numeric_tolerance_", "tiny_values", "no_final_answer", "adversarial_", "empty_boxed")


def test_math_dev_set_accuracy_and_no_false_positives(server: BackgroundServer) -> None:
    rows = devset("math").rows
    grouped = by_key(rows, "gold")
    groups = [
        {"verifier": "math", "reference": g[0]["gold"], "responses": [r["response"] for r in g]}
        for g in grouped.values()
    ]
    response = httpx.post(f"{server.url}/v1/groups", json={"groups": groups}, timeout=300)
    assert response.status_code == 200, response.text
    misses: list[str] = []
    false_positives: list[str] = []
    statuses: Counter[str] = Counter()
    for group_rows, result in zip(grouped.values(), response.json()["groups"], strict=True):
        for row, verdict in zip(group_rows, result["verdicts"], strict=True):
            statuses[verdict["status"]] += 1
            got = verdict["score"] == 1.0
            if got != row["expected"]:
                misses.append(
                    f"{row['id']}: expected {row['expected']}, got {verdict['score']} ({verdict['reason']})"
                )
                if got and row["category"].startswith(ZERO_FP_PREFIXES):
                    false_positives.append(row["id"])
    accuracy = 1 - len(misses) / len(rows)
    print(f"math dev accuracy {accuracy:.4f} on {len(rows)} rows; misses:\n" + "\n".join(misses))
    assert statuses["error"] == 0, statuses
    assert not false_positives, false_positives
    assert accuracy >= 0.98, misses


async def test_pathological_and_normal_requests_concurrently(server: BackgroundServer) -> None:
    rows = devset("math").rows
    pathological = [r for r in rows if r["category"] == "pathological"]
    normal = [r for r in rows if r["category"] == "gsm8k_integer"]
    assert pathological and normal

    async def score(c: httpx.AsyncClient, row: dict) -> tuple[dict, dict, float]:
        start = time.monotonic()
        r = await c.post(
            "/v1/score", json={"verifier": "math", "response": row["response"], "reference": row["gold"]}
        )
        return row, r.json(), time.monotonic() - start

    async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
        results = await asyncio.gather(*(score(c, row) for row in pathological + normal))
    budget = server.settings.workers.verdict_timeout_s  # 2 s: the suite's server
    for row, verdict, _ in results:
        assert verdict["status"] == "ok", verdict
        # At most the budget, give or take the kill's own latency.
        assert verdict["duration_ms"] <= (budget + within(0.05)) * 1000, (row["id"], verdict["duration_ms"])
        assert (verdict["score"] == 1.0) == row["expected"], (row["id"], verdict)
    # Normal requests were not starved: each finished within a few budgets despite the queue.
    normal_latencies = [elapsed for row, _, elapsed in results if row["category"] == "gsm8k_integer"]
    assert max(normal_latencies) < within(len(pathological) * budget / 2 + 5)


@pytest.mark.parametrize(
    "injection",
    [
        "__import__('os').system('touch {marker}')",
        "\\boxed{__import__('os').system('touch {marker}')}",
        "$__import__('os').system('touch {marker}')$",
        "\\boxed{(lambda: __import__('os').system('touch {marker}'))()}",
        "\\boxed{9**9**9}",
        "\\boxed{().__class__.__mro__[1].__subclasses__()}",
    ],
)
def test_injections_never_run_and_score_zero(
    server: BackgroundServer, tmp_path: Path, injection: str
) -> None:
    marker = tmp_path / "pwned"
    text = injection.replace("{marker}", str(marker))
    start = time.monotonic()
    verdict = httpx.post(
        f"{server.url}/v1/score",
        json={"verifier": "math", "response": f"The answer is {text}", "reference": "0"},
        timeout=60,
    ).json()
    assert verdict["status"] == "ok" and verdict["score"] == 0.0
    assert time.monotonic() - start < server.settings.workers.verdict_timeout_s + within(
        0.5
    )  # the budget, plus HTTP
    assert not marker.exists()
