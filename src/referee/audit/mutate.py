"""A small AST mutator for Python reference solutions (test-suite strength).

Mutation operators, each a one-site change of the reference:

- `operator`: arithmetic flips (`+`/`-`, `*`->`+`, `//`->`/`, `%`->`//`, `**`->`*`), also in `x += 1`
- `constant`: an integer literal +1 and -1
- `comparison`: `<`/`<=`, `>`/`>=`, `==`/`!=`, `in`/`not in`, `is`/`is not`
- `boolean`: `and`/`or`, a dropped `not`
- `range`: off-by-one in the stop of `range(...)`
- `branch`: an `if` whose body is removed (its `else`, or nothing, runs instead)

Mutants are deterministic, deduplicated by source text, and those identical to the reference
are dropped. No maintained Python mutation library fits here: mutmut and cosmic-ray drive a
project's own test runner on files, not a program judged in a sandbox.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

_BINOP_FLIPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Div,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
_COMPARE_FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True, slots=True)
class Mutant:
    operator: str
    line: int
    description: str
    source: str


class _Sites(ast.NodeTransformer):
    """Walks the tree in a fixed order; counts mutation sites and applies the `target`-th."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.applied: tuple[str, int, str] | None = None

    def _hit(self, operator: str, node: ast.AST, description: str) -> bool:
        index = self.count
        self.count += 1
        if index == self.target:
            self.applied = (operator, getattr(node, "lineno", 0), description)
            return True
        return False

    def _flip_operator(self, node: ast.BinOp | ast.AugAssign, suffix: str) -> None:
        flip = _BINOP_FLIPS.get(type(node.op))
        name = type(node.op).__name__
        if flip and self._hit("operator", node, f"{name}{suffix} -> {flip.__name__}{suffix}"):
            node.op = flip()

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        self._flip_operator(node, "")
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        self._flip_operator(node, "=")
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for i, op in enumerate(node.ops):
            flip = _COMPARE_FLIPS.get(type(op))
            if flip and self._hit("comparison", node, f"{type(op).__name__} -> {flip.__name__}"):
                node.ops[i] = flip()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._hit("boolean", node, f"{type(node.op).__name__} -> {other.__name__}"):
            node.op = other()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._hit("boolean", node, "not x -> x"):
            return node.operand
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool):
            for delta in (1, -1):
                if self._hit("constant", node, f"{value} -> {value + delta}"):
                    return ast.copy_location(ast.Constant(value + delta), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "range" and 1 <= len(node.args) <= 3:
            stop = 0 if len(node.args) == 1 else 1
            for delta, op in ((1, ast.Add), (-1, ast.Sub)):
                if self._hit("range", node, f"range stop {'+' if delta > 0 else '-'} 1"):
                    args = list(node.args)
                    args[stop] = ast.BinOp(left=args[stop], op=op(), right=ast.Constant(1))
                    node.args = args
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        if self._hit("branch", node, "if-branch removed"):
            return node.orelse or [ast.Pass()]
        return node


def mutants(source: str, *, limit: int | None = None) -> list[Mutant]:
    """The distinct one-site mutants of `source` (in site order; evenly thinned to `limit`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    original = ast.unparse(tree)
    seen = {original}
    found: list[Mutant] = []
    for index in _indices(tree):
        sites = _Sites(index)
        mutated = ast.fix_missing_locations(sites.visit(copy.deepcopy(tree)))
        if sites.applied is None:
            continue
        try:
            text = ast.unparse(mutated)
            compile(text, "<mutant>", "exec")  # safe: compiled to drop invalid mutants, never run here
        except (SyntaxError, ValueError, RecursionError):
            continue
        if text in seen:
            continue
        seen.add(text)
        operator, line, description = sites.applied
        found.append(Mutant(operator, line, description, text + "\n"))
    if limit is not None and len(found) > limit:
        step = len(found) / limit
        found = [found[int(i * step)] for i in range(limit)]
    return found


def _indices(tree: ast.AST) -> Iterator[int]:
    counter = _Sites(-1)
    counter.visit(copy.deepcopy(tree))
    yield from range(counter.count)
