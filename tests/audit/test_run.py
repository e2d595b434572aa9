"""The audit engine: reading labelled rows, the summary, progress, reports and the CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from referee.audit import (
    LabelledFileError,
    ScoreGroups,
    audit_html,
    audit_markdown,
    load_labelled,
    parse_verifier,
    read_rows,
    run_audit,
    write_reports,
)
from referee.cli import app
from referee.models import GroupResult, GroupSpec, Verdict, VerdictStatus, VerifierComponent
from tests.data import devset_path

ROWS = [
    {"id": "r1", "response": "\\boxed{4}", "reference": "4", "expected": 1, "category": "easy"},
    {"id": "r2", "response": "\\boxed{5}", "reference": "4", "expected": 0, "category": "easy"},
    {"id": "r3", "response": "about 4 or 5", "reference": "4", "expected": 0, "category": "hedge"},
    {
        "id": "r4",
        "response": "The answer is 0.5",
        "reference": "\\frac12",
        "expected": 1,
        "category": "forms",
    },
]


def _lines(rows: Sequence[dict[str, object]]) -> list[str]:
    return [json.dumps(r) for r in rows]


def _fake(scores: dict[str, float | None], delay_ms: dict[str, float] | None = None) -> ScoreGroups:
    """A scorer that answers from a table keyed by response (None: an error verdict)."""

    async def score(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        out = []
        for group in groups:
            verdicts = []
            for response in group.responses:
                value = scores[response]
                verdicts.append(
                    Verdict(
                        score=value,
                        status=VerdictStatus.ok if value is not None else VerdictStatus.error,
                        verifier=str(group.verifier),
                        reason=None if value is not None else "sandbox down",
                        duration_ms=(delay_ms or {}).get(response, 1.0),
                    )
                )
            out.append(
                GroupResult(
                    verdicts=verdicts,
                    rewards=[v.score for v in verdicts],
                    advantages=[None] * len(verdicts),
                    mean=None,
                    std=None,
                    zero_variance=True,
                )
            )
        return out

    return score


def test_devset_shapes_are_read_as_labelled_rows() -> None:
    math_rows = load_labelled(devset_path("math"))
    assert len(math_rows) == 248 and {r.expected for r in math_rows} == {0.0, 1.0}
    first = math_rows[0]
    assert first.reference == "16" and first.category == "adversarial_buried"
    logic_rows = load_labelled(devset_path("logic"))
    assert len(logic_rows) == 206 and logic_rows[0].category == "countdown"
    assert isinstance(logic_rows[0].reference, dict) and logic_rows[0].fields["task"] == "countdown"
    code_rows = load_labelled(devset_path("code"))
    assert len(code_rows) == 73
    accepted = [r for r in code_rows if r.expected == 1.0]
    assert len(accepted) == 28 and set(code_rows[0].reference) == {"language", "test_format", "tests"}


def test_bad_rows_name_their_line() -> None:
    with pytest.raises(LabelledFileError, match=r"f\.jsonl:2: no expected score"):
        read_rows([json.dumps(ROWS[0]), json.dumps({"response": "x", "reference": "y"})], "f.jsonl")
    with pytest.raises(LabelledFileError, match="no labelled rows"):
        read_rows(['{"_policy": "only a policy"}'], "f.jsonl")


def test_verifier_specs() -> None:
    assert parse_verifier("math") == "math"
    assert parse_verifier("kw@3") == "kw@3"
    assert parse_verifier("math + 0.1*format.think_answer") == [
        VerifierComponent(name="math", weight=1.0),
        VerifierComponent(name="format.think_answer", weight=0.1),
    ]
    assert parse_verifier('[{"name": "exact", "weight": 2}]') == [VerifierComponent(name="exact", weight=2.0)]
    with pytest.raises(ValueError, match="WEIGHT"):
        parse_verifier("math + 0.1 * * x")


def test_judge_names_in_the_issues_spelling() -> None:
    for family in ("equivalence", "rubric", "label", "pairwise"):
        assert parse_verifier(f"judge:{family}") == f"judge_{family}"
        assert parse_verifier(f"judge:judge_{family}") == f"judge_{family}"
    assert parse_verifier("judge:grader@2") == "grader@2"  # a registered judge type
    assert parse_verifier("judge:rubric + 0.1*format.think_answer") == [
        VerifierComponent(name="judge_rubric", weight=1.0),
        VerifierComponent(name="format.think_answer", weight=0.1),
    ]
    assert parse_verifier("judge_label") == "judge_label"
    with pytest.raises(ValueError, match="names no judge"):
        parse_verifier("judge:")


async def test_summary_lists_false_positives_first_and_counts_everything() -> None:
    rows = read_rows(_lines(ROWS))
    scorer = _fake(
        {"\\boxed{4}": 1.0, "\\boxed{5}": 0.0, "about 4 or 5": 1.0, "The answer is 0.5": None},
        {"\\boxed{4}": 2.0, "\\boxed{5}": 4.0, "about 4 or 5": 10.0},
    )
    seen: list[tuple[int, int]] = []
    report = await run_audit(rows, "math", scorer, probes=False, progress=lambda d, t: seen.append((d, t)))
    assert report.accuracy == 0.5
    assert [r.id for r in report.false_positives] == ["r3"]
    assert [r.id for r in report.errors] == ["r4"] and report.errors[0].reason == "sandbox down"
    c = report.confusion
    assert (c.tp, c.fp, c.tn, c.fn, c.error) == (1, 1, 1, 0, 1)
    assert report.per_category["hedge"].false_positives == 1 and report.per_category["easy"].accuracy == 1.0
    assert report.latency.p50_ms == 4.0 and report.latency.max_ms == 10.0 and report.latency.p99_ms == 10.0
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)
    md = audit_markdown(report)
    assert md.index("## False positives") < md.index("## Per category") and "| r3 |" in md


async def test_templated_and_weighted_verifiers_reach_the_scorer() -> None:
    asked: list[Any] = []

    async def score(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        asked.extend(g.verifier for g in groups)
        return await _fake({"a": 1.0})(groups)

    rows = read_rows([json.dumps({"response": "a", "reference": {}, "expected": 1, "task": "zebra"})])
    await run_audit(rows, "logic.{task}", score, probes=False)
    await run_audit(rows, parse_verifier("logic.{task} + 0.5*format.think_answer"), score, probes=False)
    assert asked[0] == "logic.zebra"
    assert [(c.name, c.weight) for c in asked[1]] == [("logic.zebra", 1.0), ("format.think_answer", 0.5)]


async def test_real_engine_math_audit_with_probes(cpu_scoring: ScoreGroups, tmp_path: Path) -> None:
    rows = read_rows(_lines(ROWS))
    report = await run_audit(rows, "math", cpu_scoring)
    assert [r.score for r in report.results] == [1.0, 0.0, 0.0, 1.0]
    assert report.accuracy == 1.0 and report.false_positives == [] and report.errors == []
    assert report.latency.max_ms > 0
    names = {p.name for p in report.probes if p.battery == "math"}
    assert {"hedge_two_boxes", "think_only", "injection_only", "empty", "whitespace"} <= names
    generic = [p for p in report.probes if p.battery == "generic"]
    assert generic and all(p.passed for p in generic)
    failing = {p.name for p in report.probes if not p.passed}
    assert failing == set()  # the battery passes (its math retraction hole was fixed)
    assert report.probes_passed
    paths = write_reports(report, tmp_path, "math")
    page = paths["html"].read_text()
    assert page.count("data:image/png;base64,") == 4
    assert not re.search(r"""(src|href)=["']https?://""", page)  # self-contained
    assert json.loads(paths["json"].read_text())["accuracy"] == 1.0
    assert "FAIL" not in audit_html(report)


def test_cli_audit_run_writes_the_reports(tmp_path: Path) -> None:
    data = tmp_path / "labelled.jsonl"
    data.write_text("\n".join(_lines(ROWS)) + "\n")
    result = CliRunner().invoke(
        app,
        ["audit", "run", "exact", str(data), "--out", str(tmp_path / "out"), "--workers", "1", "--no-probes"],
    )
    assert result.exit_code == 0, result.output
    assert "accuracy 50.00%" in result.output
    report = json.loads((tmp_path / "out" / "labelled.json").read_text())
    assert report["verifier"] == "exact" and report["rows"] == 4
    assert (tmp_path / "out" / "labelled.md").read_text().startswith("# Audit of exact")


def test_cli_refuses_a_bad_file(tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"response": "x"}\n')
    result = CliRunner().invoke(app, ["audit", "run", "exact", str(data)])
    assert result.exit_code == 2 and "bad.jsonl:1" in result.output
