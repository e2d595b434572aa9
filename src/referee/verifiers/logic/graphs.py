"""Graph puzzles: proper k-colouring and topological order."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field, model_validator

from referee.verifiers.base import Check
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

Vertex = int | str


class ColoringSpec(PuzzleSpec):
    vertices: list[Vertex] = Field(min_length=1, max_length=2000)
    edges: list[tuple[Vertex, Vertex]] = Field(max_length=100_000)
    k: int = Field(ge=1, le=1000, description="colours are 1..k")
    reference_solution: dict[str, int] | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ColoringSpec:
        names = [str(v) for v in self.vertices]
        if len(set(names)) != len(names):
            raise ValueError("vertices must be distinct")
        known = set(names)
        if any(str(a) not in known or str(b) not in known for a, b in self.edges):
            raise ValueError("edges must join listed vertices")
        return self


class GraphColoring(LogicVerifier):
    name = "logic.graph_coloring"
    description = (
        "Graph k-colouring: a colour 1..k for every vertex (JSON object or 'v: c' pairs), each "
        "vertex exactly once, the two ends of every edge coloured differently."
    )
    reference_type: ClassVar[Any] = ColoringSpec
    example: ClassVar[dict[str, Any]] = {
        "response": '<think>a triangle plus a tail</think><answer>{"0": 1, "1": 2, "2": 3, "3": 1}</answer>',
        "reference": {"vertices": [0, 1, 2, 3], "edges": [[0, 1], [1, 2], [0, 2], [2, 3]], "k": 3},
        "expected_score": 1.0,
    }

    def prepare(self, reference: ColoringSpec, options: Any) -> tuple[ColoringSpec, re.Pattern[str]]:
        names = "|".join(re.escape(str(v)) for v in sorted(reference.vertices, key=lambda v: -len(str(v))))
        pair = re.compile(
            rf"(?<![\w])(?:(?:vertex|node)\s*)?(?P<v>{names})\s*(?:[:=]|->|→|\bis\b)\s*"
            rf"(?:(?:colou?r)\s*)?(?P<c>[0-9]{{1,6}})(?![\w.])",
            re.IGNORECASE,
        )
        return reference, pair

    def judge(self, answer: str, prepared: tuple[ColoringSpec, re.Pattern[str]]) -> Check:
        spec, pair = prepared
        canon = {str(v).lower(): str(v) for v in spec.vertices}
        pairs = self._json_pairs(answer) if looks_like_json(answer) else self._text_pairs(answer, pair)
        colors: dict[str, int] = {}
        for vertex, color in pairs:
            key = canon.get(vertex.strip().lower())
            if key is None:
                raise Invalid(f"unknown vertex {excerpt(vertex, 20)!r}")
            if key in colors:
                raise Invalid(f"vertex {key} is coloured twice")
            if not 1 <= color <= spec.k:
                raise Invalid(f"colour {color} of vertex {key} is outside 1..{spec.k}")
            colors[key] = color
        if len(colors) != len(canon):
            missing = [v for v in canon.values() if v not in colors]
            raise Invalid(f"no colour for vertices {missing[:8]}")
        for a, b in spec.edges:
            if colors[str(a)] == colors[str(b)]:
                raise Invalid(f"edge ({a}, {b}) joins two vertices of colour {colors[str(a)]}")
        return passed("proper colouring")

    @staticmethod
    def _text_pairs(answer: str, pair: re.Pattern[str]) -> list[tuple[str, int]]:
        pairs = []
        pos = 0
        for match in pair.finditer(answer):
            if not is_separator_text(answer[pos : match.start()]):
                raise Invalid(f"unexpected text {excerpt(answer[pos : match.start()].strip(), 40)!r}")
            pairs.append((match.group("v"), int(match.group("c"))))
            pos = match.end()
        if not pairs or not is_separator_text(answer[pos:]):
            raise Invalid(f"unexpected text {excerpt(answer[pos:].strip(), 40)!r}")
        return pairs

    @staticmethod
    def _json_pairs(answer: str) -> list[tuple[str, int]]:
        data = load_json(answer)
        if not isinstance(data, dict):
            raise Invalid("JSON answer must map vertices to colours")
        pairs = []
        for vertex, color in data.items():
            if isinstance(color, bool) or not isinstance(color, int | str):
                raise Invalid(f"colour {excerpt(repr(color), 20)} is not an integer")
            if isinstance(color, str):
                if not re.fullmatch(r"\s*[0-9]{1,6}\s*", color):
                    raise Invalid(f"colour {excerpt(color, 20)!r} is not an integer")
                color = int(color)
            pairs.append((vertex, color))
        return pairs


# --- topological order --------------------------------------------------------------------


class ToposortSpec(PuzzleSpec):
    nodes: list[str] = Field(min_length=1, max_length=2000)
    edges: list[tuple[str, str]] = Field(max_length=100_000, description="(X, Y): X must come before Y")
    reference_solution: list[str] | None = None
    num_valid_orders: int | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ToposortSpec:
        lowered = [n.strip().lower() for n in self.nodes]
        if len(set(lowered)) != len(lowered) or not all(lowered):
            raise ValueError("nodes must be distinct and non-empty (case-insensitively)")
        known = set(self.nodes)
        if any(a not in known or b not in known for a, b in self.edges):
            raise ValueError("edges must join listed nodes")
        return self


class Toposort(LogicVerifier):
    name = "logic.toposort"
    description = (
        "Topological order: every node exactly once ('A, B, C', 'A -> B -> C' or a JSON list), "
        "each constraint X-before-Y respected; any valid order scores 1."
    )
    reference_type: ClassVar[Any] = ToposortSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>D and E have no prerequisites</think><answer>E, D, B, A, C</answer>",
        "reference": {"nodes": ["A", "B", "C", "D", "E"], "edges": [["B", "C"], ["D", "A"], ["E", "B"]]},
        "expected_score": 1.0,
    }

    def judge(self, answer: str, prepared: ToposortSpec) -> Check:
        compact = answer.strip()
        if all(len(n) == 1 for n in prepared.nodes) and re.fullmatch(r"[A-Za-z0-9]{2,}", compact):
            # "DEBCA": single-letter nodes written without separators.
            answer = " ".join(compact)
        order = scan_items(answer, prepared.nodes)
        position: dict[str, int] = {}
        for i, node in enumerate(order):
            if node in position:
                raise Invalid(f"{node} appears twice")
            position[node] = i
        missing = [n for n in prepared.nodes if n not in position]
        if missing:
            raise Invalid(f"missing nodes {missing[:8]}")
        for before, after in prepared.edges:
            if position[before] > position[after]:
                raise Invalid(f"{before} must come before {after}")
        return passed("valid order")
