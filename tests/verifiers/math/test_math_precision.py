"""Equality must not be decided by a tolerance or by where the variables happen to be sampled.

Regressions from a review: each of the first rows scored 1.0 when variables were sampled only
in (0.35, 1.65) and values were compared with a 2^-200 relative / 2^-230 absolute tolerance.
"""

from __future__ import annotations

import time

import pytest

from referee.verifiers.math import MathVerifier
from referee.verifiers.math._lexer import tokenize
from referee.verifiers.math._numeric import Expr, same_value
from referee.verifiers.math._parser import parse_tokens
from tests.timing import within

verifier = MathVerifier()


def score(gold: str, answer: str) -> float:
    return verifier.score(f"So the result is $\\boxed{{{answer}}}$.", gold).score


REVIEW_FALSE_POSITIVES = [
    ("|x|", "x"),
    ("x", "\\sqrt{x^2}"),
    ("1", "\\frac{x}{|x|}"),
    ("x^2", "x^2+10^{-80}x"),
    ("0", "e^{-1000}"),
    ("\\pi", "\\pi+10^{-70}"),
]

DIFFERENT = [
    # a perturbation below any fixed precision: the lost term must be noticed
    ("\\pi", "\\pi+10^{-400}"),
    ("\\pi", "\\pi(1+10^{-95})"),  # between 2^-336 and 2^-300: not lost, not equal either
    ("0", "(\\pi+10^{-400})-\\pi"),
    ("1", "1+e^{-1000}"),
    ("1", "e^{10^{-400}}"),
    ("1", "2^{10^{-400}}"),
    ("1", "\\cos(10^{-200})"),
    ("1", "\\frac{\\sin(10^{-300})}{10^{-300}}"),
    ("1", "\\tanh(1000)"),
    ("\\frac{\\pi}{2}", "\\arctan(10^{400})"),
    ("1", "(1+10^{-80})^{10^{10}}"),  # amplified: e^{10^{-70}}
    ("e", "(1+10^{-100})^{10^{100}}"),
    ("0", "10^{-400}"),
    ("0", "e^{-10^{10}}"),
    ("0", "\\sin(10^{-300})"),
    ("0.33", "\\frac{1}{3}+10^{-100}i"),  # a tiny imaginary part is still not real
    # a literal too long for the precision may round onto a simpler number
    ("\\pi", "1." + "0" * 400 + "1\\pi"),
    ("\\pi", "\\pi^{1." + "0" * 400 + "1}"),
    # identities that hold only for some signs (a false positive is worse than a miss)
    ("\\ln(x^2)", "2\\ln x"),
    ("2\\ln x", "\\ln(x^2)"),
    ("\\ln(xy)", "\\ln x+\\ln y"),
    ("\\sqrt{x}\\sqrt{y}", "\\sqrt{x y}"),
    ("x", "(x^2)^{1/2}"),
    ("x^3", "|x|^3"),
    ("\\frac{1}{x}", "\\frac{1}{|x|}"),
]

EQUAL = [
    ("(x+1)^2", "x^2+2x+1"),
    ("\\sqrt{8}", "2\\sqrt{2}"),
    ("e^{i\\pi/3}", "1/2+\\frac{\\sqrt3}{2}i"),
    ("2(\\pi-2)", "2\\pi-4"),
    # cancellation and rounding noise are settled at 1024 bits, not by a tolerance
    ("\\pi", "(10^{30}+\\pi)-10^{30}"),
    ("0", "e^{i\\pi}+1"),
    ("0", "\\sqrt{2}^2-2"),
    ("0", "\\ln(e)-1"),
    ("3", "3+2\\cos(\\pi/2)"),  # exact: Niven's rational values of trig at rational pi
    ("1", "\\tan(\\pi/4)"),
    ("\\frac12", "\\sin(\\frac{5\\pi}{6})"),
    ("\\frac{\\sqrt2}{2}", "\\cos(\\pi/4)"),
    ("-7+24i", "(3+4i)^2"),
    ("10^{-200}\\pi", "\\frac{\\pi}{10^{200}}"),
    ("(-8)^{1/3}", "-2"),  # odd roots of negative numbers are real, as for \sqrt[3]{}
    # identities true for every real value of the variables
    ("x^2", "|x|^2"),
    ("|x|", "\\sqrt{x^2}"),
    ("\\ln(x^2)", "2\\ln|x|"),
    ("\\frac{1}{2}\\ln x", "\\ln\\sqrt{x}"),
    ("x^{2/3}", "\\sqrt[3]{x^2}"),  # odd root of a negative number is real
    ("x", "(x^3)^{1/3}"),
    ("x^2-y^2", "(x-y)(x+y)"),
    ("\\sin x", "2\\sin(x/2)\\cos(x/2)"),
    ("\\cos x", "\\sin(x+\\pi/2)"),
    ("\\tanh(2)", "\\frac{e^4-1}{e^4+1}"),
    ("\\frac{n(n+1)}{2}", "\\binom{n+1}{2}"),
    ("y=2x+3", "2x-y+3=0"),
]


@pytest.mark.parametrize(("gold", "answer"), REVIEW_FALSE_POSITIVES + DIFFERENT)
def test_different_values_are_not_equal(gold: str, answer: str) -> None:
    assert score(gold, answer) == 0.0


@pytest.mark.parametrize(("gold", "answer"), EQUAL)
def test_equal_values_stay_equal(gold: str, answer: str) -> None:
    assert score(gold, answer) == 1.0
    assert score(answer, gold) == 1.0


def _expr(latex: str) -> Expr:
    return Expr(parse_tokens(tokenize(latex)))


def test_symbols_are_sampled_at_both_signs_and_both_sides_of_one() -> None:
    x = _expr("x")
    values = [float(x.value(point)) for point in range(5)]
    assert any(v < 0 for v in values) and any(v > 0 for v in values)
    assert any(abs(v) < 1 for v in values) and any(abs(v) > 1 for v in values)


def test_defined_on_one_side_only_is_a_difference() -> None:
    assert same_value(_expr("1"), 0, _expr("\\frac{1}{0}"), 0) is False
    assert same_value(_expr("\\frac{1}{0}"), 0, _expr("\\frac{2}{0}"), 0) is None


def test_repeated_identical_boxes_are_fast() -> None:
    response = "\\boxed{1}" * 100_000  # 900 KB
    start = time.perf_counter()
    got = verifier.score(response, "1").score
    assert time.perf_counter() - start < within(0.5)
    assert got == 1.0


def test_a_spray_of_different_boxes_is_a_fast_hedge() -> None:
    response = "".join(f"\\boxed{{{k}}}" for k in range(70_000))
    start = time.perf_counter()
    got = verifier.check(response, verifier.prepare("1", verifier.options_model()), verifier.options_model())
    assert time.perf_counter() - start < within(0.5)
    assert got.score == 0.0 and "hedging" in (got.reason or "")


def test_repeated_boxes_keep_the_hedging_semantics() -> None:
    assert verifier.score("\\boxed{5}" * 1000 + "\\boxed{6}", "5").score == 0.0
    assert verifier.score("\\boxed{1}\\boxed{2}" * 1000, "1, 2").score == 1.0
