"""Value equality of expression trees: exact rationals first, then bounded high-precision
numerics at pseudo-random points.

Why not a CAS: equality of the expressions that appear as answers is decided reliably and
cheaply by evaluating both sides exactly (Python `Fraction`) or, when irrational, at 320 bits
with mpmath, and comparing to a relative 2^-300. A rounded decimal (3.1416 vs pi, 0.333333 vs
1/3) or a planted perturbation (`\\pi + 10^{-70}`) differs by far more than that, so exactness
(policy 5) falls out of the precision. There is no absolute tolerance: `e^{-1000}` is not 0.
What 320 bits cannot settle (a side near 0, cancellation, a term below the precision) is
redone at 1024 bits (`same_value`).

How a tree is evaluated, and why that is bounded, is in `_evaluate`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from referee.verifiers.math._evaluate import (
    CONTEXTS,
    CTX,
    POINTS,
    REL_BITS,
    Evaluator,
    Undefined,
)
from referee.verifiers.math._exact import exact_value
from referee.verifiers.math._tree import (
    BIGOPS,
    Node,
    contains_tag,
    free_symbols,
    infinity_sign,
    tree_depth,
)

_MISSING: Any = object()
# Numeric agreement proves equality only for trees this shallow: a value 2^-k away from a simple
# number, with k beyond the working precision, needs a deep tree to be written (the finite nested
# radical sqrt(2+sqrt(2+...)) of 150 levels is within 2^-300 of 2). Deeper trees are decided
# exactly (`Fraction`: a continued fraction 100 levels deep) or not at all.
MAX_NUMERIC_DEPTH = 200
_REL = tuple(ctx.ldexp(1, -bits) for ctx, bits in zip(CONTEXTS, REL_BITS, strict=True))
_NEAR = CTX.ldexp(1, -40)  # closer than this at 320 bits (or a side this small): look again
# Rounding noise shrinks by ~2^-700 from 320 to 1024 bits; a real difference does not move.
_SHRINK = CTX.ldexp(1, -256)


class Expr:
    """An expression tree with its evaluations cached (a gold is evaluated once per group)."""

    __slots__ = ("_depth", "_exact", "_values", "node", "symbols")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.symbols = free_symbols(node)
        self._exact: Any = _MISSING
        self._depth = 0
        self._values: dict[tuple[int, int], Any] = {}

    def depth(self) -> int:
        if not self._depth:
            self._depth = tree_depth(self.node)
        return self._depth

    # Picklable without its caches (numbers of a private mpmath context do not pickle).
    def __getstate__(self) -> Node:
        return self.node

    def __setstate__(self, node: Node) -> None:
        self.__init__(node)  # type: ignore[misc]

    def exact(self) -> Fraction | None:
        if self._exact is _MISSING:
            self._exact = exact_value(self.node)
        return self._exact

    def sample(self, point: int, level: int = 0) -> tuple[Any, bool]:
        """(value, imprecise) at a point and precision level; raises Undefined (cached too)."""
        got = self._values.get((point, level), _MISSING)
        if got is _MISSING:
            ctx = CONTEXTS[level]
            try:
                evaluator = Evaluator(point, exact_value, ctx)
                value = evaluator.value_of(self.node)
                got = (value, evaluator.imprecise) if ctx.isfinite(value) else Undefined("not finite")
            except Undefined as exc:
                got = exc
            except (ValueError, ZeroDivisionError, OverflowError, ArithmeticError) as exc:
                got = Undefined(str(exc)[:80])
            self._values[(point, level)] = got
        if isinstance(got, Undefined):
            raise got
        return got

    def value(self, point: int, level: int = 0) -> Any:
        return self.sample(point, level)[0]


def _sample(expr: Expr, point: int, level: int) -> tuple[Any, bool] | None:
    try:
        return expr.sample(point, level)
    except Undefined:
        return None


def same_value(a: Expr, pa: int, b: Expr, pb: int) -> bool | None:
    """Whether a at point pa equals b at point pb; None when neither side is defined there.

    320 bits decide when the sides agree to 2^-300 relative, or clearly differ. Otherwise
    (nearly equal, one side near 0, a term lost) both are redone at 1024 bits: equal when they
    agree to 2^-1000 there, or when their difference shrank like rounding noise does (`0` vs
    `e^{i\\pi}+1`), never when it stayed put (`0` vs `e^{-1000}`). A lost term at 1024 bits
    leaves the question open, which is "not equal".
    """
    sa, sb = _sample(a, pa, 0), _sample(b, pb, 0)
    if sa is None or sb is None:
        return None if sa is None and sb is None else False
    (va, ia), (vb, ib) = sa, sb
    d1, m1 = abs(va - vb), max(abs(va), abs(vb))
    if not (ia or ib):
        if d1 <= m1 * _REL[0]:
            return True
        if d1 > m1 * _NEAR and min(abs(va), abs(vb)) > m1 * _NEAR:
            return False
    ha, hb = _sample(a, pa, 1), _sample(b, pb, 1)
    if ha is None or hb is None or ha[1] or hb[1]:
        return False
    d2 = abs(ha[0] - hb[0])
    if d2 <= max(abs(ha[0]), abs(hb[0])) * _REL[1]:
        return True
    return not (ia or ib) and bool(d2 <= d1 * _SHRINK)


_INF_TAGS = frozenset({"inf"})


def exprs_equal(a: Expr, b: Expr) -> str | None:
    """The rule that proves a == b, or None.

    With free symbols, the sides must agree at every sample point (both signs, magnitudes
    below and above 1) where either is defined: defined on one side only is a difference.
    """
    if a.node == b.node:
        return "structural"
    if a.node[0] in BIGOPS or b.node[0] in BIGOPS:
        return _bigops_equal(a.node, b.node)
    if contains_tag(a.node, _INF_TAGS) or contains_tag(b.node, _INF_TAGS):
        sa, sb = infinity_sign(a.node), infinity_sign(b.node)
        return "infinity" if sa is not None and sa == sb else None
    ea, eb = a.exact(), b.exact()
    if ea is not None and eb is not None:
        return "exact" if ea == eb else None
    if max(a.depth(), b.depth()) > MAX_NUMERIC_DEPTH:
        return None  # a nested radical 200 levels deep is within 2^-400 of its limit
    symbolic = bool(a.symbols | b.symbols)
    agreed = 0
    for point in range(POINTS if symbolic else 1):
        same = same_value(a, point, b, point)
        if same is False:
            return None
        agreed += same is True
    if not agreed:
        return None
    return "symbolic" if symbolic else "numeric"


def _bigops_equal(a: Node, b: Node) -> str | None:
    """A sum (product) left unexpanded has no value: equal to another when the operator is
    the same, the bounds are equal and the bodies are equal as functions of the index and the
    other symbols (the index is free in a body taken out of its sum). Sufficient, not
    necessary: `\\sum_{k=1}^{n} k` is not shown equal to `n(n+1)/2`. The parser names indices
    by nesting level, so `\\sum_j F_j` and `\\sum_k F_k` have the same body."""
    if a[0] != b[0] or a[1] != b[1]:
        return None
    for x, y in ((a[2], b[2]), (a[3], b[3]), (a[4], b[4])):
        if exprs_equal(Expr(x), Expr(y)) is None:
            return None
    return "bounded-" + str(a[0])


def real_value(expr: Expr) -> Any | None:
    """The value of a symbol-free expression as a trustworthy real mpf, or None.

    An imaginary part counts as 0 only when it is exactly 0 or shrinks like rounding noise
    at 1024 bits (`e^{i\\pi}`); a value with a lost term is read at 1024 bits.
    """
    if expr.symbols:
        return None
    low = _sample(expr, 0, 0)
    if low is None:
        return None
    value, imprecise = low
    if CTX.im(value) == 0 and not imprecise:
        return CTX.re(value)
    high = _sample(expr, 0, 1)
    if high is None or high[1]:
        return None
    im_high = abs(CONTEXTS[1].im(high[0]))
    if im_high != 0 and (imprecise or im_high > abs(CTX.im(value)) * _SHRINK):
        return None
    return CONTEXTS[1].re(high[0])


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
    """The value rounded half away from zero to `decimals` places (None if not a real number);
    negative places round to tens, hundreds, ... (`6.02\\times10^{23}` is rounded at 10^21)."""
    if abs(decimals) > 4000:
        return None
    scale = Fraction(10) ** decimals
    exact = expr.exact()
    if exact is not None:
        rounded = math.floor(abs(exact) * scale + Fraction(1, 2))
        return (rounded if exact >= 0 else -rounded) / scale
    real = real_value(expr)
    if real is None or real.context.mag(real) > 4000:
        return None
    ctx = real.context
    scaled = abs(real) * 10**decimals if decimals >= 0 else abs(real) / 10 ** (-decimals)
    rounded = int(ctx.floor(scaled + ctx.mpf(1) / 2))
    return (rounded if real >= 0 else -rounded) / scale


def numeric_sort_key(expr: Expr) -> float | None:
    """A float to order interval endpoints (infinities included), None if not real."""
    sign = infinity_sign(expr.node)
    if sign is not None:
        return math.inf * sign
    real = real_value(expr)
    if real is None:
        return None
    if real.context.mag(real) > 1000:
        return math.inf if real > 0 else -math.inf
    return float(real)


_ZERO = Expr(("n", Fraction(0), None))


def proportional(f: Expr, g: Expr) -> bool:
    """f = c*g for a nonzero constant c at every sample point (two equations f=0, g=0 agree):
    f/g takes one nonzero value at all points."""
    ratio = Expr(("/", f.node, g.node))
    if same_value(ratio, 0, ratio, 0) is not True or same_value(ratio, 0, _ZERO, 0) is not False:
        return False
    return all(same_value(ratio, point, ratio, 0) is True for point in range(1, POINTS))
