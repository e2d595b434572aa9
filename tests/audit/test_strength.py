"""Code test-suite strength (issue 15 §2): mutants, trivial programs, and the sandbox run that
flags the fixture's deliberately weak problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.audit import Problem, ScoreGroups, load_problems, mutants, run_strength
from referee.audit.strength import problems_from_rows, shape, trivial_programs
from referee.cli import app
from tests.data import DATA_DIR, devset_path

FIXTURE = Path(__file__).with_name("data") / "strength_fixture.jsonl"  # tests/audit/data
SOURCE = "def f(xs, t):\n    n = 0\n    for i in range(len(xs)):\n        if xs[i] < t and not xs[i] == 0:\n            n += 1\n    return n\n"


def test_mutants_cover_every_operator_once_each() -> None:
    found = mutants(SOURCE)
    kinds = {m.operator for m in found}
    assert kinds == {"constant", "range", "comparison", "boolean", "operator", "branch"}
    described = {m.description for m in found}
    assert {
        "Lt -> LtE",
        "Eq -> NotEq",
        "And -> Or",
        "not x -> x",
        "Add= -> Sub=",
        "range stop + 1",
        "if-branch removed",
        "0 -> 1",
    } <= described
    sources = [m.source for m in found]
    assert len(set(sources)) == len(sources) and all(s != SOURCE for s in sources)
    for m in found:
        compile(m.source, "<m>", "exec")
    assert "for i in range(len(xs) + 1):" in next(
        m.source for m in found if m.description == "range stop + 1"
    )
    assert mutants(SOURCE) == found  # deterministic
    assert len(mutants(SOURCE, limit=3)) == 3 and mutants("def (:") == []


def test_problems_from_every_accepted_form() -> None:
    dev = load_problems(devset_path("code"))
    assert len(dev) == 16 and all(p.language == "python" for p in dev)
    assert {"sum_pairs", "is_prime", "word_freq"} <= {p.id for p in dev}
    humaneval = [json.loads(line) for line in (DATA_DIR / "humaneval_sample.jsonl").read_text().splitlines()]
    mbpp = [json.loads(line) for line in (DATA_DIR / "mbpp_sample.jsonl").read_text().splitlines()]
    apps = {
        "id": "apps1",
        "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
        "solutions": json.dumps(["print(3)"]),
    }
    problems = problems_from_rows([humaneval[0], mbpp[0], apps])
    assert [shape(p).format for p in problems] == ["assert", "assert", "stdio"]
    assert shape(problems[0]).functions == (humaneval[0]["entry_point"],)
    assert shape(problems[1]).functions == ("similar_elements",)
    assert problems[2].solution == "print(3)"


def test_trivial_programs_per_format() -> None:
    stdio = Problem(
        "s",
        {
            "language": "python",
            "tests": [{"input": "1\n", "output": "7\n"}, {"input": "2\n", "output": "7\n"}],
        },
        "print(7)",
    )
    names = dict(trivial_programs(stdio))
    assert names["prints the most frequent output"] == "import sys\nsys.stdout.write('7\\n')\n"
    assert "echoes the input" in names and names["empty"] == ""
    calls = Problem(
        "f", {"inputs": [[1], [2]], "outputs": [[5], [5]], "fn_name": "g"}, "def g(x):\n    return 5\n"
    )
    programs = dict(trivial_programs(calls))
    assert programs["returns the most frequent expected value"] == "def g(*args, **kwargs):\n    return 5\n"
    asserts = Problem(
        "a",
        {"language": "python", "test_format": "assert", "tests": "assert h(1) == 'x'\nassert h(2) == 'x'\n"},
        "def h(n):\n    return 'x'\n",
    )
    assert dict(trivial_programs(asserts))["returns the most frequent expected value"].endswith(
        "return 'x'\n"
    )


@pytest.mark.docker
async def test_weak_and_broken_problems_are_flagged(code_scoring: ScoreGroups) -> None:
    seen: list[tuple[int, int]] = []
    report = await run_strength(
        load_problems(FIXTURE), code_scoring, progress=lambda d, t: seen.append((d, t))
    )
    by_id = {p.id: p for p in report.problems}
    even = by_id["weak_is_even"]
    assert even.weak and even.trivial_passing == ["returns True"] and not even.broken
    maximum = by_id["weak_max_of_two"]
    assert maximum.weak and maximum.trivial_passing == [] and any("GtE -> Gt" in s for s in maximum.surviving)
    broken = by_id["broken_square"]
    assert broken.broken and broken.reference_verdict == "wrong_answer" and broken.weak is False
    strong = by_id["strong_count_below"]
    assert not strong.weak and not strong.broken and strong.kill_rate == 1.0 and strong.mutants == 7
    assert report.weak == ["weak_is_even", "weak_max_of_two"] and report.broken == ["broken_square"]
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)


@pytest.mark.docker
def test_cli_audit_tests(audit_sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_SANDBOX_INSTANCE", "pytest-audit")
    monkeypatch.setenv("REFEREE_SANDBOX_POOL_SIZE", "2")
    result = CliRunner().invoke(app, ["audit", "tests", str(FIXTURE), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "weak: ['weak_is_even', 'weak_max_of_two']" in result.output
    md = (tmp_path / "strength_fixture.strength.md").read_text()
    assert "| weak_is_even |" in md and "weak tests" in md


async def test_no_verdict_is_not_a_broken_problem() -> None:
    """When the sandbox gives no verdict, the problem is neither broken nor judged."""
    from collections.abc import Sequence

    from referee.models import GroupResult, GroupSpec, Verdict, VerdictStatus

    async def down(groups: Sequence[GroupSpec]) -> list[GroupResult]:
        out = []
        for g in groups:
            v = [
                Verdict(score=None, status=VerdictStatus.error, verifier="code", reason="sandbox down")
                for _ in g.responses
            ]
            out.append(
                GroupResult(
                    verdicts=v,
                    rewards=[None] * len(v),
                    advantages=[None] * len(v),
                    mean=None,
                    std=None,
                    zero_variance=True,
                )
            )
        return out

    report = await run_strength(load_problems(FIXTURE)[:1], down)
    [problem] = report.problems
    assert problem.broken is False and problem.weak is False
    assert problem.why == ["no verdict on the reference solution: sandbox down"]
