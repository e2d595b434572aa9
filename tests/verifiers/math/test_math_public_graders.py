"""Agreement on material we did not write: public math graders' own test suites.

`tests/data/math_public_graders.jsonl` (harvested from huggingface/Math-Verify, hendrycks/math,
QwenLM/Qwen2.5-Math and volcengine/verl; see `bench/bench_math_public.py`). Every row counts:
rows whose label follows MATH_POLICY.md against the upstream label (`expected !=
upstream_expected`, the note names the rule) are asserted per our label like the rest.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from referee.verifiers.math import MathVerifier
from tests.data import DATA_DIR

# Rows the verifier still misses (all false negatives), by cause. A row leaving this list is
# progress; a row joining it is a regression and fails `test_no_new_misses`.
KNOWN_MISSES = {
    "mv_116": "matrix arithmetic (a sum of two matrices) is not evaluated",
    "mv_117": "matrix arithmetic (a product with the identity) is not evaluated",
    "mv_155": "a bare list `1,3` is not compared with the tuple `(1,3)` in order",
    "mv_190": "\\sum with symbolic bounds is not parsed",
    "mv_207": "a label that is a fraction of names (`\\frac{NO}{BO}=...`) is not reduced to its value",
    "mv_219": "labelled values `x=-5, p=14/3` against the bare list `-5, 14/3`",
    "mv_221": "`W(x)=1orW(x)=-1` (a glued 'or') is not read as two cases",
    "mv_250": "labelled roots `x_1=..., x_2=...` against two unlabelled boxes",
    "mv_252": "labelled roots `x_1=..., x_2=...` against two unlabelled boxes",
}
FLOOR = 0.97  # measured 343/352 = 0.9744 when this file was written
TARGET = 0.99  # the bar, not reached yet


@cache
def verdicts() -> tuple[tuple[dict[str, Any], int], ...]:
    verifier = MathVerifier()
    lines = (DATA_DIR / "math_public_graders.jsonl").read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return tuple((row, int(verifier.score(row["response"], row["gold"]).score == 1.0)) for row in rows)


def _agreement() -> float:
    pairs = verdicts()
    return sum(got == row["expected"] for row, got in pairs) / len(pairs)


def test_rows_are_well_formed() -> None:
    pairs = verdicts()
    assert len(pairs) >= 300
    ids = [row["id"] for row, _ in pairs]
    assert len(ids) == len(set(ids))
    for row, _ in pairs:
        assert row["expected"] in (0, 1) and row["upstream_expected"] in (0, 1)
        assert row["source"] and row["path"] and row["licence"]
        if row["expected"] != row["upstream_expected"]:
            assert row["note"].startswith("policy: rule "), row["id"]


def test_no_false_positives() -> None:
    false_positives = [row["id"] for row, got in verdicts() if got and not row["expected"]]
    assert false_positives == []


def test_policy_rows_follow_policy() -> None:
    wrong = [
        row["id"]
        for row, got in verdicts()
        if row["expected"] != row["upstream_expected"] and got != row["expected"]
    ]
    assert wrong == []


def test_no_new_misses() -> None:
    misses = {row["id"] for row, got in verdicts() if got != row["expected"]}
    assert misses <= set(KNOWN_MISSES), sorted(misses - set(KNOWN_MISSES))


def test_agreement_floor() -> None:
    assert _agreement() >= FLOOR


@pytest.mark.xfail(strict=True, reason="issue 13 bar: 9 known misses (KNOWN_MISSES) keep agreement at 0.974")
def test_agreement_target() -> None:
    assert _agreement() >= TARGET


# The general fixes these rows prompted, each with near-miss negatives beside its positives.
FIXES = [
    # a backslash escaped once more before a command (`\\frac` as JSON or Python source writes it)
    ("\\\\left(\\\\frac{1}{5},\\\\frac{1}{6}\\\\right)", "\\boxed{\\left(\\frac15, \\frac16\\right)}", 1),
    ("\\\\left(\\\\frac{1}{5},\\\\frac{1}{6}\\\\right)", "\\boxed{\\left(\\frac16, \\frac15\\right)}", 0),
    ("-2 \\\\le x \\\\le 7", "\\boxed{x \\in [-2, 7]}", 1),
    ("-2 \\\\le x \\\\le 7", "\\boxed{x \\in [-2, 7)}", 0),
    # a line break between two numbers separates them: never a mixed number
    ("71/6", "\\boxed{11 5/6}", 1),
    ("71/6", "\\boxed{11\n5/6}", 0),
    ("5", "\\boxed{11\n5/6}", 0),
    # percent words are the percent sign
    ("40/900", "\\boxed{4 4/9 percent}", 1),
    ("0.28", "\\boxed{28 pct}", 1),
    ("0.28", "\\boxed{29 percent}", 0),
    ("2.8", "\\boxed{28 percent}", 0),
    # a mixed number with a zero numerator is its whole part
    ("4", "\\boxed{4 0/9}", 1),
    ("4", "\\boxed{4 0/0}", 0),
    ("0", "\\boxed{4 0/9}", 0),
    # `14 {, }916` groups thousands
    ("14916", "Final Answer: The final answer is $14 {, }916$.", 1),
    ("14917", "Final Answer: The final answer is $14 {, }916$.", 0),
    # a response ending in inline math after a colon or a linking verb states it
    ("9", "Answer $ 9 $", 1),
    ("9", "Answer \\( 9 \\)", 1),
    ("8", "Answer $ 9 $", 0),
    ("x \\neq 5", "The solution is $x != 5$", 1),
    ("x \\neq 5", "The solution is $x != 6$", 0),
    ("5", "Let me compute $2 + 3$", 0),
    ("5", "so we get $2 + 3", 0),
    # an explicit final-answer statement after the last box is the later commitment
    ("10455", "First \\boxed{200}, then \\boxed{255}. Final Answer: The final answer is $10,455$.", 1),
    ("255", "First \\boxed{200}, then \\boxed{255}. Final Answer: The final answer is $10,455$.", 0),
    # a final-answer label inside a line; a formula followed by "So, ..." ends a sentence
    ("19", "so 19 points. Final Answer: The number of points that could be there is 19.", 1),
    ("18", "so 19 points. Final Answer: The number of points that could be there is 19.", 0),
    ("(7,6)", "Let's solve it. $y = 6$ So, the ordered pair is $(7, 6)$.", 1),
    ("(6,7)", "Let's solve it. $y = 6$ So, the ordered pair is $(7, 6)$.", 0),
    # `\quadx_{2}`: a quad glued to a one-letter name
    ("x_{1}=2,\\quadx_{2}=3", "\\boxed{x_1 = 2, x_2 = 3}", 1),
    ("x_{1}=2,\\quadx_{2}=3", "\\boxed{x_1 = 3, x_2 = 2}", 0),
]


@pytest.mark.parametrize(("gold", "response", "expected"), FIXES)
def test_fix(gold: str, response: str, expected: int) -> None:
    assert MathVerifier().score(response, gold).score == float(expected)
