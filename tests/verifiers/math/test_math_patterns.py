"""The real-world answer patterns of issue 13 (tests/data/math_patterns.jsonl): every pattern has
positives and near-miss negatives, labelled under MATH_POLICY.md; all must be judged right, and
no negative may ever score 1 (a false positive is a reward hack an RL policy learns)."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from referee.verifiers.math import MathVerifier
from tests.data import DATA_DIR
from tests.timing import within

verifier = MathVerifier()
ROWS = [
    json.loads(line) for line in (DATA_DIR / "math_patterns.jsonl").read_text("utf-8").splitlines() if line
]


def test_every_pattern_has_positives_and_near_miss_negatives() -> None:
    positives = Counter(row["category"] for row in ROWS if row["expected"])
    negatives = Counter(row["category"] for row in ROWS if not row["expected"])
    assert set(positives) == set(negatives)
    assert len(positives) >= 17
    for category in positives:
        assert positives[category] >= 3 and negatives[category] >= 3, category


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_pattern(row: dict) -> None:
    start = time.perf_counter()
    check = verifier.score(row["response"], row["gold"])
    elapsed = time.perf_counter() - start
    assert check.score == float(row["expected"]), (check.reason, check.details)
    assert elapsed < within(1.0)  # the service's budget is 2 s; even 100-level nesting is far below


def test_choice_letter_followed_by_arithmetic_is_not_the_letter() -> None:
    for expression in ("B \\cdot 3", "B+1", "B - 2", "B*2", "B/2", "B^2", "B = 3", "\\mathbf{B} \\times 4"):
        assert verifier.score(f"\\boxed{{{expression}}}", "B").score == 0.0, expression
    for letter in ("B", "(B)", "\\text{B}", "\\textbf{(B)}", "B. 42", "B: x = 42", "option B"):
        assert verifier.score(f"\\boxed{{{letter}}}", "B").score == 1.0, letter


def test_degrees_inside_trig_are_degrees_and_radians_stay_radians() -> None:
    for angle, value in ((30, "\\frac12"), (60, "\\frac{\\sqrt3}{2}"), (45, "\\frac{\\sqrt2}{2}"), (90, "1")):
        assert verifier.score(f"\\boxed{{\\sin {angle}^\\circ}}", value).score == 1.0
        assert verifier.score(f"\\boxed{{\\sin({angle}°)}}", value).score == 1.0
        assert verifier.score(f"\\boxed{{\\sin {angle}}}", value).score == 0.0
        assert verifier.score(f"\\boxed{{\\sin({angle})}}", f"\\sin({angle}^\\circ)").score == 0.0
    assert verifier.score("\\boxed{\\cos(\\pi/3)}", "\\cos(60^\\circ)").score == 1.0


def test_chat_template_tokens_end_the_response() -> None:
    tail = "<|im_end|>\n<|im_start|>user\nNow say \\boxed{13}.<|im_end|>\n<|im_start|>assistant\n\\boxed{13}"
    assert verifier.score("So it is \\boxed{12}." + tail, "12").score == 1.0
    assert verifier.score("So it is \\boxed{12}." + tail, "13").score == 0.0
    assert verifier.score("<|im_start|>assistant\nThe answer is 12.<|im_end|>", "12").score == 1.0


def test_interval_algebra_decides_only_what_it_can_order() -> None:
    # endpoints 2^-300 apart cannot be ordered at the working precision: never merged or equal
    assert verifier.score("\\boxed{[0,1] \\cup [1 + 10^{-100}, 2]}", "[0,2]").score == 0.0
    assert verifier.score("\\boxed{(0,1) \\cup (1,2)}", "(0,2)").score == 0.0
    assert verifier.score("\\boxed{(0,1] \\cup (1,2)}", "(0,2)").score == 1.0
    assert verifier.score("\\boxed{[-1, 1] \\setminus \\{0\\}}", "[-1,0)\\cup(0,1]").score == 1.0
    assert verifier.score("\\boxed{[-1, 1] \\setminus \\{0\\}}", "[-1,1]").score == 0.0


def test_a_deep_nested_radical_is_not_its_limit() -> None:
    """At 150 levels sqrt(2+sqrt(2+...)) is within 2^-300 of 2: numeric agreement on a tree that
    deep proves nothing, so only an exact (rational) evaluation may decide it."""
    radical = "\\sqrt{2}"
    for _ in range(150):
        radical = f"\\sqrt{{2+{radical}}}"
    assert verifier.score(f"\\boxed{{{radical}}}", "2").score == 0.0


@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("The answer is $\\boxed{42}$. Wait, that is wrong: it is not 42. I do not know the answer.", 0.0),
        ("So $\\boxed{42}$. Actually this is incorrect, and I cannot finish.", 0.0),
        ("The answer is $\\boxed{42}$. Wait, let me double-check: $6 \\cdot 7 = 42$. Yes.", 1.0),
        ("So $\\boxed{42}$. Actually, is it wrong? No, 42 is right.", 1.0),
        ("I got $\\boxed{41}$. Wait, that is wrong; the correct answer is 42.", 1.0),
    ],
)
def test_a_box_disowned_after_it_is_no_answer(response: str, score: float) -> None:
    """MATH_POLICY rule 1 (retracted boxes): a box the response disowns with no new answer."""
    verifier = MathVerifier()
    options = verifier.validate_options({})
    assert verifier.check(response, verifier.prepare("42", options), options).score == score
