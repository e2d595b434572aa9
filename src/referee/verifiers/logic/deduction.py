"""Deduction puzzles: knights and knaves and CNF satisfiability (zebra puzzles: `zebra`).

Each candidate is checked against the puzzle's own rules (statements, clauses), so any
assignment that satisfies them scores 1, not only the stored one. A rule whose kind this module
does not know cannot be checked; then only the stored solution is accepted (and without one the
verdict is an error, not a guess).
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
)

# --- knights and knaves -------------------------------------------------------------------

KK_KINDS = ("is", "and", "or", "imp", "diff", "count")


class KnightsSpec(PuzzleSpec):
    """Statement i is said by person i. Kinds: ["is", j, b] person j is a knight iff b;
    ["and", a, b] both are knights; ["or", a, b] at least one is; ["imp", a, b] if a is a
    knight then b is a knave; ["diff", a, b] they are of different kinds; ["count", k] exactly
    k of all inhabitants are knights."""

    names: list[str] = Field(min_length=1, max_length=26)
    statements: list[list[str | int | bool]] = Field(max_length=26)
    solution: list[bool] | None = Field(default=None, description="The stored solution (True = knight)")
    format: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> KnightsSpec:
        n = len(self.names)
        if len({name.lower() for name in self.names}) != n or any(not name.strip() for name in self.names):
            raise ValueError("names must be distinct and non-empty")
        if len(self.statements) != n:
            raise ValueError("one statement per person is required")
        if self.solution is not None and len(self.solution) != n:
            raise ValueError("solution must have one entry per person")
        for st in self.statements:
            if not st or not isinstance(st[0], str):
                raise ValueError("a statement starts with its kind")
            if st[0] in KK_KINDS:
                args = st[1:]
                ok = len(args) == (1 if st[0] == "count" else 2)
                ok = ok and all(isinstance(a, int | bool) for a in args)
                people = args[:1] if st[0] in ("is", "count") else args
                if st[0] != "count":
                    ok = ok and all(
                        isinstance(a, int) and not isinstance(a, bool) and 0 <= a < n for a in people
                    )
                if not ok:
                    raise ValueError(f"malformed statement {st!r}")
        return self


def kk_truth(statement: list[str | int | bool], knights: list[bool]) -> bool | None:
    """Truth of a statement under an assignment, None for an unknown kind."""
    kind, args = statement[0], statement[1:]
    if kind == "is":
        return knights[int(args[0])] == bool(args[1])
    if kind == "and":
        return knights[int(args[0])] and knights[int(args[1])]
    if kind == "or":
        return knights[int(args[0])] or knights[int(args[1])]
    if kind == "imp":
        return (not knights[int(args[0])]) or (not knights[int(args[1])])
    if kind == "diff":
        return knights[int(args[0])] != knights[int(args[1])]
    if kind == "count":
        return sum(knights) == int(args[0])
    return None


_ROLE = r"(?P<role>knights?|knaves?|truth[- ]?tellers?|liars?)"
_LINK = r"(?:\s+(?:is|was)\s+(?:an?\s+)?|\s*[:=\-–—]\s*|\s*\(\s*)"


def _role(word: str) -> bool:
    word = word.lower()
    return word.startswith("knight") or word.startswith("truth")


class KnightsKnaves(LogicVerifier):
    name = "logic.knights_knaves"
    description = (
        "Knights and knaves: a role for every inhabitant ('Ada is a knight, Finn is a knave', "
        "'Ada: knight', or JSON), any order; the roles must make every statement consistent."
    )
    reference_type: ClassVar[Any] = KnightsSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>Ivo is right about Finn</think>"
        "<answer>Ada is a knight, Finn is a knave, Ivo is a knight</answer>",
        "reference": {
            "names": ["Ada", "Finn", "Ivo"],
            "statements": [["imp", 1, 0], ["count", 1], ["is", 1, False]],
            "solution": [True, False, True],
        },
        "expected_score": 1.0,
    }

    def prepare(self, reference: KnightsSpec, options: Any) -> tuple[KnightsSpec, re.Pattern[str]]:
        names = "|".join(re.escape(n) for n in sorted(reference.names, key=len, reverse=True))
        pattern = re.compile(rf"(?<![\w])(?P<name>{names}){_LINK}{_ROLE}(?![\w])\s*\)?", re.IGNORECASE)
        return reference, pattern

    def judge(self, answer: str, prepared: tuple[KnightsSpec, re.Pattern[str]]) -> Check:
        spec, pattern = prepared
        index = {name.lower(): i for i, name in enumerate(spec.names)}
        pairs = self._json_pairs(answer) if looks_like_json(answer) else self._text_pairs(answer, pattern)
        roles: dict[int, bool] = {}
        for name, role in pairs:
            i = index.get(name.lower())
            if i is None:
                raise Invalid(f"unknown person {excerpt(name, 30)!r}")
            if i in roles:
                raise Invalid(f"{spec.names[i]} is given a role twice")
            roles[i] = role
        missing = [spec.names[i] for i in range(len(spec.names)) if i not in roles]
        if missing:
            raise Invalid(f"no role given for {', '.join(missing)}")
        knights = [roles[i] for i in range(len(spec.names))]
        if spec.solution is not None and knights == spec.solution:
            return passed("matches the solution")
        truths = [kk_truth(st, knights) for st in spec.statements]
        if any(t is None for t in truths):
            if spec.solution is None:
                raise VerifierError("statement kind unknown and no stored solution to compare")
            raise Invalid("differs from the stored solution (statements not checkable)")
        for i, (truth, knight) in enumerate(zip(truths, knights, strict=True)):
            if truth != knight:
                kind = "knight" if knight else "knave"
                raise Invalid(f"{spec.names[i]} as a {kind} makes their statement inconsistent")
        return passed("consistent with every statement")

    @staticmethod
    def _text_pairs(answer: str, pattern: re.Pattern[str]) -> list[tuple[str, bool]]:
        pairs = []
        pos = 0
        for match in pattern.finditer(answer):
            if not is_separator_text(answer[pos : match.start()], ("and",)):
                raise Invalid(f"unexpected text {excerpt(answer[pos : match.start()].strip(), 40)!r}")
            pairs.append((match.group("name"), _role(match.group("role"))))
            pos = match.end()
        if not is_separator_text(answer[pos:], ("and",)):
            raise Invalid(f"unexpected text {excerpt(answer[pos:].strip(), 40)!r}")
        return pairs

    @staticmethod
    def _json_pairs(answer: str) -> list[tuple[str, bool]]:
        data = load_json(answer)
        if not isinstance(data, dict):
            raise Invalid("JSON answer must map names to roles")
        pairs = []
        for name, role in data.items():
            if isinstance(role, bool):
                pairs.append((name, role))
            elif isinstance(role, str) and re.fullmatch(_ROLE, role.strip(), re.IGNORECASE):
                pairs.append((name, _role(role.strip())))
            else:
                raise Invalid(f"role {excerpt(repr(role), 30)} is not knight or knave")
        return pairs


# --- CNF satisfiability -----------------------------------------------------------------

_SAT_PAIR = re.compile(
    r"(?<![\w])x?_?(?P<var>[0-9]{1,6})\s*(?:=|:|->|is)\s*(?P<val>0|1|true|false|t|f)(?![\w])", re.IGNORECASE
)
_SAT_LITERAL = re.compile(r"(?<![\w])(?P<neg>[-¬~!−]?)\s*x?_?(?P<var>[0-9]{1,6})(?![\w])", re.IGNORECASE)
_UNSAT = re.compile(r"unsat(?:isfiable)?|no (?:satisfying )?(?:assignment|solution)s?", re.IGNORECASE)


class SatSpec(PuzzleSpec):
    num_vars: int = Field(ge=1, le=10_000)
    clauses: list[list[int]] = Field(max_length=100_000, description="DIMACS-style literals")
    satisfiable: bool | None = Field(default=None, description="False when UNSAT is the right answer")
    reference_solution: str | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _literals(self) -> SatSpec:
        if any(lit == 0 or abs(lit) > self.num_vars for clause in self.clauses for lit in clause):
            raise ValueError("clause literals must be non-zero and within num_vars")
        return self


class SatCnf(LogicVerifier):
    name = "logic.sat_cnf"
    description = (
        "CNF satisfiability: a 0/1 value for every variable ('x1=0, x2=1', JSON, or signed "
        "literals) satisfying every clause, or 'UNSAT' when the formula is unsatisfiable."
    )
    reference_type: ClassVar[Any] = SatSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>x1 false forces x2</think><answer>x1=0, x2=1, x3=0</answer>",
        "reference": {"num_vars": 3, "clauses": [[1, 2], [-1, -3], [2, 3]], "satisfiable": True},
        "expected_score": 1.0,
    }

    def judge(self, answer: str, prepared: SatSpec) -> Check:
        if _UNSAT.fullmatch(answer.strip().rstrip(".")):
            if prepared.satisfiable is False:
                return passed("correctly reports UNSAT")
            if prepared.satisfiable is None:
                raise VerifierError("reference does not say whether the formula is satisfiable")
            raise Invalid("the formula is satisfiable")
        values = self._assignment(answer, prepared.num_vars)
        for clause in prepared.clauses:
            if not any(values[abs(lit)] == (lit > 0) for lit in clause):
                raise Invalid(f"clause {clause} is not satisfied")
        return passed("every clause satisfied")

    @staticmethod
    def _assignment(answer: str, num_vars: int) -> dict[int, bool]:
        pairs: list[tuple[int, bool]] = []
        if looks_like_json(answer):
            data = load_json(answer)
            if not isinstance(data, dict):
                raise Invalid("JSON answer must map variables to values")
            for key, value in data.items():
                name = re.fullmatch(r"\s*x?_?([0-9]{1,6})\s*", key, re.IGNORECASE)
                if name is None:
                    raise Invalid(f"unknown variable {excerpt(key, 20)!r}")
                if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
                    pairs.append((int(name.group(1)), bool(value)))
                elif isinstance(value, str) and value.strip().lower() in ("0", "1", "true", "false"):
                    pairs.append((int(name.group(1)), value.strip().lower() in ("1", "true")))
                else:
                    raise Invalid(f"value {excerpt(repr(value), 20)} is not 0/1")
        else:
            pattern, signed = (_SAT_PAIR, False) if _SAT_PAIR.search(answer) else (_SAT_LITERAL, True)
            pos = 0
            for match in pattern.finditer(answer):
                if not is_separator_text(answer[pos : match.start()], ("and",)):
                    raise Invalid(f"unexpected text {excerpt(answer[pos : match.start()].strip(), 40)!r}")
                if signed:
                    pairs.append((int(match.group("var")), not match.group("neg")))
                else:
                    pairs.append((int(match.group("var")), match.group("val").lower() in ("1", "true", "t")))
                pos = match.end()
            if not is_separator_text(answer[pos:], ("and",)):
                raise Invalid(f"unexpected text {excerpt(answer[pos:].strip(), 40)!r}")
        values: dict[int, bool] = {}
        for var, value in pairs:
            if not 1 <= var <= num_vars:
                raise Invalid(f"there is no variable x{var}")
            if var in values:
                raise Invalid(f"x{var} is assigned twice")
            values[var] = value
        if len(values) != num_vars:
            missing = [f"x{v}" for v in range(1, num_vars + 1) if v not in values]
            raise Invalid(f"no value for {', '.join(missing[:5])}{'…' if len(missing) > 5 else ''}")
        return values
