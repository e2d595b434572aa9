"""Value equality of expression trees: exact rationals first, then bounded high-precision
numerics at pseudo-random points.

Why not a CAS: equality of the expressions that appear as answers is decided reliably and
cheaply by evaluating both sides exactly (Python `Fraction`) or, when irrational, at 320 bits
with mpmath, and comparing to a relative 2^-200. A rounded decimal (3.1416 vs pi, 0.333333 vs
1/3) differs by far more than that, so exactness (policy 5) falls out of the precision.

How a tree is evaluated, and why that is bounded, is in `_evaluate`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from referee.verifiers.math._evaluate import (
    ABS_TOL,
    CTX,
    POINTS,
    REL_TOL,
    DomainError,
    Evaluator,
    exact_value,
)
from referee.verifiers.math._tree import Node, contains_tag, free_symbols, infinity_sign

_MISSING: Any = object()


class Expr:
    """An expression tree with its evaluations cached (a gold is evaluated once per group)."""

    __slots__ = ("_exact", "_values", "node", "symbols")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.symbols = free_symbols(node)
        self._exact: Any = _MISSING
        self._values: dict[int, Any] = {}

    # Picklable without its caches (numbers of a private mpmath context do not pickle).
    def __getstate__(self) -> Node:
        return self.node

    def __setstate__(self, node: Node) -> None:
        self.__init__(node)  # type: ignore[misc]

    def exact(self) -> Fraction | None:
        if self._exact is _MISSING:
            self._exact = exact_value(self.node)
        return self._exact

    def value(self, point: int) -> Any:
        """Numeric value at a point; raises DomainError (cached too)."""
        got = self._values.get(point, _MISSING)
        if got is _MISSING:
            try:
                got = Evaluator(point, exact_value).ev(self.node)
                if not CTX.isfinite(got):
                    got = DomainError("not finite")
            except DomainError as exc:
                got = exc
            except (ValueError, ZeroDivisionError, OverflowError, ArithmeticError) as exc:
                got = DomainError(str(exc)[:80])
            self._values[point] = got
        if isinstance(got, DomainError):
            raise got
        return got


def close(a: Any, b: Any) -> bool:
    diff = abs(a - b)
    return bool(diff <= max(abs(a), abs(b)) * REL_TOL or diff <= ABS_TOL)


_INF_TAGS = frozenset({"inf"})


def exprs_equal(a: Expr, b: Expr) -> str | None:
    """The rule that proves a == b, or None."""
    if a.node == b.node:
        return "structural"
    if contains_tag(a.node, _INF_TAGS) or contains_tag(b.node, _INF_TAGS):
        sa, sb = infinity_sign(a.node), infinity_sign(b.node)
        return "infinity" if sa is not None and sa == sb else None
    ea, eb = a.exact(), b.exact()
    if ea is not None and eb is not None:
        return "exact" if ea == eb else None
    symbolic = bool(a.symbols | b.symbols)
    agreed = 0
    for point in range(POINTS if symbolic else 1):
        try:
            va = a.value(point)
        except DomainError:
            va = None
        try:
            vb = b.value(point)
        except DomainError:
            vb = None
        if va is None and vb is None:
            continue
        if va is None or vb is None or not close(va, vb):
            return None
        agreed += 1
    if not agreed:
        return None
    return "symbolic" if symbolic else "numeric"


def decimal_digits(value: Fraction) -> int | None:
    """Digits after the point of a terminating decimal, None if it does not terminate."""
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    return max(twos, fives) if den == 1 else None


def round_half_up(expr: Expr, decimals: int) -> Fraction | None:
    """The value rounded half away from zero to `decimals` places (None if not a real number)."""
    scale = 10**decimals
    exact = expr.exact()
    if exact is not None:
        scaled = abs(exact) * scale
        rounded = math.floor(scaled + Fraction(1, 2))
        return Fraction(rounded if exact >= 0 else -rounded, scale)
    if expr.symbols:
        return None
    try:
        value = expr.value(0)
    except DomainError:
        return None
    if abs(CTX.im(value)) > ABS_TOL or CTX.mag(value) > 4000:
        return None
    real = CTX.re(value)
    rounded = int(CTX.floor(abs(real) * scale + CTX.mpf(1) / 2))
    return Fraction(rounded if real >= 0 else -rounded, scale)


def numeric_sort_key(expr: Expr) -> float | None:
    """A float to order interval endpoints (infinities included), None if not real."""
    sign = infinity_sign(expr.node)
    if sign is not None:
        return math.inf * sign
    if expr.symbols:
        return None
    try:
        value = expr.value(0)
    except DomainError:
        return None
    if abs(CTX.im(value)) > ABS_TOL:
        return None
    real = CTX.re(value)
    if CTX.mag(real) > 1000:
        return math.inf if real > 0 else -math.inf
    return float(real)


def proportional(f: Expr, g: Expr) -> bool:
    """f = c*g for a nonzero constant c at every sample point (two equations f=0, g=0 agree)."""
    ratio = None
    for point in range(POINTS + 1):
        try:
            a, b = f.value(point), g.value(point)
        except DomainError:
            return False
        a_zero, b_zero = abs(a) <= ABS_TOL, abs(b) <= ABS_TOL
        if a_zero or b_zero:
            if a_zero != b_zero:
                return False
            continue
        if ratio is None:
            ratio = a / b
        elif not close(a, ratio * b):
            return False
    return True
