"""From a parse tree to the mathematical object an answer denotes.

This is where the structural parts of the policy live (rule 9): a comma list or "x=1 or x=2"
is an unordered set of solutions, `(a, b)` is a tuple (or an open interval), `x = 5` is the
value 5, "x=2, y=3" is an ordered tuple, an inequality is an interval (`_inequalities`),
`a \\pm b` is the two-element set {a+b, a-b}, `p\\%` is a percent, `A + B` of matrices is a
matrix (`_matrices`), and `label = value` is the value (`_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from referee.verifiers.math._inequalities import inequality
from referee.verifiers.math._labels import is_function_head, is_label, is_ratio_label, label_name
from referee.verifiers.math._matrices import MatrixError, ShapeMismatch, is_matrix_expression, matrix_entries
from referee.verifiers.math._numeric import Expr
from referee.verifiers.math._sets import Part as Interval
from referee.verifiers.math._sets import Undecided, canonical, compare, difference, intersection
from referee.verifiers.math._tree import STRUCT_TAGS, Node, contains_tag, free_symbols


class ConversionError(ValueError):
    pass


class Value:
    __slots__ = ()


@dataclass(slots=True)
class Scalar(Value):
    expr: Expr
    pct: bool = False
    # Written digits after the point when the answer is a plain decimal literal (policy 5); for
    # scientific notation, the decimal place of the mantissa's last digit (`2.31\times10^{-3}`: 5).
    decimals: int | None = None
    literal: bool = False
    scientific: bool = False


@dataclass(slots=True)
class Seq(Value):
    items: tuple[Value, ...]
    kind: str = "tuple"  # "tuple" | "pair" (also an open interval) | "ratio" (9:30)


@dataclass(slots=True)
class SetV(Value):
    items: tuple[Value, ...]
    # Written as a bare comma list (`1, 3`, `{1,3}`), items in the order written: a set of
    # solutions, or the ordered tuple when the gold is one (`_compare`, policy rule 29).
    listed: bool = False


@dataclass(slots=True)
class Intervals(Value):
    parts: tuple[Interval, ...]
    # `[a, b]` as written: against a vector gold it is the pair (a, b) (policy rule 48)
    bracketed: tuple[Value, Value] | None = None


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
_NEG_INF: Node = ("neg", ("inf",))
_POS_INF: Node = ("inf",)


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
    if contains_tag(node, STRUCT_TAGS):
        raise ConversionError("structure inside an expression")
    if contains_tag(node, _PM_TAGS):
        return SetV((scalar(_choose_sign(node, 1)), scalar(_choose_sign(node, -1))))
    pct = False
    if node[0] == "%":
        pct, node = True, node[1]
    elif node[0] == "neg" and node[1][0] == "%":
        pct, node = True, ("neg", node[1][1])
    core = node[1] if node[0] == "neg" else node
    if core[0] == "n":
        return Scalar(Expr(node), pct, core[2], literal=True)
    place = _scientific_place(core)
    return Scalar(Expr(node), pct, place, literal=place is not None, scientific=place is not None)


def _scientific_place(node: Node) -> int | None:
    """`m \\times 10^{e}` with a decimal mantissa (`2.3148\\times10^{-3}`, `6.02e23`): the decimal
    place of the mantissa's last digit, d - e for d digits after its point (policy rule 40).
    None for anything else, a whole mantissa included (`3\\times10^8` is exact)."""
    if node[0] != "*" or len(node) != 3:
        return None
    mantissa, power = node[1], node[2]
    if mantissa[0] != "n" or mantissa[2] is None or power[0] != "^" or power[1] != ("n", Fraction(10), None):
        return None
    exponent, sign = power[2], 1
    if exponent[0] == "neg":
        exponent, sign = exponent[1], -1
    if exponent[0] != "n" or exponent[2] is not None or exponent[1].denominator != 1:
        return None
    return int(mantissa[2] - sign * exponent[1])


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


def _solution_rows(values: list[Value]) -> Value | None:
    """ "p=5, q=2; p=7, q=2": assignments whose names repeat in the same order are several
    solutions of a system, one ordered tuple each (None if the names do not repeat so)."""
    names = [v.var for v in values if isinstance(v, Assign)]
    width = names.index(names[0], 1) if names[0] in names[1:] else 0
    if width < 2 or len(names) % width or names[:width] * (len(names) // width) != names:
        return None
    if len(set(names[:width])) != width:
        return None
    rows = [values[k : k + width] for k in range(0, len(values), width)]
    return SetV(tuple(Assigns(tuple((v.var, v.value) for v in row)) for row in rows))  # type: ignore[attr-defined]


def combine(values: list[Value], conns: tuple[str, ...] = (), listed: bool = False) -> Value:
    """The object a list of answers denotes ("1, 2", "x=1 or x=2", "x=2, y=3", boxes).
    `listed`: written as one bare comma list (not boxes, not joined by "or"/"and")."""
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, Assign) for v in values):
        names = [v.var for v in values]  # type: ignore[attr-defined]
        if len(set(names)) == len(names):
            return Assigns(tuple((v.var, v.value) for v in values))  # type: ignore[attr-defined]
        rows = _solution_rows(values)
        return rows if rows is not None else SetV(_flatten(values))
    if all(isinstance(v, Intervals) for v in values):
        if "and" in conns and "or" not in conns:
            return Unsupported("intersection of intervals")
        return Intervals(tuple(p for v in values for p in v.parts))  # type: ignore[attr-defined]
    # Only a list of plain values keeps its order: a `\pm` item or an assignment is a set.
    in_order = listed and not conns and not any(isinstance(v, SetV | Assign | Assigns) for v in values)
    return SetV(_flatten(values), listed=in_order)


def _segments(ops: tuple[str, ...], operands: tuple[Node, ...]) -> list[tuple[Node, ...]] | None:
    """`V_1 : V_2 = 11 : 21` split at its `=` signs into ratios (None if other relations)."""
    segments: list[list[Node]] = [[operands[0]]]
    for op, operand in zip(ops, operands[1:], strict=True):
        if op == "=":
            segments.append([operand])
        elif op == ":":
            segments[-1].append(operand)
        else:
            return None
    return [tuple(segment) for segment in segments]


def _ratio_or_scalar(segment: tuple[Node, ...]) -> Value:
    return to_value(segment[0]) if len(segment) == 1 else Seq(tuple(scalar(x) for x in segment), "ratio")


def _approximation(ops: tuple[str, ...], operands: tuple[Node, ...]) -> Node:
    """`\\frac{\\sqrt3}{3} \\approx 0.577`: the exact value before the first `\\approx` is the
    answer; `x \\approx 2.83` (nothing exact before it) states 2.83."""
    k = ops.index("approx")
    if not free_symbols(operands[k]):
        return ("rel", ops[:k], operands[: k + 1]) if k else operands[0]
    return ("rel", tuple("=" if op == "approx" else op for op in ops), operands)


def _relation(node: Node) -> Value:
    ops, operands = node[1], node[2]
    if "approx" in ops:
        return to_value(_approximation(ops, operands))
    lhs, last = operands[0], operands[-1]
    if ":" in ops and "=" in ops:
        segments = _segments(ops, operands)
        if segments is not None and len(segments) == 2:
            left, right = segments
            if all(is_label(x) for x in left) and not any(free_symbols(x) for x in right):
                return Assign(":".join(label_name(x) for x in left), _ratio_or_scalar(right))
        return Other(node)
    if all(op == "=" for op in ops):
        if len(operands) == 2 and last[0] == "s" and not free_symbols(lhs):
            return Assign(last[1], to_value(lhs))  # "3 = x"
        if is_function_head(lhs, last):
            return Assign(lhs[1][1], to_value(last))  # "f(x) = 2x + 3"
        if lhs[0] == "s" and (len(operands) > 2 or lhs[1] not in free_symbols(last)):
            return Assign(lhs[1], to_value(last))
        if len(operands) == 2 and (is_label(lhs) or is_ratio_label(lhs)) and not free_symbols(last):
            return Assign(label_name(lhs), to_value(last))  # "|AB| = 1", "f(x) = 1", "NO/BO = 2"
        point = lhs[0] == "tuple" and last[0] == "tuple" and len(lhs[1]) == len(last[1])
        if point and all(item[0] == "s" for item in lhs[1]):
            return Assigns(tuple((item[1], to_value(v)) for item, v in zip(lhs[1], last[1], strict=True)))
        if len(operands) > 2 or not (free_symbols(lhs) or free_symbols(last)):
            return to_value(last)  # "3! = 6", "x = 6/2 = 3": the value stated last
        if contains_tag(lhs, STRUCT_TAGS) or contains_tag(last, STRUCT_TAGS):
            return Other(node)
        return Equation(Expr(lhs), Expr(last))  # "7 = 11a + c" is an equation, not 11a + c
    if ops == ("in",) and lhs[0] == "s":
        return to_value(last)
    if all(op == ":" for op in ops):
        return Seq(tuple(scalar(x) for x in operands), "ratio")
    parts = inequality(ops, operands)
    return Intervals(parts) if parts is not None else Other(node)


def answer_value(node: Node) -> Value:
    """The object a whole answer denotes. As `to_value`, except that a bare comma list that is
    the whole answer keeps its order (policy rule 29); inside a relation or a structure it is a
    set (`x \\in {1, 2}`)."""
    if node[0] == "list":
        return combine([to_value(item) for item in node[2]], node[1], listed=True)
    return to_value(node)


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
        closed = node[3] and node[4]
        pair = (to_value(node[1]), to_value(node[2])) if closed else None
        return Intervals((Interval(Expr(node[1]), Expr(node[2]), node[3], node[4]),), pair)
    if tag in ("cup", "cap", "setminus"):
        return _set_operation(node)
    if tag == "matrix":
        return Matrix(tuple(tuple(to_value(cell) for cell in row) for row in node[1]))
    if tag in _MATRIX_ARITHMETIC and is_matrix_expression(node):
        return _matrix_value(node)
    if tag == "rel":
        return _relation(node)
    return scalar(node)


_MATRIX_ARITHMETIC = frozenset({"+", "*", "neg", "/", "^"})


def _matrix_value(node: Node) -> Value:
    """`A + B`, `2A`, `AB`, `A^T` (policy rules 21 and 30): the resulting matrix; shapes that
    do not fit make an answer equal to nothing."""
    try:
        rows = matrix_entries(node)
    except ShapeMismatch as exc:
        return Unsupported(str(exc))
    except MatrixError as exc:
        raise ConversionError(str(exc)) from exc
    return Matrix(tuple(tuple(scalar(cell) for cell in row) for row in rows))


def _set_operation(node: Node) -> Value:
    """`A \\cup B`, `A \\cap B`, `A \\setminus B` of intervals and finite sets of reals, in the
    canonical form of `_sets`; a union of finite sets stays a finite set."""
    a, b = _set_operand(node[1]), _set_operand(node[2])
    if node[0] == "cup" and isinstance(a, SetV) and isinstance(b, SetV):
        return SetV(a.items + b.items)
    pa, pb = _as_parts(a), _as_parts(b)
    if pa is None or pb is None:
        return Other(node)
    try:
        if node[0] == "cup":
            parts = canonical(pa + pb)
        elif node[0] == "cap":
            parts = intersection(canonical(pa), canonical(pb))
        else:
            parts = difference(pa, pb)
        if parts and all(p.lo_closed and p.hi_closed and compare(p.lo, p.hi) == 0 for p in parts):
            return SetV(tuple(Scalar(p.lo) for p in parts))  # `\{1,2\} \cap \{2,3\}` is {2}
        return Intervals(tuple(parts))
    except Undecided:
        return Other(node)


def _set_operand(node: Node) -> Value:
    """An operand of a set operation is a set: a LaTeX group `{1, 2}` there is the set {1, 2}
    and a lone number `{0.5}` (its braces are gone by now) the set {0.5} (policy rule 41)."""
    if node[0] == "list" and not node[1]:
        return SetV(_flatten([to_value(item) for item in node[2]]))
    value = to_value(node)
    if isinstance(value, Scalar) and not value.pct:
        return SetV((value,))
    return value


def _as_parts(value: Value) -> list[Interval] | None:
    """Intervals, an open pair `(a, b)` or a finite set of real numbers `{1, 2}` as parts."""
    ranged = as_intervals(value)
    if ranged is not None:
        return list(ranged.parts)
    if isinstance(value, SetV) and all(isinstance(v, Scalar) and not v.pct for v in value.items):
        return [Interval(v.expr, v.expr, True, True) for v in value.items]  # type: ignore[attr-defined]
    return None


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
