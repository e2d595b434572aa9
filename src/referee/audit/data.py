"""Labelled rows and verifier specs: what an audit reads.

A labelled file is JSON Lines, one row per object: `response`, `reference`, `expected` (the
score the verifier should give), optional `category`, `id`, `options` and `verifier` (a per-row
verifier name, where rows of one file need different verifiers). Leading `{"_policy": ...}`
lines are skipped. The project's development sets use other field names for the same things,
so these are read too:

| audit field | also read from |
|---|---|
| `response` | `candidate` (code rows) |
| `reference` | `gold` (math), `answer_spec` (logic); code rows: `{language, test_format, tests}` |
| `expected` | `expected_score`; a boolean is 1.0/0.0; code rows: `expected_verdict == "accepted"` |
| `category` | `task` (logic) |
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from referee.models import VerifierComponent
from referee.verifiers import judge

# A verifier as the audit takes it: a name (`math`, `logic.{task}` filled from each row, or a
# registered `name@N`) or weighted components, as /v1/groups takes them.
VerifierSpec = str | list[VerifierComponent]

_COMPONENTS = TypeAdapter(list[VerifierComponent])
# `referee audit run judge:...`: the built-in judge verifiers a `judge:<family>` name picks.
_JUDGE_PREFIX = "judge:"
_JUDGE_FAMILIES = frozenset(v.name for v in judge.VERIFIERS)
_TERM = re.compile(r"^\s*(?:(?P<weight>[-+]?[0-9.]+(?:e[-+]?\d+)?)\s*\*\s*)?(?P<name>[^\s*+]+)\s*$")


class LabelledFileError(ValueError):
    """A labelled file that cannot be read: says which line and why."""


@dataclass(frozen=True, slots=True)
class LabelledRow:
    id: str
    response: str
    reference: Any
    expected: float
    category: str = "all"
    options: dict[str, Any] = field(default_factory=dict)
    verifier: str | None = None  # a per-row verifier name, else the audit's
    # The row's short scalar fields, to fill `{field}` placeholders of a verifier name.
    fields: dict[str, Any] = field(default_factory=dict)


def judge_alias(name: str) -> str:
    """The verifier a `judge:` name stands for (the issue's spelling, `referee audit run
    judge:...`): `judge:equivalence` and `judge:judge_equivalence` are the built-in
    `judge_equivalence` (likewise rubric, label, pairwise); `judge:grader@2` is the registered
    judge type `grader@2`. Any other name is itself."""
    if not name.startswith(_JUDGE_PREFIX):
        return name
    rest = name.removeprefix(_JUDGE_PREFIX).strip()
    if not rest:
        raise ValueError("`judge:` names no judge (judge:equivalence, judge:rubric, judge:NAME@N...)")
    if f"judge_{rest}" in _JUDGE_FAMILIES:
        return f"judge_{rest}"
    return rest


def parse_verifier(text: str) -> VerifierSpec:
    """`math`, `name@2`, `logic.{task}`, `judge:equivalence`, `math + 0.1*format.think_answer`,
    or a JSON list of components (`[{"name": "math", "weight": 1.0}]`)."""
    text = text.strip()
    if text.startswith("["):
        try:
            return _COMPONENTS.validate_json(text)
        except ValidationError as exc:
            raise ValueError(f"not a list of verifier components: {exc}") from None
    if "+" not in text and "*" not in text:
        if not text:
            raise ValueError("empty verifier name")
        return judge_alias(text)
    components = []
    for term in text.split("+"):
        match = _TERM.match(term)
        if match is None:
            raise ValueError(f"cannot read the term {term.strip()!r} of {text!r} (want WEIGHT*NAME)")
        weight = float(match["weight"]) if match["weight"] else 1.0
        components.append(VerifierComponent(name=judge_alias(match["name"]), weight=weight))
    return components


def spec_text(spec: VerifierSpec) -> str:
    if isinstance(spec, str):
        return spec
    return " + ".join(f"{c.weight:g}*{c.name}" for c in spec)


def component_names(spec: VerifierSpec) -> list[str]:
    return [spec] if isinstance(spec, str) else [c.name for c in spec]


def _expected(row: Mapping[str, Any]) -> float:
    for key in ("expected", "expected_score"):
        if key in row:
            value = row[key]
            if isinstance(value, bool):
                return 1.0 if value else 0.0
            if isinstance(value, int | float):
                return float(value)
            raise ValueError(f"{key} must be a number or a boolean, not {value!r}")
    if "expected_verdict" in row:
        return 1.0 if row["expected_verdict"] == "accepted" else 0.0
    raise ValueError("no expected score (expected, expected_score or expected_verdict)")


def _reference(row: Mapping[str, Any]) -> Any:
    for key in ("reference", "gold", "answer_spec"):
        if key in row:
            return row[key]
    if "tests" in row:  # a code row of the project's dev-set shape
        ref = {k: row[k] for k in ("language", "test_format", "tests") if k in row}
        return ref
    raise ValueError("no reference (reference, gold, answer_spec or tests)")


def row_from_mapping(raw: Mapping[str, Any], index: int) -> LabelledRow:
    response = raw.get("response", raw.get("candidate"))
    if not isinstance(response, str):
        raise ValueError("no response (a string in response or candidate)")
    options = raw.get("options") or {}
    if not isinstance(options, dict):
        raise ValueError("options must be an object")
    verifier = raw.get("verifier")
    if verifier is not None and not isinstance(verifier, str):
        raise ValueError("a per-row verifier must be a name")
    return LabelledRow(
        id=str(raw.get("id", index)),
        response=response,
        reference=_reference(raw),
        expected=_expected(raw),
        category=str(raw.get("category") or raw.get("task") or "all"),
        options=options,
        verifier=verifier,
        fields={k: v for k, v in raw.items() if isinstance(v, str | int | float) and len(str(v)) <= 200},
    )


def read_rows(lines: Iterable[str], source: str = "<rows>") -> list[LabelledRow]:
    """The labelled rows; raises LabelledFileError naming the line."""
    rows: list[LabelledRow] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("a row must be a JSON object")
            if "_policy" in raw:
                continue
            rows.append(row_from_mapping(raw, len(rows)))
        except ValueError as exc:
            raise LabelledFileError(f"{source}:{number}: {exc}") from None
    if not rows:
        raise LabelledFileError(f"{source}: no labelled rows")
    return rows


def load_labelled(path: str | Path) -> list[LabelledRow]:
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        return read_rows(handle, str(path))


def resolve_name(name: str, row: LabelledRow) -> str:
    """Fill `{field}` placeholders of a verifier name from a row (`logic.{task}`)."""
    if "{" not in name:
        return name
    try:
        return name.format_map(row.fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"cannot fill the verifier name {name!r} from the row: {exc!r}") from None
