"""From a parse tree to the mathematical object an answer denotes.

This is where the structural parts of the policy live (rule 9): a comma list or "x=1 or x=2"
is an unordered set of solutions, `(a, b)` is a tuple (or an open interval), `x = 5` is the
value 5, "x=2, y=3" is an ordered tuple, an inequality is an interval, `a \\pm b` is the
two-element set {a+b, a-b}, and `p\\%` is a percent.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from referee.verifiers.math._numeric import Expr
from referee.verifiers.math._tree import Node, contains_tag, free_symbols


class ConversionError(ValueError):
    pass


class Value:
    __slots__ = ()


@dataclass(slots=True)
class Scalar(Value):
    expr: Expr
    pct: bool = False
    # Written digits after the point when the answer is a plain decimal literal (policy 5).
    decimals: int | None = None
    literal: bool = False


@dataclass(slots=True)
class Seq(Value):
    items: tuple[Value, ...]
    kind: str = "tuple"  # "tuple" | "pair" (also an open interval) | "ratio" (9:30)


@dataclass(slots=True)
class SetV(Value):
    items: tuple[Value, ...]


@dataclass(slots=True)
class Interval:
    lo: Expr
    hi: Expr
    lo_closed: bool
    hi_closed: bool


@dataclass(slots=True)
class Intervals(Value):
    parts: tuple[Interval, ...]


@dataclass(slots=True)
class Matrix(Value):
    rows: tuple[tuple[Value, ...], ...]


@dataclass(slots=True)
class Assign(Value):
    var: str
    value: Value


@dataclass(slots=True)
class Assigns(Value):
    pairs: tuple[tuple[str, Value], ...]


@dataclass(slots=True)
class Equation(Value):
    lhs: Expr
    rhs: Expr


@dataclass(slots=True)
class Other(Value):
    """A relation or set operation we do not interpret: equal only to the same tree."""

    node: Node


@dataclass(slots=True)
class Unsupported(Value):
    """An answer we can read but not interpret (an intersection of inequalities): equal to nothing."""

    what: str


@dataclass(slots=True)
class Text(Value):
    text: str


_PM_TAGS = frozenset({"pm", "mp", "upm"})
_STRUCT_TAGS = frozenset({"list", "tuple", "set", "interval", "matrix", "rel", "cup", "cap", "setminus"})
_NEG_INF: Node = ("neg", ("inf",))
_POS_INF: Node = ("inf",)
_INEQ = {"<", ">", "le", "ge"}


def _choose_sign(node: Node, sign: int) -> Node:
    """Replace every ± by + (sign=1) or - (sign=-1): correlated signs, the usual reading."""
    tag = node[0]
    if tag in ("pm", "mp"):
        s = sign if tag == "pm" else -sign
        b = _choose_sign(node[2], sign)
        return ("+", _choose_sign(node[1], sign), b if s > 0 else ("neg", b))
    if tag == "upm":
        a = _choose_sign(node[1], sign)
        return a if sign > 0 else ("neg", a)
    if tag in ("n", "s", "c", "inf", "base"):
        return node
    return (tag, *(_choose_sign(x, sign) if isinstance(x, tuple) else x for x in node[1:]))


def scalar(node: Node) -> Value:
    if contains_tag(node, _STRUCT_TAGS):
        raise ConversionError("structure inside an expression")
    if contains_tag(node, _PM_TAGS):
        return SetV((scalar(_choose_sign(node, 1)), scalar(_choose_sign(node, -1))))
    pct = False
    if node[0] == "%":
        pct, node = True, node[1]
    elif node[0] == "neg" and node[1][0] == "%":
        pct, node = True, ("neg", node[1][1])
    core = node[1] if node[0] == "neg" else node
    literal = core[0] == "n"
    decimals = core[2] if literal else None
    return Scalar(Expr(node), pct, decimals, literal)


def _flatten(values: list[Value]) -> tuple[Value, ...]:
    out: list[Value] = []
    for v in values:
        if isinstance(v, SetV):
            out.extend(v.items)
        elif isinstance(v, Assign) and isinstance(v.value, SetV):
            out.extend(v.value.items)
        elif isinstance(v, Assign):
            out.append(v.value)
        else:
            out.append(v)
    return tuple(out)


def combine(values: list[Value], conns: tuple[str, ...] = ()) -> Value:
    """The object a list of answers denotes ("1, 2", "x=1 or x=2", "x=2, y=3", boxes)."""
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, Assign) for v in values):
        names = [v.var for v in values]  # type: ignore[attr-defined]
        if len(set(names)) == len(names):
            return Assigns(tuple((v.var, v.value) for v in values))  # type: ignore[attr-defined]
        return SetV(_flatten(values))
    if all(isinstance(v, Intervals) for v in values):
        if "and" in conns and "or" not in conns:
            return Unsupported("intersection of intervals")
        return Intervals(tuple(p for v in values for p in v.parts))  # type: ignore[attr-defined]
    return SetV(_flatten(values))


def _inequality(ops: tuple[str, ...], operands: tuple[Node, ...]) -> Value | None:
    """`x > 3`, `3 < x`, `-2 \\le x \\le 5`, `x \\ne 1` as intervals (None if not of that form)."""
    lone = [i for i, node in enumerate(operands) if node[0] == "s"]
    if len(lone) != 1 or any(free_symbols(n) for i, n in enumerate(operands) if i != lone[0]):
        return None
    var = lone[0]
    if ops == ("ne",):
        point = Expr(operands[1 - var])
        return Intervals(
            (Interval(Expr(_NEG_INF), point, False, False), Interval(point, Expr(_POS_INF), False, False))
        )
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
    if len(operands) > 3:
        return None
    return Intervals((Interval(lo, hi, lo_closed, hi_closed),))


def _is_function_head(lhs: Node, rhs: Node) -> bool:
    """`f(x)` on the left of `=`: a symbol applied to a symbol that the right side uses."""
    return (
        lhs[0] == "*"
        and len(lhs) == 3
        and lhs[1][0] == "s"
        and lhs[2][0] == "s"
        and lhs[2][1] in free_symbols(rhs)
        and lhs[1][1] not in free_symbols(rhs)
    )


def _relation(node: Node) -> Value:
    ops, operands = node[1], node[2]
    lhs, last = operands[0], operands[-1]
    if all(op == "=" for op in ops):
        if len(operands) == 2 and last[0] == "s" and not free_symbols(lhs):
            return Assign(last[1], to_value(lhs))  # "3 = x"
        if _is_function_head(lhs, last):
            return Assign(lhs[1][1], to_value(last))  # "f(x) = 2x + 3"
        if lhs[0] == "s" and (len(operands) > 2 or lhs[1] not in free_symbols(last)):
            return Assign(lhs[1], to_value(last))
        point = lhs[0] == "tuple" and last[0] == "tuple" and len(lhs[1]) == len(last[1])
        if point and all(item[0] == "s" for item in lhs[1]):
            return Assigns(tuple((item[1], to_value(v)) for item, v in zip(lhs[1], last[1], strict=True)))
        if len(operands) > 2 or not free_symbols(lhs):
            return to_value(last)  # "3! = 6", "x = 6/2 = 3": the value stated last
        if contains_tag(lhs, _STRUCT_TAGS) or contains_tag(last, _STRUCT_TAGS):
            return Other(node)
        return Equation(Expr(lhs), Expr(last))
    if ops == ("in",) and lhs[0] == "s":
        return to_value(last)
    if all(op == ":" for op in ops):
        return Seq(tuple(scalar(x) for x in operands), "ratio")
    got = _inequality(ops, operands)
    return got if got is not None else Other(node)


def to_value(node: Node) -> Value:
    tag = node[0]
    if tag == "list":
        return combine([to_value(item) for item in node[2]], node[1])
    if tag == "set":
        return SetV(_flatten([to_value(item) for item in node[1]]))
    if tag == "empty":
        return SetV(())
    if tag == "reals":
        return Intervals((Interval(Expr(_NEG_INF), Expr(_POS_INF), False, False),))
    if tag == "tuple":
        items = tuple(to_value(item) for item in node[1])
        return Seq(items, "pair" if len(items) == 2 else "tuple")
    if tag == "interval":
        return Intervals((Interval(Expr(node[1]), Expr(node[2]), node[3], node[4]),))
    if tag == "cup":
        a, b = to_value(node[1]), to_value(node[2])
        if isinstance(a, SetV) and isinstance(b, SetV):
            return SetV(a.items + b.items)
        ia, ib = as_intervals(a), as_intervals(b)
        if ia is not None and ib is not None:
            return Intervals(ia.parts + ib.parts)
        return Other(node)
    if tag in ("cap", "setminus"):
        return Other(node)
    if tag == "matrix":
        return Matrix(tuple(tuple(to_value(cell) for cell in row) for row in node[1]))
    if tag == "rel":
        return _relation(node)
    return scalar(node)


def as_intervals(value: Value) -> Intervals | None:
    if isinstance(value, Intervals):
        return value
    if isinstance(value, Seq) and value.kind == "pair":
        lo, hi = value.items
        if isinstance(lo, Scalar) and isinstance(hi, Scalar) and not lo.pct and not hi.pct:
            return Intervals((Interval(lo.expr, hi.expr, False, False),))
    if isinstance(value, SetV) and not value.items:
        return Intervals(())
    return None


def percent_readings(value: Scalar) -> list[tuple[Expr, int | None]]:
    """Policy 6: "p%" may be read as p or as p/100 (with its decimals shifted by two)."""
    readings: list[tuple[Expr, int | None]] = [(value.expr, value.decimals if value.literal else None)]
    if value.pct:
        shifted = value.decimals + 2 if value.decimals is not None else None
        readings.append((Expr(("/", value.expr.node, ("n", Fraction(100), None))), shifted))
    return readings
