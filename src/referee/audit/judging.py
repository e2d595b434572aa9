"""What the judge calls behind an audit's verdicts cost: calls, cache hits, tokens, latency, and
the error verdicts by kind.

Read from what the verdicts carry, never from the transport, so the same figures come from
in-process scoring, a running service (`--url`), a service's own audit jobs, and any verifier
whose verdicts carry the same fields (a registered judge type). A judge verifier's details hold,
per judge call, `tokens` (`prompt`, `completion`), `latency_s`, `cached` (a boolean: the verdict
cache answered) and `shared` (a boolean: another verdict's call answered, an identical call
being sent once): at the top of the details for a verdict of one call (`judge_equivalence`,
`judge_label`), in the items of a list for a verdict of several (`judge_rubric`'s `criteria`,
one call each). A call is counted where it is neither cached nor shared, so each is counted once.

An error verdict of a judge says why in its details (`judge_error`: unparseable, a failed
call's kind, no_endpoint, unknown_endpoint) and carries the tokens of a reply it could not
parse, which count as spent; a failed call (no reply) carries none. Where the details say
nothing (the engine's own errors: a time budget, a verifier bug), the kind is read from the
reason's wording.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from referee.models import Verdict

# Error verdicts by the wording of their reason, the first (leftmost) match deciding; a
# `kind` group names the kind itself (a failed call's: timeout, unreachable, server_error...).
_ERROR_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"judge reply unparseable"), "unparseable"),
    (re.compile(r"judge endpoint '[^']*' failed \((?P<kind>[a-z_]+)\)"), ""),
    (re.compile(r"no judge endpoints are configured"), "no_endpoint"),
    (re.compile(r"unknown judge endpoint"), "unknown_endpoint"),
    (re.compile(r"verifier exceeded its .* budget"), "time_budget"),
)
# Kinds that only a judge verifier gives: a report shows the judge section for them even when
# no verdict carries a call (every call failed, or no endpoint is configured).
_OTHER_KINDS = {"other", "time_budget"}


class Tokens(BaseModel):
    prompt: float = 0
    completion: float = 0
    total: float = 0


class JudgeCost(BaseModel):
    """The judge calls behind a set of verdicts (an audit's rows, or its probe battery)."""

    verdicts: int = Field(description="Verdicts whose details carry judge calls.")
    calls: int = Field(
        description="Judge calls made: those sent for the verdicts (neither cached nor shared), "
        "unparseable replies behind error verdicts included."
    )
    cache_hits: int = Field(description="Judge answers taken from the verdict cache (details `cached`).")
    shared: int = Field(
        description="Judge answers another verdict's call gave (details `shared`: identical calls in "
        "flight together are sent once)."
    )
    tokens: Tokens = Field(description="Spent by the calls made, as the server reported its usage.")
    tokens_per_verdict: Tokens = Field(
        description="Mean tokens of a verdict's judge calls, cached ones at the cost of the call that "
        "made them: what a verdict costs without the cache."
    )
    latency_p50_s: float | None = Field(description="Judge round trip per call made (details `latency_s`).")
    latency_p99_s: float | None
    latency_max_s: float | None
    errors: dict[str, int] = Field(
        description="Error verdicts by kind: unparseable, a failed call's kind (timeout, "
        "unreachable, server_error, ...), no_endpoint, unknown_endpoint, time_budget, other."
    )


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One judge call behind a verdict, as its details tell."""

    prompt: int
    completion: int
    latency_s: float | None
    cached: bool
    # Another verdict's call gave this reply (identical calls in flight together are sent
    # once; a group's identical responses are asked once): its cost is counted there.
    shared: bool = False

    @property
    def made(self) -> bool:
        """A call of its own: sent for this verdict (not the cache's, not another's)."""
        return not self.cached and not self.shared


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _call(details: Mapping[str, Any]) -> JudgeCall | None:
    tokens, cached = details.get("tokens"), details.get("cached")
    if not isinstance(tokens, Mapping) or not isinstance(cached, bool):
        return None
    latency = details.get("latency_s")
    ok = isinstance(latency, int | float) and not isinstance(latency, bool)
    prompt, completion = _count(tokens.get("prompt")), _count(tokens.get("completion"))
    return JudgeCall(prompt, completion, latency if ok else None, cached, details.get("shared") is True)


def judge_calls(details: Mapping[str, Any]) -> list[JudgeCall]:
    """The judge calls a verdict's details describe: the details themselves, or the items of
    their lists (a rubric's criteria); [] for a verdict of no judge."""
    top = _call(details)
    if top is not None:
        return [top]
    found = []
    for value in details.values():
        if isinstance(value, list):
            found += [c for item in value if isinstance(item, Mapping) and (c := _call(item)) is not None]
    return found


def error_kind(reason: str | None, details: Mapping[str, Any] | None = None) -> str:
    """The kind of an error verdict: its details' `judge_error`, else read from its reason."""
    said = (details or {}).get("judge_error")
    if isinstance(said, str) and said:
        return said
    best: tuple[int, str] | None = None
    for pattern, kind in _ERROR_KINDS:
        match = pattern.search(reason or "")
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), kind or match["kind"])
    return "other" if best is None else best[1]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def judge_cost(verdicts: Sequence[Verdict]) -> JudgeCost | None:
    """The judge cost of `verdicts`; None when no verdict came from a judge (no call, no judge
    error): the report then has no judge section."""
    per_verdict = [calls for v in verdicts if v.status.value == "ok" and (calls := judge_calls(v.details))]
    failed = [v for v in verdicts if v.status.value != "ok"]
    errors = Counter(error_kind(v.reason, v.details) for v in failed)
    if not per_verdict and set(errors) <= _OTHER_KINDS:
        return None
    every = [c for calls in per_verdict for c in calls]
    # The calls made: the verdicts' own, and those behind error verdicts whose reply was read
    # (an unparseable one spent its tokens; a rubric's other criteria were answered).
    made = [c for c in every if c.made] + [c for v in failed for c in judge_calls(v.details) if c.made]
    latencies = [c.latency_s for c in made if c.latency_s is not None]
    n = max(1, len(per_verdict))
    spent_prompt, spent_completion = sum(c.prompt for c in made), sum(c.completion for c in made)
    all_prompt, all_completion = sum(c.prompt for c in every), sum(c.completion for c in every)
    return JudgeCost(
        verdicts=len(per_verdict),
        calls=len(made),
        cache_hits=sum(c.cached for c in every),
        shared=sum(c.shared and not c.cached for c in every),
        tokens=Tokens(
            prompt=spent_prompt, completion=spent_completion, total=spent_prompt + spent_completion
        ),
        tokens_per_verdict=Tokens(
            prompt=round(all_prompt / n, 1),
            completion=round(all_completion / n, 1),
            total=round((all_prompt + all_completion) / n, 1),
        ),
        latency_p50_s=percentile(latencies, 50) if latencies else None,
        latency_p99_s=percentile(latencies, 99) if latencies else None,
        latency_max_s=max(latencies, default=None),
        errors=dict(sorted(errors.items())),
    )


