"""Number puzzles: countdown, game24 (arithmetic expressions) and number sorting."""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from referee.verifiers.base import Check
from referee.verifiers.logic import arith
from referee.verifiers.logic.common import Invalid, LogicVerifier, PuzzleSpec, passed

GivenNumber = Annotated[int, Field(ge=0, le=10**9)]


class ArithmeticSpec(PuzzleSpec):
    """The numbers to combine, the target, and how often each number may be used."""

    numbers: list[GivenNumber] = Field(min_length=1, max_length=32)
    target: int = Field(ge=-(10**12), le=10**12)
    rule: Literal["at_most_once", "exactly_once"] | None = Field(
        default=None, description="Defaults to at_most_once for countdown, exactly_once for game24."
    )
    reference_solution: str | None = None
    format: str | None = None


class _ArithmeticVerifier(LogicVerifier):
    reference_type: ClassVar[Any] = ArithmeticSpec
    default_rule: ClassVar[str]

    def judge(self, answer: str, prepared: ArithmeticSpec) -> Check:
        allowed = Counter(prepared.numbers)
        result = arith.evaluate(answer, allowed)
        rule = prepared.rule or self.default_rule
        if rule == "exactly_once":
            missing = allowed - Counter(result.numbers)
            if missing:
                raise Invalid(f"given numbers not used: {sorted(missing.elements())}")
        if result.value != prepared.target:
            raise Invalid(f"the expression equals {result.value}, not {prepared.target}")
        return passed(f"reaches {prepared.target}", numbers_used=list(result.numbers))


class Countdown(_ArithmeticVerifier):
    name = "logic.countdown"
    description = (
        "Countdown numbers game: one arithmetic expression (+ - * / and parentheses, no unary "
        "signs, no '=') that evaluates exactly to the target, each given number used at most once."
    )
    default_rule = "at_most_once"
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>14 * 56 = 784</think><answer>(8 + 6) * (50 + 6)</answer>",
        "reference": {"numbers": [1, 6, 6, 8, 50], "target": 784, "rule": "at_most_once"},
        "expected_score": 1.0,
    }


class Game24(_ArithmeticVerifier):
    name = "logic.game24"
    description = (
        "Game of 24: one arithmetic expression (+ - * / and parentheses, fractions allowed along "
        "the way) that evaluates exactly to the target, using each given number exactly once."
    )
    default_rule = "exactly_once"
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>8/(1/3) = 24</think><answer>8/(3-8/3)</answer>",
        "reference": {"numbers": [3, 3, 8, 8], "target": 24},
        "expected_score": 1.0,
    }


# --- number sorting -----------------------------------------------------------------------

# Plain decimals only: an exponent ("1e999999999") would make Fraction() do unbounded work.
_DECIMAL = re.compile(r"[+\-−]?[0-9]{1,30}(?:\.[0-9]{1,30})?")
_QUOTES = "'\"`‘’“”"


def decimal(text: str) -> Fraction:
    if not _DECIMAL.fullmatch(text):
        raise Invalid(f"{text[:40]!r} is not a plain decimal number")
    return Fraction(text.replace("−", "-"))


class SortingSpec(PuzzleSpec):
    numbers: list[str | int | float] = Field(min_length=1, max_length=1000)
    direction: Literal["ascending", "descending"] = "ascending"
    reference_solution: list[str | int | float] | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _decimals(self) -> SortingSpec:
        for value in self.numbers:
            if not _DECIMAL.fullmatch(str(value)):
                raise ValueError(f"numbers: {str(value)[:40]!r} is not a plain decimal")
        return self


def split_list(answer: str) -> list[str]:
    """Items of a list answer: one layer of [] or () removed, split on commas (or whitespace
    and semicolons when there are no commas), surrounding quotes removed."""
    text = answer.strip()
    if len(text) >= 2 and (text[0], text[-1]) in {("[", "]"), ("(", ")"), ("{", "}")}:
        text = text[1:-1]
    parts = text.split(",") if "," in text else re.split(r"[\s;]+", text)
    items = []
    for part in parts:
        item = part.strip().strip(_QUOTES).strip()
        if not item:
            raise Invalid("empty list item")
        items.append(item)
    return items


class NumberSorting(LogicVerifier):
    name = "logic.number_sorting"
    description = (
        "Sort the given numbers: the answer must contain exactly the given numbers (compared as "
        "exact decimals, no tolerance), each as often as given, in the requested order."
    )
    reference_type: ClassVar[Any] = SortingSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>smallest first</think><answer>['-75', '-61.08', '24', '94.87']</answer>",
        "reference": {"numbers": ["24", "-75", "94.87", "-61.08"], "direction": "ascending"},
        "expected_score": 1.0,
    }

    def prepare(self, reference: SortingSpec, options: Any) -> tuple[list[Fraction], bool]:
        return sorted(decimal(str(v)) for v in reference.numbers), reference.direction == "descending"

    def judge(self, answer: str, prepared: tuple[list[Fraction], bool]) -> Check:
        given, descending = prepared
        items = split_list(answer)
        if len(items) > 4 * len(given) + 8:
            raise Invalid("far more items than numbers given")
        values = [decimal(item) for item in items]
        if len(values) != len(given):
            raise Invalid(f"{len(values)} numbers given in the answer, expected {len(given)}")
        if sorted(values) != given:
            raise Invalid("the answer's numbers differ from the given numbers")
        expected = list(reversed(given)) if descending else given
        if values != expected:
            raise Invalid(f"not in {'descending' if descending else 'ascending'} order")
        return passed("sorted")
