"""Cost of the judge verifiers (issue 29) against a real OpenAI-compatible server: `transformers
serve` over the test suite's tiny local chat model (tests/support/openai_server.py; built here,
nothing downloaded), on this machine's CPU.

    .venv/bin/python -m bench.bench_judges [--rounds 6] [--max-tokens 16] [--sizes 8 16]

Every figure is a ratio against a baseline measured in the same run:
- raw: the server's own throughput, the exact requests Referee sent for a group (same
  messages, same `max_tokens`) posted at once with httpx, no Referee;
- judged: `judge_equivalence` groups of distinct responses scored through a `Runtime`'s scorer
  (`score_groups`, the engine behind /v1/groups) over that endpoint: verdicts/s, and the
  latency Referee adds to a group (its group time minus the raw calls' time, paired round by
  round, p50/p99);
- cached: the same groups re-scored, every outcome a cache hit (no call), against `judged`;
  and a group of 8 identical responses, which costs one call.

The tiny model's replies are nonsense cut at `max_tokens`: every judged verdict is an error
("unparseable"), which is fine for throughput, but errors are never cached. For the cache
figures the replies are stamped: a wrapper around the service's `JudgeClients` makes the real
call and then replaces its text with a verdict line, so outcomes parse and are cached; the
stamped first pass (all misses, real calls) is reported beside the hits.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from tests.support.openai_server import OpenAIServer, build_tiny_chat_model

from bench._common import emit, summarize
from referee.judges import ChatFailure, ChatReply, ChatRequest, JudgeCache, JudgeClients, request_body
from referee.logs import configure_logging
from referee.models import AdvantageConfig, GroupSpec
from referee.runtime import Runtime
from referee.settings import Settings
from referee.verifiers import Resources

VERIFIER = "judge_equivalence"
IDENTICAL = 8  # the group of identical responses


class Tap:
    """The service's `JudgeClients` with the requests it was handed recorded (the raw baseline
    posts the same ones); `stamp`: each reply's text replaced by a verdict line, after the real
    call, so that it parses and is cached."""

    def __init__(self, inner: JudgeClients) -> None:
        self.inner = inner
        self.stamp = False
        self.requests: list[ChatRequest] = []

    @property
    def cache(self) -> JudgeCache:
        return self.inner.cache

    def endpoint_model(self, endpoint: str) -> str | None:
        return self.inner.endpoint_model(endpoint)

    async def complete_many(self, requests: Sequence[ChatRequest]) -> list[ChatReply | ChatFailure]:
        self.requests.extend(requests)
        results = await self.inner.complete_many(requests)
        if not self.stamp:
            return results
        return [
            dataclasses.replace(r, text="VERDICT: EQUIVALENT", finish_reason="stop")
            if isinstance(r, ChatReply)
            else r
            for r in results
        ]


def responses(round_: int, size: int) -> list[str]:
    """Distinct within a group and from every other group of the run (no hit by accident)."""
    return [f"The answer is {size}-{round_}-{j}." for j in range(size)]


async def raw_calls(http: httpx.AsyncClient, server: OpenAIServer, requests: list[ChatRequest]) -> float:
    """Post `requests` at once, as the server's model; the time until the last answer."""
    bodies = [request_body(dataclasses.replace(r, model=server.model)) for r in requests]
    start = time.perf_counter()
    answers = await asyncio.gather(
        *(http.post(f"{server.base_url}/chat/completions", json=b) for b in bodies)
    )
    elapsed = time.perf_counter() - start
    for answer in answers:
        answer.raise_for_status()
    return elapsed


