"""The whitelist arithmetic grammar: exact values, and every rejection the policy names."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from referee.verifiers.logic.arith import MAX_DEPTH, evaluate
from referee.verifiers.logic.common import Invalid


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("8 - 3 - 2", 3),  # left associative
        ("12 / 4 / 3", 1),
        ("8/(3-8/3)", 24),  # fractional intermediate, exact
        ("4 + (10 × (8 - 6))", 24),
        ("20 ÷ 5 − 1", 3),
        ("1/3 + 1/3 + 1/3", 1),
        ("  7\n*\t6 ", 42),
    ],
)
def test_values_are_exact(text: str, value: int) -> None:
    assert evaluate(text).value == Fraction(value)


def test_float_rounding_would_differ_but_fractions_do_not() -> None:
    # 0.1 + 0.2 != 0.3 in floats; 1/10 + 2/10 == 3/10 exactly.
    assert evaluate("1/10 + 2/10").value == Fraction(3, 10)


def test_literals_recorded_in_order() -> None:
    assert evaluate("(8 + 6) * (50 + 6)").numbers == (8, 6, 50, 6)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("9**9**9", "exponentiation"),
        ("2^10", "exponentiation"),
        ("6 + 6 + 6 + 6 = 24", "'='"),
        ("-3 + 27", "unary"),
        ("27 + (-3)", "unary"),
        ("+4 * 6", "unary"),
        ("4 * * 6", "unexpected"),
        ("abs(24)", "names"),
        ("len([print(1)])", "names"),
        ("__import__('os')", "names"),
        ("x * 24", "names"),
        ("2.5 * 4", "integer"),
        ("1e3", "names"),
        ("4 6", "after a complete expression"),
        ("(4 + 6", "unbalanced"),
        ("4 + 6)", "unbalanced"),
        ("()", "unexpected"),
        ("4 / (2 - 2)", "division by zero"),
        ("[4 + 6]", "not allowed"),
        ("", "empty"),
        ("1" * 13, "too long"),
        ("4 % 3", "not allowed"),
    ],
)
def test_rejections(text: str, reason: str) -> None:
    with pytest.raises(Invalid, match=reason):
        evaluate(text)


def test_depth_guard() -> None:
    ok = "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH
    assert evaluate(ok).value == 1
    with pytest.raises(Invalid, match="nested too deeply"):
        evaluate("(" + ok + ")")


def test_token_guard() -> None:
    with pytest.raises(Invalid, match="too long"):
        evaluate(" + ".join(["1"] * 300))


def test_allowed_multiset_checked_before_arithmetic() -> None:
    allowed = Counter([2, 3])
    assert evaluate("2 * 3", allowed).value == 6
    with pytest.raises(Invalid, match="not one of the given"):
        evaluate("999999999999 * 2", allowed)
    with pytest.raises(Invalid, match="more often"):
        evaluate("2 * 2", allowed)
