"""Inequalities as sets of reals (policy rule 19): `x > 3`, `-2 \\le x \\le 5`, `x \\ne 1`,
`-x > -1`, `2 < 2x \\le 6` (linear in one unknown, solved for it), `0 < f(x) < 1` (a label),
`1 \\le |z| \\le 3/2` (the set of z). Each becomes the parts of a union of intervals (`_sets`);
anything else is None, and `_values` keeps it as an uninterpreted relation.
"""

from __future__ import annotations

from fractions import Fraction

from referee.verifiers.math._exact import exact_value
from referee.verifiers.math._labels import is_label, label_name
from referee.verifiers.math._numeric import Expr
from referee.verifiers.math._sets import Part as Interval
from referee.verifiers.math._sets import Undecided, canonical, compare
from referee.verifiers.math._tree import Node, free_symbols

__all__ = ["inequality"]

_NEG_INF: Node = ("neg", ("inf",))
_POS_INF: Node = ("inf",)
_INEQ = {"<", ">", "le", "ge"}


def _linear(node: Node) -> tuple[str, Fraction, Node] | None:
    """node = a*x + b with one symbol x, a nonzero rational a and a symbol-free b: (x, a, b)."""
    symbols = free_symbols(node)
    if len(symbols) != 1:
        return None
    (name,) = symbols
    a, b = _linear_parts(node, name, 0)
    if a is None or a == 0 or b is None:
        return None
    return name, a, b


def _linear_parts(node: Node, name: str, depth: int) -> tuple[Fraction | None, Node | None]:
    """(coefficient of `name`, the rest) of a node linear in `name`; (None, None) if not linear."""
    tag = node[0]
    if depth > 40:
        return None, None
    if name not in free_symbols(node):
        return Fraction(0), node
    if node == ("s", name):
        return Fraction(1), ("n", Fraction(0), None)
    if tag == "neg":
        a, b = _linear_parts(node[1], name, depth + 1)
        return (None, None) if a is None or b is None else (-a, ("neg", b))
    if tag == "+":
        total, rest = Fraction(0), []
        for child in node[1:]:
            a, b = _linear_parts(child, name, depth + 1)
            if a is None or b is None:
                return None, None
            total += a
            rest.append(b)
        return total, ("+", *rest)
    if tag == "*":
        coeff, linear = Fraction(1), None
        for child in node[1:]:
            if name in free_symbols(child):
                if linear is not None:
                    return None, None
                linear = child
                continue
            value = exact_value(child)
            if value is None:
                return None, None
            coeff *= value
        if linear is None:
            return None, None
        a, b = _linear_parts(linear, name, depth + 1)
        if a is None or b is None:
            return None, None
        return a * coeff, ("*", ("n", coeff, None), b)
    if tag == "/" and name not in free_symbols(node[2]):
        d = exact_value(node[2])
        a, b = _linear_parts(node[1], name, depth + 1)
        if not d or a is None or b is None:
            return None, None
        return a / d, ("/", b, node[2])
    return None, None


_FLIP = {"<": ">", ">": "<", "le": "ge", "ge": "le"}


def _solve_for(
    operands: tuple[Node, ...], ops: tuple[str, ...]
) -> tuple[int, str, tuple[Node, ...], tuple[str, ...]] | None:
    """`-x > -1`, `2x + 1 \\le 5`, `0 < 2 - x < 1`: the one operand linear in one symbol becomes
    the symbol itself, the others are solved for it. (index, name, operands, ops) or None."""
    varying = [i for i, node in enumerate(operands) if free_symbols(node)]
    if len(varying) != 1:
        return None
    k = varying[0]
    node = operands[k]
    if node[0] == "s":
        return k, node[1], operands, ops
    if is_label(node):
        return k, label_name(node), operands, ops
    linear = _linear(node)
    if linear is None:
        return None
    name, a, b = linear
    solved = tuple(
        ("s", name) if i == k else ("/", ("+", other, ("neg", b)), ("n", a, None))
        for i, other in enumerate(operands)
    )
    return k, name, solved, (ops if a > 0 else tuple(_FLIP.get(op, op) for op in ops))


_ZERO = ("n", Fraction(0), None)


def _abs_interval(operands: tuple[Node, ...], ops: tuple[str, ...]) -> tuple[Interval, ...] | None:
    """`1 \\le |z| \\le 3/2`, `|x| < 2`, `|x| > 1`: the set of the symbol inside the bars."""
    var = next((i for i, node in enumerate(operands) if free_symbols(node)), None)
    if var is None or operands[var][0] != "f" or operands[var][1] != "abs" or operands[var][2][0] != "s":
        return None
    if any(free_symbols(node) for i, node in enumerate(operands) if i != var):
        return None
    ranged = _interval_of(var, operands, ops)
    if ranged is None or len(ranged) != 1:
        return None
    part = ranged[0]
    if part.lo.node == _NEG_INF:
        part = Interval(Expr(_ZERO), part.hi, True, part.hi_closed)
    try:
        if compare(part.lo, Expr(_ZERO)) < 0:
            return None
    except Undecided:
        return None
    mirrored = Interval(
        Expr(("neg", part.hi.node)), Expr(("neg", part.lo.node)), part.hi_closed, part.lo_closed
    )
    try:
        return tuple(canonical([mirrored, part]))
    except Undecided:
        return None


def inequality(ops: tuple[str, ...], operands: tuple[Node, ...]) -> tuple[Interval, ...] | None:
    """`x > 3`, `3 < x`, `-2 \\le x \\le 5`, `x \\ne 1`, `-x > -1`, `|x| < 2` as the parts of a
    set of reals (None if not of that form)."""
    if len(operands) > 3:
        return None
    absolute = _abs_interval(operands, ops)
    if absolute is not None:
        return absolute
    solved = _solve_for(operands, ops)
    if solved is None:
        return None
    var, _, operands, ops = solved
    return _interval_of(var, operands, ops)


def _interval_of(var: int, operands: tuple[Node, ...], ops: tuple[str, ...]) -> tuple[Interval, ...] | None:
    """The set of operand `var` (the unknown) under a chain of inequalities."""
    if ops == ("ne",):
        point = Expr(operands[1 - var])
        return (Interval(Expr(_NEG_INF), point, False, False), Interval(point, Expr(_POS_INF), False, False))
    if not all(op in _INEQ for op in ops):
        return None
    ascending = all(op in ("<", "le") for op in ops)
    descending = all(op in (">", "ge") for op in ops)
    if not (ascending or descending):
        return None
    if descending:  # read right to left
        operands, ops = operands[::-1], tuple({">": "<", "ge": "le"}[op] for op in ops[::-1])
        var = len(operands) - 1 - var
    lo, hi = Expr(_NEG_INF), Expr(_POS_INF)
    lo_closed = hi_closed = False
    if var > 0:
        lo, lo_closed = Expr(operands[var - 1]), ops[var - 1] == "le"
    if var < len(operands) - 1:
        hi, hi_closed = Expr(operands[var + 1]), ops[var] == "le"
    return (Interval(lo, hi, lo_closed, hi_closed),)
