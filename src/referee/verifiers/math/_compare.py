"""Equality of answer objects (policy rules 4-9). Each function returns the name of the rule
that proved equality, or None."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from referee.verifiers.math._numeric import (
    Expr,
    decimal_digits,
    exprs_equal,
    numeric_sort_key,
    proportional,
    round_half_up,
)
from referee.verifiers.math._sets import Undecided, canonical, same_parts
from referee.verifiers.math._tree import infinity_sign
from referee.verifiers.math._values import (
    Assign,
    Assigns,
    Equation,
    Interval,
    Intervals,
    Matrix,
    Other,
    Scalar,
    Seq,
    SetV,
    Text,
    Value,
    as_intervals,
    percent_readings,
)

MAX_SET_ITEMS = 64  # larger sets are compared only item by item in order (bounded work)
# Decimal golds smaller than this are exact, not rounded: rounding 0.0000001 to 7 places
# would accept anything within 50% of it (tiny values must stay distinct, like 1e-7 vs 2e-7).
ROUNDING_MIN_GOLD = Fraction(1, 1000)


@dataclass(frozen=True, slots=True)
class EqualityRules:
    """How strictly numbers compare (MATH_POLICY.md): rounding of decimal golds can be turned off."""

    rounded_decimal_gold: bool = True


def _precision(expr: Expr, written: int | None) -> int | None:
    """Digits after the point the answer carries; None means unlimited (1/3, pi, ...)."""
    if written is not None:
        return written
    exact = expr.exact()
    return decimal_digits(exact) if exact is not None else None


def scalars_equal(gold: Scalar, got: Scalar, policy: EqualityRules) -> str | None:
    for g_expr, g_decimals in percent_readings(gold):
        for r_expr, r_decimals in percent_readings(got):
            rule = exprs_equal(g_expr, r_expr)
            if rule is not None:
                return rule if not (gold.pct or got.pct) else f"percent/{rule}"
            # Policy 5: a decimal gold is rounded to its k decimals; an answer with more
            # precision that rounds half-up to it is right, one with <= k digits must be exact.
            # A gold in scientific notation is rounded at its mantissa's last digit, however
            # small (policy rule 40): the mantissa states its significant digits.
            g_exact = g_expr.exact()
            if (
                policy.rounded_decimal_gold
                and g_decimals is not None
                and g_exact is not None
                and (gold.scientific or (g_decimals > 0 and abs(g_exact) >= ROUNDING_MIN_GOLD))
            ):
                precision = _precision(r_expr, r_decimals)
                if precision is not None and precision <= g_decimals:
                    continue
                if round_half_up(r_expr, g_decimals) == g_exact:
                    return "rounded"
    return None


def _dedupe(items: tuple[Value, ...], policy: EqualityRules) -> list[Value]:
    out: list[Value] = []
    for item in items:
        if not any(values_equal(seen, item, policy) for seen in out):
            out.append(item)
    return out


def sets_equal(gold: tuple[Value, ...], got: tuple[Value, ...], policy: EqualityRules) -> str | None:
    if len(gold) > MAX_SET_ITEMS or len(got) > MAX_SET_ITEMS:
        if len(gold) != len(got):
            return None
        ok = all(values_equal(a, b, policy) for a, b in zip(gold, got, strict=True))
        return "set" if ok else None
    g_items, r_items = _dedupe(gold, policy), _dedupe(got, policy)
    if len(g_items) != len(r_items):
        return None
    unmatched = list(r_items)
    for g in g_items:
        for k, r in enumerate(unmatched):
            if values_equal(g, r, policy):
                del unmatched[k]
                break
        else:
            return None
    return "set"


def _sequences_equal(gold: tuple[Value, ...], got: tuple[Value, ...], policy: EqualityRules) -> bool:
    return len(gold) == len(got) and all(values_equal(a, b, policy) for a, b in zip(gold, got, strict=True))


def _sorted_parts(value: Intervals) -> list[Interval] | None:
    keyed = []
    for part in value.parts:
        key = numeric_sort_key(part.lo)
        if key is None:
            return None if len(value.parts) > 1 else list(value.parts)
        keyed.append((key, part))
    keyed.sort(key=lambda kv: kv[0])
    return [part for _, part in keyed]


def intervals_equal(gold: Intervals, got: Intervals) -> str | None:
    """Same set of reals: canonical unions compared part by part (`(0,1) \\cup [1,2]` is
    `(0,2]`); endpoints that cannot be ordered fall back to the parts as written."""
    try:
        g_canon, r_canon = canonical(list(gold.parts)), canonical(list(got.parts))
    except Undecided:
        pass
    else:
        return "interval" if same_parts(g_canon, r_canon) else None
    g_parts, r_parts = _sorted_parts(gold), _sorted_parts(got)
    if g_parts is None or r_parts is None:
        return None
    return "interval" if same_parts(g_parts, r_parts) else None


def _matrix_as_seq(value: Matrix) -> tuple[Value, ...] | None:
    rows = value.rows
    if len(rows) == 1:
        return rows[0]
    if all(len(row) == 1 for row in rows):
        return tuple(row[0] for row in rows)
    return None


def _equation_of(value: Value) -> Expr | None:
    """lhs - rhs of an equation, or of an assignment `y = 2x + 3` (as y - (2x + 3))."""
    if isinstance(value, Equation):
        return Expr(("+", value.lhs.node, ("neg", value.rhs.node)))
    if isinstance(value, Assign) and isinstance(value.value, Scalar) and not value.value.pct:
        return Expr(("+", ("s", value.var), ("neg", value.value.expr.node)))
    return None


def _same_sides(gold: Value, got: Value) -> str | None:
    """Two equations with equal sides, in either order: the same equation even where neither
    has a value to test proportionality with (`\\sum_{k=1}^{n} k = S_n`)."""
    if not (isinstance(gold, Equation) and isinstance(got, Equation)):
        return None
    for lhs, rhs in ((got.lhs, got.rhs), (got.rhs, got.lhs)):
        if exprs_equal(gold.lhs, lhs) is not None and exprs_equal(gold.rhs, rhs) is not None:
            return "equation"
    return None


def values_equal(gold: Value, got: Value, policy: EqualityRules) -> str | None:
    if isinstance(gold, Equation) or isinstance(got, Equation):
        f, g = _equation_of(gold), _equation_of(got)
        if f is not None and g is not None and proportional(f, g):
            return "equation"
        return _same_sides(gold, got)
    if isinstance(gold, Assign) and isinstance(got, Assign):
        rule = values_equal(gold.value, got.value, policy)
        if rule is None and gold.var != got.var:
            return None
        if rule is None:
            f, g = _equation_of(gold), _equation_of(got)
            return "equation" if f is not None and g is not None and proportional(f, g) else None
        return rule
    if isinstance(gold, Assign):
        return values_equal(gold.value, got, policy)
    if isinstance(got, Assign):
        return values_equal(gold, got.value, policy)
    if isinstance(gold, Scalar) and isinstance(got, Scalar):
        return scalars_equal(gold, got, policy)
    if isinstance(gold, SetV) and isinstance(got, SetV):
        return sets_equal(gold.items, got.items, policy)
    if isinstance(got, SetV) and got.listed:
        return _list_as_tuple(gold, got, policy)
    if isinstance(gold, SetV) and len(gold.items) == 1:
        return values_equal(gold.items[0], got, policy)
    if isinstance(got, SetV) and len(got.items) == 1:
        return values_equal(gold, got.items[0], policy)
    if isinstance(gold, Seq) and isinstance(got, Seq):
        if (gold.kind == "ratio") != (got.kind == "ratio"):
            return None
        return "tuple" if _sequences_equal(gold.items, got.items, policy) else None
    if isinstance(gold, Assigns) and isinstance(got, Assigns):
        g_map, r_map = dict(gold.pairs), dict(got.pairs)
        if set(g_map) == set(r_map):
            ok = all(values_equal(g_map[k], r_map[k], policy) for k in g_map)
            return "tuple" if ok else None
        gold_items, got_items = tuple(v for _, v in gold.pairs), tuple(v for _, v in got.pairs)
        return "tuple" if _sequences_equal(gold_items, got_items, policy) else None
    if isinstance(gold, Assigns) or isinstance(got, Assigns):
        g_seq = _as_sequence(gold)
        r_seq = _as_sequence(got)
        if g_seq is None or r_seq is None:
            return None
        return "tuple" if _sequences_equal(g_seq, r_seq, policy) else None
    if isinstance(gold, Matrix) or isinstance(got, Matrix):
        if isinstance(gold, Matrix) and isinstance(got, Matrix):
            shape_ok = len(gold.rows) == len(got.rows) and all(
                len(a) == len(b) for a, b in zip(gold.rows, got.rows, strict=True)
            )
            if shape_ok and all(
                _sequences_equal(a, b, policy) for a, b in zip(gold.rows, got.rows, strict=True)
            ):
                return "matrix"
            return None
        # `[0.5, 1]` against a vector gold is the pair, not the interval (policy rule 48); a
        # gold `[0.5, 1]` may be an interval, which no vector equals
        g_seq = _as_sequence(gold)
        r_seq = _as_sequence(got) or (_bracketed(got) if isinstance(gold, Matrix) else None)
        if g_seq is None or r_seq is None:
            return None
        return "matrix" if _sequences_equal(g_seq, r_seq, policy) else None
    gi, ri = as_intervals(gold), as_intervals(got)
    if gi is not None and ri is not None and (isinstance(gold, Intervals) or isinstance(got, Intervals)):
        return intervals_equal(gi, ri)
    if isinstance(gold, Text) and isinstance(got, Text):
        return "string" if gold.text == got.text else None
    if isinstance(gold, Other) and isinstance(got, Other):
        return "structural" if gold.node == got.node else None
    return None


def _list_as_tuple(gold: Value, got: SetV, policy: EqualityRules) -> str | None:
    """Policy rule 29: a bare list `1, 3` against an ordered gold (a tuple `(1,3)`, labelled
    values `x=-5, p=14/3`, a vector) is that tuple, compared in order. A gold pair with an
    infinite end is an interval, which a list of numbers never equals."""
    ordered = _as_sequence(gold)
    if ordered is None or any(_infinite(item) for item in ordered):
        return None
    return "tuple" if _sequences_equal(ordered, got.items, policy) else None


def _bracketed(value: Value) -> tuple[Value, ...] | None:
    return value.bracketed if isinstance(value, Intervals) else None


def _infinite(value: Value) -> bool:
    return isinstance(value, Scalar) and infinity_sign(value.expr.node) is not None


def _as_sequence(value: Value) -> tuple[Value, ...] | None:
    if isinstance(value, Assigns):
        return tuple(v for _, v in value.pairs)
    if isinstance(value, Seq) and value.kind != "ratio":
        return value.items
    if isinstance(value, Matrix):
        return _matrix_as_seq(value)
    return None