# ---- as the reports show it ----------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f} s"


def _tokens(t: Tokens) -> str:
    return f"{t.total:,g} ({t.prompt:,g} prompt · {t.completion:,g} completion)"


def _errors(cost: JudgeCost) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in cost.errors.items()) or "none"


def cost_line(cost: JudgeCost) -> str:
    """One line for a report's summary."""
    return (
        f"{cost.calls} judge calls, {cost.cache_hits} cache hits, {cost.tokens.total:,g} tokens spent "
        f"({cost.tokens_per_verdict.total:,g} per verdict); judge latency p50 "
        f"{_seconds(cost.latency_p50_s)} · p99 {_seconds(cost.latency_p99_s)}; error verdicts: {_errors(cost)}"
    )


def cost_table(rows: JudgeCost | None, probes: JudgeCost | None) -> tuple[list[str], list[list[str]]]:
    """The judge cost section: a header and rows, a column for the labelled rows and one for
    the probe battery."""
    columns = [("labelled rows", rows), ("probe battery", probes)]
    shown = [(name, c) for name, c in columns if c is not None]
    lines: list[tuple[str, Callable[[JudgeCost], str]]] = [
        ("verdicts with judge calls", lambda c: str(c.verdicts)),
        ("judge calls made", lambda c: str(c.calls)),
        ("cache hits", lambda c: str(c.cache_hits)),
        ("answers shared with another verdict's call", lambda c: str(c.shared)),
        ("tokens spent", lambda c: _tokens(c.tokens)),
        ("tokens per verdict (cached or not)", lambda c: _tokens(c.tokens_per_verdict)),
        (
            "judge latency per call: p50 · p99 · max",
            lambda c: " · ".join(_seconds(s) for s in (c.latency_p50_s, c.latency_p99_s, c.latency_max_s)),
        ),
        ("error verdicts by kind", _errors),
    ]
    header = ["", *(name for name, _ in shown)]
    return header, [[label, *(show(c) for _, c in shown)] for label, show in lines]


COST_NOTE = (
    "Tokens are the usage the judge's server reported for the calls behind the verdicts, an "
    "unparseable reply's included; a failed call (no reply) reports none. Calls the cache or "
    "another verdict's identical call answered are not counted again."
)