async def score(runtime: Runtime, group: list[str], max_tokens: int) -> tuple[float, list[Any]]:
    spec = GroupSpec(
        verifier=VERIFIER,
        reference="42",
        responses=group,
        options={"sampling": {"max_tokens": max_tokens}},
    )
    start = time.perf_counter()
    (result,) = await runtime.scorer.score_groups([spec], AdvantageConfig())
    return time.perf_counter() - start, list(result.verdicts)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def sized(
    runtime: Runtime, tap: Tap, server: OpenAIServer, http: httpx.AsyncClient, size: int, args: Any
) -> dict:
    """Groups of `size` distinct responses: raw, judged, stamped first pass, cached."""
    raw, judged, added, stamped, cached = [], [], [], [], []
    statuses: dict[str, int] = {}
    for r in range(args.rounds):
        group = responses(r, size)
        tap.stamp, tap.requests = False, []
        elapsed, verdicts = await score(runtime, group, args.max_tokens)
        for v in verdicts:
            statuses[v.status.value] = statuses.get(v.status.value, 0) + 1
        raw_s = await raw_calls(http, server, tap.requests)
        judged.append(elapsed)
        raw.append(raw_s)
        added.append(elapsed - raw_s)
    for r in range(args.rounds):  # stamped: distinct from the groups above, so all misses
        group = responses(args.rounds + r, size)
        tap.stamp = True
        elapsed, verdicts = await score(runtime, group, args.max_tokens)
        assert all(v.status.value == "ok" for v in verdicts), verdicts[0]
        stamped.append(elapsed)
        hits_before = clients(runtime).cache.hits
        elapsed, _ = await score(runtime, group, args.max_tokens)  # the same group: all hits
        assert clients(runtime).cache.hits - hits_before == size
        cached.append(elapsed)

    def rate(times: list[float]) -> float:
        return round(size * len(times) / sum(times), 2)

    raw_rate, judged_rate, cached_rate = rate(raw), rate(judged), rate(cached)
    return {
        "group_size": size,
        "judged_verdicts": statuses,
        "raw": {"verdicts_per_s": raw_rate, **summarize(raw)},
        "judged": {"verdicts_per_s": judged_rate, **summarize(judged)},
        "judged_over_raw_throughput": round(judged_rate / raw_rate, 3),
        "added_per_group_ms": {
            "p50": round(statistics.median(added) * 1000, 1),
            "p99": round(quantile(added, 0.99) * 1000, 1),
        },
        "stamped_first_pass": {"verdicts_per_s": rate(stamped), **summarize(stamped)},
        "cached": {"verdicts_per_s": cached_rate, **summarize(cached)},
        "cached_over_judged_throughput": round(cached_rate / judged_rate, 1),
    }


def clients(runtime: Runtime) -> JudgeClients:
    assert runtime.judges is not None  # an endpoint is configured
    return runtime.judges


async def identical(
    runtime: Runtime, tap: Tap, server: OpenAIServer, http: httpx.AsyncClient, args: Any
) -> dict:
    """Groups of IDENTICAL copies of one response (one call each) against one raw call."""
    tap.stamp = False
    one, group_times, calls = [], [], []
    for r in range(args.rounds):
        tap.requests = []
        calls_before = sum(clients(runtime).calls.values())
        elapsed, _ = await score(runtime, [f"It is {r}."] * IDENTICAL, args.max_tokens)
        calls.append(sum(clients(runtime).calls.values()) - calls_before)
        group_times.append(elapsed)
        one.append(await raw_calls(http, server, tap.requests[:1]))
    return {
        "group_size": IDENTICAL,
        "calls_per_group": sorted(set(calls)),
        "group": summarize(group_times),
        "one_raw_call": summarize(one),
        "group_over_one_call_median": round(statistics.median(group_times) / statistics.median(one), 2),
    }


async def run(args: Any, server: OpenAIServer, db: Path) -> dict:
    endpoint = {"url": server.base_url, "model": server.model, "timeout_s": 300, "max_concurrency": 64}
    settings = Settings(workers=1, sandbox=False, db_path=db, judge_endpoints={"default": endpoint})
    async with Runtime(settings) as runtime, httpx.AsyncClient(timeout=300) as http:
        tap = Tap(clients(runtime))
        # The bench's one liberty with the Runtime: its scorer's judges are the tap.
        runtime.scorer.resources = Resources(sandbox=runtime.resources.sandbox, judges=tap)
        await score(runtime, responses(-1, 2), args.max_tokens)  # warm-up: connections, model
        await raw_calls(http, server, tap.requests)
        groups = [await sized(runtime, tap, server, http, size, args) for size in args.sizes]
        same = await identical(runtime, tap, server, http, args)
        cache = clients(runtime).cache
        return {
            "groups": groups,
            "identical": same,
            "cache": {"hits": cache.hits, "misses": cache.misses},
            "calls": {f"{e}:{o}": n for (e, o), n in sorted(clients(runtime).calls.items())},
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6, help="groups per size and kind")
    parser.add_argument("--max-tokens", type=int, default=16, help="tokens per judge reply")
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16])
    args = parser.parse_args()
    configure_logging("warning")  # the Runtime's start-up lines would break the JSON on stdout
    with tempfile.TemporaryDirectory(prefix="bench-judges-") as tmp:
        model = build_tiny_chat_model(Path(tmp) / "model")
        server = OpenAIServer(model, Path(tmp) / "serve.log")
        began = time.perf_counter()
        server.start()
        try:
            result = asyncio.run(run(args, server, Path(tmp) / "referee.db"))
        finally:
            server.stop()
    emit(
        "judges",
        {
            "server": "transformers serve, CPU, a tiny random-init local model (2 layers, hidden 32)",
            "note": "the model's replies are nonsense cut at max_tokens: judged verdicts are errors "
            "(unparseable), never cached; the cache figures use stamped replies (real call, text "
            "replaced by a verdict line)",
            "verifier": VERIFIER,
            "rounds": args.rounds,
            "max_tokens": args.max_tokens,
            "seconds": round(time.perf_counter() - began, 1),
            **result,
        },
    )


if __name__ == "__main__":
    main()
