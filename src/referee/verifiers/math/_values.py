"""From a parse tree to the mathematical object an answer denotes.

This is where the structural parts of the policy live (rule 9): a comma list or "x=1 or x=2"
is an unordered set of solutions, `(a, b)` is a tuple (or an open interval), `x = 5` is the
value 5, "x=2, y=3" is an ordered tuple, an inequality is an interval, `a \\pm b` is the
two-element set {a+b, a-b}, and `p\\%` is a percent.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from referee.verifiers.math._exact import exact_value
from referee.verifiers.math._numeric import Expr
from referee.verifiers.math._sets import Part as Interval
from referee.verifiers.math._sets import Undecided, canonical, compare, difference, intersection
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


def combine(values: list[Value], conns: tuple[str, ...] = ()) -> Value:
    """The object a list of answers denotes ("1, 2", "x=1 or x=2", "x=2, y=3", boxes)."""
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
    return SetV(_flatten(values))


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
    if _is_label(node):
        return k, _label_name(node), operands, ops
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


def _abs_interval(operands: tuple[Node, ...], ops: tuple[str, ...]) -> Value | None:
    """`1 \\le |z| \\le 3/2`, `|x| < 2`, `|x| > 1`: the set of the symbol inside the bars."""
    var = next((i for i, node in enumerate(operands) if free_symbols(node)), None)
    if var is None or operands[var][0] != "f" or operands[var][1] != "abs" or operands[var][2][0] != "s":
        return None
    if any(free_symbols(node) for i, node in enumerate(operands) if i != var):
        return None
    ranged = _interval_of(var, operands, ops)
    if ranged is None or len(ranged.parts) != 1:
        return None
    part = ranged.parts[0]
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
        return Intervals(tuple(canonical([mirrored, part])))
    except Undecided:
        return None


def _inequality(ops: tuple[str, ...], operands: tuple[Node, ...]) -> Value | None:
    """`x > 3`, `3 < x`, `-2 \\le x \\le 5`, `x \\ne 1`, `-x > -1`, `|x| < 2` as intervals (None
    if not of that form)."""
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


def _interval_of(var: int, operands: tuple[Node, ...], ops: tuple[str, ...]) -> Intervals | None:
    """The set of operand `var` (the unknown) under a chain of inequalities."""
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
    return Intervals((Interval(lo, hi, lo_closed, hi_closed),))


def _is_label(node: Node) -> bool:
    """A name on the left of `=` rather than an expression: `AB`, `f(x)`, `|AB|`, `a_n`, `ABC`
    (of `\\angle ABC`): symbols side by side, possibly in absolute value bars."""
    if node[0] == "s":
        return True
    if node[0] == "f" and node[1] == "abs":
        return _is_label(node[2])
    return node[0] == "*" and len(node) <= 9 and all(child[0] == "s" for child in node[1:])


def _label_name(node: Node) -> str:
    if node[0] == "s":
        return str(node[1])
    if node[0] == "f":
        return f"|{_label_name(node[2])}|"
    return "".join(_label_name(child) for child in node[1:])


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
            if all(_is_label(x) for x in left) and not any(free_symbols(x) for x in right):
                return Assign(":".join(_label_name(x) for x in left), _ratio_or_scalar(right))
        return Other(node)
    if all(op == "=" for op in ops):
        if len(operands) == 2 and last[0] == "s" and not free_symbols(lhs):
            return Assign(last[1], to_value(lhs))  # "3 = x"
        if _is_function_head(lhs, last):
            return Assign(lhs[1][1], to_value(last))  # "f(x) = 2x + 3"
        if lhs[0] == "s" and (len(operands) > 2 or lhs[1] not in free_symbols(last)):
            return Assign(lhs[1], to_value(last))
        if len(operands) == 2 and _is_label(lhs) and not free_symbols(last):
            return Assign(_label_name(lhs), to_value(last))  # "|AB| = 1", "f(x) = 1"
        point = lhs[0] == "tuple" and last[0] == "tuple" and len(lhs[1]) == len(last[1])
        if point and all(item[0] == "s" for item in lhs[1]):
            return Assigns(tuple((item[1], to_value(v)) for item, v in zip(lhs[1], last[1], strict=True)))
        if len(operands) > 2 or not (free_symbols(lhs) or free_symbols(last)):
            return to_value(last)  # "3! = 6", "x = 6/2 = 3": the value stated last
        if contains_tag(lhs, _STRUCT_TAGS) or contains_tag(last, _STRUCT_TAGS):
            return Other(node)
        return Equation(Expr(lhs), Expr(last))  # "7 = 11a + c" is an equation, not 11a + c
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
    if tag in ("cup", "cap", "setminus"):
        return _set_operation(node)
    if tag == "matrix":
        return Matrix(tuple(tuple(to_value(cell) for cell in row) for row in node[1]))
    if tag in ("*", "neg") and contains_tag(node, _MATRIX_TAG):
        return _scaled_matrix(node)
    if tag == "rel":
        return _relation(node)
    return scalar(node)


_MATRIX_TAG = frozenset({"matrix"})


def _scaled_matrix(node: Node) -> Value:
    """`2\\begin{pmatrix}1\\\\3\\end{pmatrix}`, `-\\begin{pmatrix}...`: a scalar times a matrix."""
    factors = list(node[1:]) if node[0] == "*" else [("n", Fraction(-1), None), node[1]]
    matrices = [f for f in factors if f[0] == "matrix"]
    scalars = [f for f in factors if f[0] != "matrix"]
    if len(matrices) != 1 or any(contains_tag(f, _STRUCT_TAGS) for f in scalars):
        raise ConversionError("matrix inside an expression")
    rows = []
    for row in matrices[0][1]:
        if any(contains_tag(cell, _STRUCT_TAGS) for cell in row):
            raise ConversionError("structure inside a scaled matrix")
        rows.append(tuple(scalar(("*", *scalars, cell)) for cell in row))
    return Matrix(tuple(rows))


def _set_operation(node: Node) -> Value:
    """`A \\cup B`, `A \\cap B`, `A \\setminus B` of intervals and finite sets of reals, in the
    canonical form of `_sets`; a union of finite sets stays a finite set."""
    a, b = to_value(node[1]), to_value(node[2])
    if node[0] == "cup" and isinstance(a, SetV) and isinstance(b, SetV):
        return SetV(a.items + b.items)
    pa, pb = _as_parts(a), _as_parts(b)
    if pa is None or pb is None:
        return Other(node)
    try:
        if node[0] == "cup":
            return Intervals(tuple(canonical(pa + pb)))
        if node[0] == "cap":
            return Intervals(tuple(intersection(canonical(pa), canonical(pb))))
        return Intervals(tuple(difference(pa, pb)))
    except Undecided:
        return Other(node)


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
