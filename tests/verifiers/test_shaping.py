"""Length shaping rewards against hand-computed values."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from referee.verifiers.base import VerifierError
from referee.verifiers.shaping import Cosine, Overlong

OVERLONG = {"max_length": 1000, "cache_length": 200}  # soft zone 800..1000


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (0, 0.0),
        (800, 0.0),
        (801, -0.005),
        (850, -0.25),
        (900, -0.5),
        (1000, -1.0),
        (1001, -1.0),
        (10**6, -1.0),
    ],
)
def test_overlong_by_chars(length: int, expected: float) -> None:
    check = Overlong().score("x" * length, None, OVERLONG)
    assert check.score == pytest.approx(expected)
    assert check.details["length"] == length


def test_overlong_tokens_come_from_options() -> None:
    opts = {**OVERLONG, "unit": "tokens", "num_tokens": 950}
    assert Overlong().score("short text", None, opts).score == pytest.approx(-0.75)
    opts = {**OVERLONG, "unit": "tokens", "length": 100}
    assert Overlong().score("x" * 5000, None, opts).score == 0.0


def test_overlong_without_cache_is_a_step() -> None:
    opts = {"max_length": 10, "cache_length": 0}
    assert Overlong().score("x" * 10, None, opts).score == 0.0
    assert Overlong().score("x" * 11, None, opts).score == -1.0


@pytest.mark.parametrize(
    "options",
    [
        {"max_length": 100, "cache_length": 200},  # cache longer than max
        {"max_length": 0, "cache_length": 0},
        {"max_length": 100, "cache_length": 10, "unit": "tokens"},  # tokens without a count
        {"max_length": 100, "cache_length": 10, "unit": "words"},
        {"max_length": 100, "cache_length": 10, "extra": 1},
    ],
)
def test_overlong_bad_options(options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Overlong.validate_options(options)


def test_declared_ranges() -> None:
    assert Overlong.score_range == (-1.0, 0.0)
    assert Cosine.score_range == (-1.0, 1.0)


@pytest.mark.parametrize(
    ("length", "correct", "expected"),
    [
        # correct: 1.0 at L=0 down to 0.5 at L_max; r = 0.5 + 0.25 * (1 + cos(pi * L / L_max))
        (0, True, 1.0),
        (250, True, 0.5 + 0.25 * (1 + math.cos(math.pi / 4))),  # ≈ 0.9268
        (500, True, 0.75),
        (1000, True, 0.5),
        (5000, True, 0.5),  # clamped beyond L_max
        # wrong: -1.0 at L=0 up to -0.5 at L_max; r = -0.5 - 0.25 * (1 + cos(pi * L / L_max))
        (0, False, -1.0),
        (500, False, -0.75),
        (750, False, -0.5 - 0.25 * (1 + math.cos(3 * math.pi / 4))),  # ≈ -0.5732
        (1000, False, -0.5),
    ],
)
def test_cosine_with_correct_option(length: int, correct: bool, expected: float) -> None:
    opts = {"max_length": 1000, "correct": correct}
    assert Cosine().score("x" * length, None, opts).score == pytest.approx(expected)


def test_cosine_shorter_correct_beats_longer_and_longer_wrong_is_less_bad() -> None:
    def score(n: int, ok: bool) -> float:
        return Cosine().score("x" * n, None, {"max_length": 100, "correct": ok}).score

    assert score(10, True) > score(90, True) > score(90, False) > score(10, False)


def test_cosine_custom_values_and_tokens() -> None:
    opts = {"max_length": 100, "unit": "tokens", "num_tokens": 50, "correct": True,
            "max_value_correct": 1.0, "min_value_correct": 0.0}  # fmt: skip
    assert Cosine().score("anything", None, opts).score == pytest.approx(0.5)


def test_cosine_inner_verifier_decides_correctness() -> None:
    ref = {"nodes": ["A", "B"], "edges": [["A", "B"]]}
    opts = {"max_length": 1000, "verifier": "logic.toposort"}
    right = Cosine().score("<answer>A, B</answer>", ref, opts)
    wrong = Cosine().score("<answer>B, A</answer>", ref, opts)
    assert right.score > 0.99 and right.details["inner"]["score"] == 1.0
    assert wrong.score < -0.99 and wrong.details["inner"]["score"] == 0.0


@pytest.mark.parametrize(
    "options",
    [
        {"max_length": 100},  # no correctness source
        {"max_length": 100, "correct": True, "verifier": "logic.toposort"},  # two sources
        {"max_length": 100, "correct": True, "max_value_correct": 5.0},  # outside declared range
        {"max_length": 100, "correct": True, "unit": "tokens"},
    ],
)
def test_cosine_bad_options(options: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Cosine.validate_options(options)


def test_cosine_unknown_inner_verifier_is_an_error_not_a_score() -> None:
    with pytest.raises(VerifierError):
        Cosine().score("x", None, {"max_length": 10, "verifier": "no.such"})
    with pytest.raises(VerifierError):
        Cosine().score("x", {"not": "a puzzle"}, {"max_length": 10, "verifier": "logic.toposort"})
