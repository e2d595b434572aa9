"""Auditing judge verifiers: agreement and false positives as for any verifier, and what the
judge's calls cost (calls, cache hits, tokens, latency, error verdicts by kind), read from the
verdicts' details and checked against what the judge's server counted.

The judge is the scripted chat server (tests/judges/scripted_server.py) taught one more
behaviour, `judge`: it reads the fenced response (and criterion) out of the prompt and answers
from a script, right for some rows, wrong for others, with no verdict line for one, and reports
a usage of its own counting (words) that the test sums.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from referee.audit import in_process, read_rows, run_audit, write_reports
from referee.audit.judging import error_kind, judge_calls, judge_cost
from referee.audit.run import report_from_json
from referee.cli import app
from referee.models import Verdict, VerdictStatus
from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.judges.scripted_server import API_KEY, ChatServer, completion

REFERENCE = "80 kilometres per hour"
# The judged text (the boxed answer `extract: auto` picks) -> the scripted judge's reply.
EQUIVALENCE = {
    "80 km/h": "Both say eighty kilometres per hour.\nVERDICT: EQUIVALENT",  # right
    "60 km/h": "60 is not 80.\nVERDICT: NOT_EQUIVALENT",  # right
    "8 km/h": "The same speed, written shorter.\nVERDICT: EQUIVALENT",  # wrong: a false positive
    "22.2 m/s": "Metres per second are not kilometres per hour.\nVERDICT: NOT_EQUIVALENT",  # wrong
    "eighty km per hour": "Hmm, this looks about right to me, I think.",  # no verdict line
}
# A rubric's criteria are judged one call each: (judged text, criterion) -> reply.
RUBRIC = {
    ("Light turns water and CO2 into glucose.", "Names light as the energy source."): "VERDICT: MET",
    ("Light turns water and CO2 into glucose.", "Names glucose as a product."): "VERDICT: MET",
    ("Plants are green.", "Names light as the energy source."): "VERDICT: NOT_MET",
    ("Plants are green.", "Names glucose as a product."): "VERDICT: NOT_MET",
}
UNSCRIPTED = "VERDICT: NOT_EQUIVALENT"  # probes: an honest judge rejects them

ROWS = [
    {"id": "r1", "response": "It covers 120 km in 1.5 h: \\boxed{80 km/h}.", "expected": 1},
    {"id": "r2", "response": "\\boxed{60 km/h}", "expected": 0},
    {"id": "r3", "response": "\\boxed{8 km/h}", "expected": 0},
    {"id": "r4", "response": "\\boxed{22.2 m/s}", "expected": 1},
    {"id": "r5", "response": "\\boxed{eighty km per hour}", "expected": 1},
    {"id": "r6", "response": "", "expected": 0},  # a 0 without a call
]
CRITERIA = {
    "criteria": [
        {"criterion": "Names light as the energy source.", "weight": 1},
        {"criterion": "Names glucose as a product.", "weight": 2},
    ]
}


def _fenced(kind: str, prompt: str) -> str | None:
    match = re.search(rf"<<<{kind}-([0-9a-f]+)>>>\n(.*)\n<<<END-{kind}-\1>>>", prompt, re.S)
    return None if match is None else match[2]


@dataclass
class Judge:
    """The replies the scripted judge sent: (judged text, prompt tokens, completion tokens)."""

    sent: list[tuple[str, int, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tokens(self, *, leaving_out: str | None = None) -> tuple[int, int]:
        kept = [(p, c) for text, p, c in self.sent if text != leaving_out]
        return sum(p for p, _ in kept), sum(c for _, c in kept)


def scripted(server: ChatServer) -> Judge:
    """Teach `server` the `judge` behaviour (its other behaviours stay as they are)."""
    judge = Judge()
    plain = server.server.RequestHandlerClass

    def behave(handler: Any, behaviour: str, count: int, body: dict[str, Any]) -> None:
        if behaviour != "judge":
            return plain.behave(handler, behaviour, count, body)  # type: ignore[attr-defined]
        prompt = body["messages"][-1]["content"]
        text, criterion = _fenced("RESPONSE", prompt) or "", _fenced("CRITERION", prompt)
        reply = RUBRIC.get((text, criterion or ""), EQUIVALENCE.get(text, UNSCRIPTED))
        usage = (sum(len(m["content"].split()) for m in body["messages"]), len(reply.split()))
        with judge.lock:
            judge.sent.append((text, *usage))
        answer = completion(reply)
        answer["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
        handler.answer(200, answer)
        return None

    server.server.RequestHandlerClass = type("ScriptedJudge", (plain,), {"behave": behave})
    return judge


def endpoints(server: ChatServer) -> dict[str, dict[str, Any]]:
    common = {"model": "judge-model", "api_key": API_KEY, "timeout_s": 10, "retries": 0}
    return {"default": {"url": server.url("judge"), **common}, "down": {"url": server.url("fail"), **common}}


def rows_file(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps({"reference": REFERENCE, **r}) + "\n" for r in rows))
    return path


async def test_an_audit_of_judge_equivalence_costs_what_the_server_counted(tmp_path: Path) -> None:
    rows = read_rows(json.dumps({"reference": REFERENCE, **r}) for r in ROWS)
    with ChatServer() as server:
        judge = scripted(server)
        async with in_process(make_settings(workers=1, judge_endpoints=endpoints(server))) as score:
            first = await run_audit(rows, "judge_equivalence", score, probes=False)
            calls_first, spent_first = server.hits["judge"], judge.tokens()
            second = await run_audit(rows, "judge_equivalence", score, probes=False)
    assert {text for text, _, _ in judge.sent} == set(EQUIVALENCE)  # every judged text was scripted
    # Agreement and false positives, as for any verifier; an unparseable reply is an error.
    assert [r.score for r in first.results] == [1.0, 0.0, 1.0, 0.0, None, 0.0]
    assert first.accuracy == 0.5
    assert [r.id for r in first.false_positives] == ["r3"]
    assert [r.id for r in first.false_negatives] == ["r4"]
    (error,) = first.errors
    assert error.id == "r5" and error.status == "error" and "unparseable" in (error.reason or "")
    assert first.confusion.error == 1
    # The cost: every call the server answered, the unparseable reply's included (its error
    # verdict's details carry its tokens); per verdict, the verdicts' own calls.
    cost = first.judge
    assert cost is not None and first.judge_probes is None
    assert (cost.verdicts, cost.calls, cost.cache_hits, cost.shared) == (4, 5, 0, 0)
    assert cost.errors == {"unparseable": 1}
    assert calls_first == cost.calls == 5
    prompt, completion_tokens = spent_first
    assert (cost.tokens.prompt, cost.tokens.completion) == (prompt, completion_tokens)
    assert cost.tokens.total == prompt + completion_tokens and prompt > 100
    own = sum(judge.tokens(leaving_out="eighty km per hour"))
    assert cost.tokens_per_verdict.total == round(own / 4, 1)
    assert cost.latency_p50_s is not None and cost.latency_p99_s is not None and cost.latency_max_s
    assert 0 < cost.latency_p50_s <= cost.latency_p99_s <= cost.latency_max_s < first.wall_s
    # The second run in the same process: the parsed verdicts come from the cache, the
    # unparseable reply is asked again (only parsed verdicts are cached).
    assert [r.score for r in second.results] == [r.score for r in first.results]
    again = second.judge
    assert again is not None and (again.verdicts, again.calls, again.cache_hits) == (4, 1, 4)
    assert server.hits["judge"] == calls_first + 1 and again.errors == {"unparseable": 1}
    # Only the unparseable reply was paid for again.
    assert again.tokens.total == sum(judge.tokens()) - sum(spent_first) > 0
    assert again.tokens_per_verdict == cost.tokens_per_verdict
    # The reports: the same shape, with a judge cost section.
    paths = write_reports(first, tmp_path, "judged")
    md = paths["md"].read_text()
    assert md.index("## False positives") < md.index("## Judge cost") < md.index("## Probe battery")
    assert "| judge calls made | 5 |" in md and "| error verdicts by kind | unparseable 1 |" in md
    assert f"| tokens spent | {prompt + completion_tokens:,}" in md
    assert "5 judge calls, 0 cache hits" in md  # the summary line
    assert "<h2>Judge cost</h2>" in paths["html"].read_text()
    assert report_from_json(paths["json"].read_text()).judge == cost


async def test_a_rubric_and_failed_calls_in_one_audit(tmp_path: Path) -> None:
    """A rubric's criteria are one call each; a failed call and an unknown endpoint are error
    verdicts of their kind, not scores."""
    rubric = {"verifier": "judge_rubric", "reference": CRITERIA}
    on = {"response": "\\boxed{80 km/h}", "reference": REFERENCE, "expected": 1}
    rows = read_rows(
        json.dumps(r)
        for r in [
            {"id": "met", "response": "Light turns water and CO2 into glucose.", "expected": 1, **rubric},
            {"id": "unmet", "response": "Plants are green.", "expected": 0, **rubric},
            {"id": "down", **on, "options": {"endpoint": "down"}},  # the endpoint answers 500
            {"id": "nope", **on, "options": {"endpoint": "nope"}},  # no such endpoint
        ]
    )
    with ChatServer() as server:
        judge = scripted(server)
        async with in_process(make_settings(workers=1, judge_endpoints=endpoints(server))) as score:
            report = await run_audit(rows, "judge_equivalence", score, probes=False)
    assert [r.score for r in report.results] == [1.0, 0.0, None, None]
    cost = report.judge
    assert cost is not None and (cost.verdicts, cost.calls, cost.cache_hits) == (2, 4, 0)
    assert server.hits["judge"] == 4 and server.hits["fail"] == 1
    assert cost.errors == {"server_error": 1, "unknown_endpoint": 1}
    assert (cost.tokens.prompt, cost.tokens.completion) == judge.tokens()
    assert cost.tokens_per_verdict.total == round(sum(judge.tokens()) / 2, 1)


async def test_a_call_shared_by_identical_rows_is_counted_once() -> None:
    """Identical rows scored together share one call (the transport sends identical calls in
    flight once), or the later ones find its verdict in the cache: the server answers once, and
    the report counts one call and its tokens once."""
    rows = read_rows(json.dumps({"reference": REFERENCE, **ROWS[0], "id": f"same{i}"}) for i in range(3))
    with ChatServer() as server:
        judge = scripted(server)
        async with in_process(make_settings(workers=1, judge_endpoints=endpoints(server))) as score:
            report = await run_audit(rows, "judge_equivalence", score, probes=False)
    assert [r.score for r in report.results] == [1.0, 1.0, 1.0] and server.hits["judge"] == 1
    cost = report.judge
    assert cost is not None and (cost.verdicts, cost.calls, cost.shared + cost.cache_hits) == (3, 1, 2)
    assert (cost.tokens.prompt, cost.tokens.completion) == judge.tokens()
    assert cost.tokens_per_verdict.total == sum(judge.tokens())  # each verdict's own cost


def _verdict(details: dict[str, Any], error: str | None = None) -> Verdict:
    status = VerdictStatus.error if error else VerdictStatus.ok
    return Verdict(
        score=None if error else 1.0,
        status=status,
        verifier="judge_equivalence@1",
        reason=error,
        details=details,
    )


def test_judge_details_and_reasons_are_read_generically() -> None:
    one = {"tokens": {"prompt": 10, "completion": 2}, "latency_s": 0.5, "cached": False}
    assert [(c.prompt, c.completion, c.latency_s, c.cached) for c in judge_calls(one)] == [
        (10, 2, 0.5, False)
    ]
    rubric = {
        "criteria": [one, {**one, "cached": True}],
        "tokens": {"prompt": 20, "completion": 4},
        "cached": 1,
    }
    assert [c.cached for c in judge_calls(rubric)] == [False, True]  # per criterion, not the sums
    assert judge_calls({"answer": "42", "tokens": 3}) == [] and judge_calls({"judge_called": False}) == []
    # A call shared with another verdict is that verdict's: marked, not guessed from its reply.
    (shared,) = judge_calls({**one, "shared": True})
    assert shared.shared and not shared.made and judge_calls(one)[0].made
    twins = [_verdict(one), _verdict(one), _verdict({**one, "shared": True})]
    cost = judge_cost(twins)  # identical replies, each of its own call but the marked one
    assert cost is not None and (cost.calls, cost.shared, cost.tokens.prompt) == (2, 1, 20)
    # An error verdict's details say its kind, and an unparseable reply's tokens were spent.
    unparsed = {**one, "judge_error": "unparseable", "endpoint": "default"}
    failed = judge_cost([_verdict(one), _verdict(unparsed, error="the judge said nothing useful")])
    assert failed is not None and (failed.calls, failed.tokens.prompt, failed.errors) == (
        2,
        20,
        {"unparseable": 1},
    )
    assert error_kind("whatever", {"judge_error": "breaker_open"}) == "breaker_open"
    assert error_kind("judge endpoint 'default' failed (timeout): no reply within 60 s") == "timeout"
    assert error_kind("criterion 2 ('Is polite'): judge reply unparseable: no VERDICT line") == "unparseable"
    assert (
        error_kind("no judge endpoints are configured in this service (REFEREE_JUDGE_ENDPOINTS)")
        == "no_endpoint"
    )
    assert error_kind("verifier exceeded its 120 s budget") == "time_budget"
    assert error_kind("sandbox down") == error_kind(None) == "other"


def test_the_cli_audits_a_judge_in_process_with_the_endpoints_from_the_environment(tmp_path: Path) -> None:
    data = rows_file(tmp_path, ROWS)
    with ChatServer() as server:
        judge = scripted(server)
        result = CliRunner().invoke(
            app,
            # The spelling, `judge:<family>`: the built-in judge_equivalence.
            ["audit", "run", "judge:equivalence", str(data), "--out", str(tmp_path), "--workers", "1"],
            env={"REFEREE_JUDGE_ENDPOINTS": json.dumps(endpoints(server))},
        )
    assert result.exit_code == 0, result.output
    assert "accuracy 50.00%, false positives 1, errors 1" in result.output
    assert "judge: 5 judge calls, 0 cache hits" in result.output
    report = json.loads((tmp_path / "judged.json").read_text())
    # The probes are judged too (empty ones cost no call), in a column of their own.
    probes = report["judge_probes"]
    judged_probes = {p["name"] for p in report["probes"] if p["status"] == "ok"}
    assert {"injection_0", "injection_think_0"} <= judged_probes and probes["calls"] >= 2
    assert server.hits["judge"] == report["judge"]["calls"] + probes["calls"]  # the unparseable too
    spent = report["judge"]["tokens"]["total"] + probes["tokens"]["total"]
    assert spent == sum(judge.tokens())


def test_an_audit_through_a_service_reads_the_same_cost(tmp_path: Path) -> None:
    data = rows_file(tmp_path, ROWS)
    with ChatServer() as server:
        judge = scripted(server)
        settings = make_settings(workers=1, judge_endpoints=endpoints(server))
        with BackgroundServer(settings) as service:
            args = ["audit", "run", "judge_equivalence", str(data), "--out", str(tmp_path)]
            result = CliRunner().invoke(app, [*args, "--url", service.url, "--no-probes"])
            metrics = httpx.get(f"{service.url}/metrics").text
    assert result.exit_code == 0, result.output
    cost = json.loads((tmp_path / "judged.json").read_text())["judge"]
    assert (cost["calls"], cost["cache_hits"], cost["errors"]) == (5, 0, {"unparseable": 1})
    prompt, completion_tokens = judge.tokens()
    assert (cost["tokens"]["prompt"], cost["tokens"]["completion"]) == (prompt, completion_tokens)
    # The report and /metrics agree: the unparseable reply's tokens are in both.
    assert f'referee_judge_tokens_total{{endpoint="default",kind="prompt"}} {float(prompt)}' in metrics
