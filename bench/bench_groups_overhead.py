"""Overhead of /v1/groups: a group of 16 responses scored by `exact` over HTTP against a real
uvicorn, versus calling the verifier directly in-process (the same work, no service).

    .venv/bin/python bench/bench_groups_overhead.py [--groups 300]
"""

from __future__ import annotations

import argparse
import time

import httpx

from bench._common import emit, summarize, uvicorn_server
from referee.verifiers.short_answer import ExactVerifier

GROUP_SIZE = 16


def make_group(i: int) -> tuple[str, list[str]]:
    reference = f"answer-{i % 50}"
    responses = [reference if j % 3 == 0 else f"answer-{j}" for j in range(GROUP_SIZE)]
    return reference, responses


def direct(groups: int) -> list[float]:
    verifier = ExactVerifier()
    options = verifier.validate_options({})
    times = []
    for i in range(groups):
        reference, responses = make_group(i)
        start = time.perf_counter()
        prepared = verifier.prepare(reference, options)
        [verifier.check(r, prepared, options) for r in responses]
        times.append(time.perf_counter() - start)
    return times


def over_http(url: str, groups: int) -> list[float]:
    times = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(-20, groups):  # 20 warm-up requests
            reference, responses = make_group(i)
            body = {"groups": [{"verifier": "exact", "reference": reference, "responses": responses}]}
            start = time.perf_counter()
            response = client.post("/v1/groups", json=body)
            elapsed = time.perf_counter() - start
            response.raise_for_status()
            if i >= 0:
                times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with uvicorn_server(REFEREE_WORKERS=str(args.workers), REFEREE_SANDBOX="false") as url:
        http = summarize(over_http(url, args.groups))
    inproc = summarize(direct(args.groups))
    emit(
        "groups_overhead",
        {
            "group_size": GROUP_SIZE,
            "verifier": "exact",
            "http": http,
            "in_process": inproc,
            "ratio_median_http_over_direct": round(http["median_ms"] / max(inproc["median_ms"], 1e-6), 1),
            "http_overhead_median_ms": round(http["median_ms"] - inproc["median_ms"], 3),
        },
    )


if __name__ == "__main__":
    main()
