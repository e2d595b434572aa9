"""Zebra (einstein) puzzles: the full table, checked against every clue.

Clue kinds (values are attribute values, unique across categories): ["same", a, b] same house;
["next", a, b] adjacent houses; ["left", a, b] a's house is directly left of b's;
["right", a, b] directly right; ["at", a, k] a lives in house k (1-based). Unknown kinds fall
back to the stored solution.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field, model_validator

from referee.verifiers.base import Check, VerifierError
from referee.verifiers.logic.common import (
    Invalid,
    LogicVerifier,
    PuzzleSpec,
    excerpt,
    is_separator_text,
    load_json,
    looks_like_json,
    passed,
    scan_items,
)

ZEBRA_KINDS = ("same", "next", "left", "right", "at")


class ZebraSpec(PuzzleSpec):
    houses: int = Field(ge=1, le=12)
    attributes: dict[str, list[str | int]] = Field(
        description="category -> its values (one per house); values unique across categories"
    )
    clues: list[list[str | int]] = Field(max_length=200)
    reference_solution: dict[str, dict[str, str | int]] | None = Field(
        default=None, description='{"1": {"name": "alice", ...}, ...}'
    )
    format: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ZebraSpec:
        seen: set[str] = set()
        for category, values in self.attributes.items():
            if len(values) != self.houses:
                raise ValueError(f"attributes.{category} must have one value per house")
            for value in values:
                key = str(value).strip().lower()
                if not key or key in seen:
                    raise ValueError(f"attribute value {value!r} is empty or not unique")
                seen.add(key)
        for clue in self.clues:
            if not clue or not isinstance(clue[0], str):
                raise ValueError("a clue starts with its kind")
            if clue[0] in ZEBRA_KINDS:
                if len(clue) != 3 or str(clue[1]).lower() not in seen:
                    raise ValueError(f"malformed clue {clue!r}")
                if clue[0] == "at":
                    if not (isinstance(clue[2], int) and 1 <= clue[2] <= self.houses):
                        raise ValueError(f"malformed clue {clue!r}")
                elif str(clue[2]).lower() not in seen:
                    raise ValueError(f"malformed clue {clue!r}")
        return self


_HOUSE_LINE = re.compile(
    r"^[\s|*#>\-]*(?:house\s*#?\s*)?(?P<k>[0-9]{1,2})\s*(?:[:.)=|\-–—]\s*)?(?P<rest>.*)$", re.I
)


class Zebra(LogicVerifier):
    name = "logic.zebra"
    description = (
        "Zebra puzzle: one line per house ('House 1: Alice, red, dog', values in any order, "
        'lines in any order) or JSON {"1": {...}}; every house and value exactly once, and '
        "every clue satisfied."
    )
    reference_type: ClassVar[Any] = ZebraSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>Alice is left of blue</think><answer>\nHouse 1: Alice, red, dog\n"
        "House 2: Chidi, blue, cat\nHouse 3: Bruno, green, parrot\n</answer>",
        "reference": {
            "houses": 3,
            "attributes": {
                "name": ["alice", "bruno", "chidi"],
                "color": ["red", "green", "blue"],
                "pet": ["cat", "dog", "parrot"],
            },
            "clues": [
                ["left", "alice", "blue"],
                ["next", "blue", "bruno"],
                ["same", "cat", "chidi"],
                ["same", "bruno", "green"],
                ["left", "dog", "blue"],
            ],
        },
        "expected_score": 1.0,
    }

    def prepare(self, reference: ZebraSpec, options: Any) -> tuple[ZebraSpec, dict[str, str]]:
        category_of = {str(v).strip().lower(): c for c, vs in reference.attributes.items() for v in vs}
        return reference, category_of

    def judge(self, answer: str, prepared: tuple[ZebraSpec, dict[str, str]]) -> Check:
        spec, category_of = prepared
        rows = (
            self._json_rows(answer) if looks_like_json(answer) else self._text_rows(answer, spec, category_of)
        )
        position: dict[str, int] = {}
        for house, values in rows:
            if not 1 <= house <= spec.houses:
                raise Invalid(f"there is no house {house}")
            categories = []
            for value in values:
                key = value.strip().lower()
                if key not in category_of:
                    raise Invalid(f"unknown value {excerpt(value, 30)!r} in house {house}")
                if key in position:
                    raise Invalid(f"{value} appears twice")
                position[key] = house
                categories.append(category_of[key])
            if sorted(categories) != sorted(spec.attributes):
                raise Invalid(f"house {house} needs exactly one value of each of {sorted(spec.attributes)}")
        houses = sorted({position[v] for v in position})
        if houses != list(range(1, spec.houses + 1)) or len(rows) != spec.houses:
            raise Invalid(f"expected each of houses 1..{spec.houses} exactly once")
        return self._clues(spec, position)

    @staticmethod
    def _clues(spec: ZebraSpec, position: dict[str, int]) -> Check:
        unknown = [c for c in spec.clues if c[0] not in ZEBRA_KINDS]
        if unknown:
            solution = spec.reference_solution
            if solution is None:
                raise VerifierError(f"clue kind {unknown[0][0]!r} unknown and no stored solution")
            stored = {str(v).lower(): int(h) for h, attrs in solution.items() for v in attrs.values()}
            if stored != position:
                raise Invalid("differs from the stored solution (clues not checkable)")
            return passed("matches the stored solution")
        for i, clue in enumerate(spec.clues, 1):
            kind = clue[0]
            a = position[str(clue[1]).lower()]
            if kind == "at":
                ok = a == clue[2]
            else:
                b = position[str(clue[2]).lower()]
                ok = {
                    "same": a == b,
                    "next": abs(a - b) == 1,
                    "left": a + 1 == b,
                    "right": a == b + 1,
                }[str(kind)]
            if not ok:
                raise Invalid(f"clue {i} ({' '.join(map(str, clue))}) is violated")
        return passed("every clue satisfied")

    @staticmethod
    def _text_rows(answer: str, spec: ZebraSpec, category_of: dict[str, str]) -> list[tuple[int, list[str]]]:
        labels = [*spec.attributes, "house"]
        vocabulary = list(category_of)
        rows = []
        for line in answer.splitlines():
            if not line.strip() or is_separator_text(line, labels):
                continue  # blank lines, markdown rules and header rows carry no values
            match = _HOUSE_LINE.match(line)
            if match is None:
                raise Invalid(f"unexpected line {excerpt(line.strip(), 40)!r}")
            rows.append((int(match.group("k")), scan_items(match.group("rest"), vocabulary, filler=labels)))
        return rows

    @staticmethod
    def _json_rows(answer: str) -> list[tuple[int, list[str]]]:
        data = load_json(answer)
        if isinstance(data, list):
            data = {str(i): row for i, row in enumerate(data, 1)}
        if not isinstance(data, dict):
            raise Invalid("JSON answer must map houses to their attributes")
        rows = []
        for key, attrs in data.items():
            house_key: Any = key
            if isinstance(attrs, dict):
                attrs = dict(attrs)
                # A list of {"house": 2, "name": ...} records names its house inside.
                for label in [k for k in attrs if k.strip().lower() == "house"]:
                    house_key = str(attrs.pop(label))
                values = list(attrs.values())
            elif isinstance(attrs, list):
                values = attrs
            else:
                raise Invalid("each house must list its attributes")
            match = re.fullmatch(r"\s*(?:house\s*)?([0-9]{1,2})\s*", house_key, re.IGNORECASE)
            if match is None:
                raise Invalid(f"unknown house {excerpt(house_key, 20)!r}")
            if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in values):
                raise Invalid("attribute values must be strings")
            rows.append((int(match.group(1)), [str(v) for v in values]))
        return rows
