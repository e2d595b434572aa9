"""Sets of real numbers as finite unions of intervals, in one canonical form.

`[0,\\infty) \\setminus \\{1\\}`, `[0,1) \\cup (1,\\infty)`, `x \\ne 1` restricted to x >= 0 and
`(0,1) \\cup [1,2]` vs `(0,2]` are the same sets written differently; the canonical form (sorted,
disjoint, non-touching parts, no empty part) makes them compare part by part. Points are closed
degenerate intervals `[a, a]`.

Endpoints are ordered by value: equal when `exprs_equal` proves it, otherwise by their real
values at 320 bits, and only when those differ clearly (a gap below 2^-200 relative is left
undecided). Whatever cannot be ordered (a symbolic endpoint, a complex number, a near-tie)
raises `Undecided`, so the caller falls back to "not equal": the algebra may miss an equality,
never invent one. Work is quadratic in the number of parts, which is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from referee.verifiers.math._numeric import CTX, Expr, exprs_equal, real_value
from referee.verifiers.math._tree import infinity_sign

MAX_PARTS = 64
_GAP = CTX.ldexp(1, -200)


class Undecided(ValueError):
    """Two endpoints could not be ordered with certainty."""


@dataclass(frozen=True, slots=True)
class Part:
    lo: Expr
    hi: Expr
    lo_closed: bool
    hi_closed: bool


NEG_INF = Expr(("neg", ("inf",)))
POS_INF = Expr(("inf",))


def _key(expr: Expr) -> tuple[int, Any]:
    sign = infinity_sign(expr.node)
    if sign is not None:
        return sign, None
    exact = expr.exact()
    if exact is not None:
        return 0, exact
    real = real_value(expr)
    if real is None:
        raise Undecided("endpoint is not a real number")
    return 0, real


def compare(a: Expr, b: Expr) -> int:
    """-1, 0, 1 as a <, =, > b; raises Undecided."""
    (sa, va), (sb, vb) = _key(a), _key(b)
    if sa or sb:
        return (sa > sb) - (sa < sb) if sa != sb else 0
    if isinstance(va, Fraction) and isinstance(vb, Fraction):
        return (va > vb) - (va < vb)
    va, vb = (CTX.mpf(v.numerator) / v.denominator if isinstance(v, Fraction) else v for v in (va, vb))
    if exprs_equal(a, b) is not None:
        return 0
    diff, size = abs(va - vb), max(abs(va), abs(vb), 1)
    if diff <= size * _GAP:
        raise Undecided("endpoints too close to order")
    return 1 if va > vb else -1


def _empty(part: Part) -> bool:
    order = compare(part.lo, part.hi)
    return order > 0 or (order == 0 and not (part.lo_closed and part.hi_closed))


def _lower_first(a: Part, b: Part) -> bool:
    """Whether a starts before b (a closed start before an open one at the same point)."""
    order = compare(a.lo, b.lo)
    return order < 0 or (order == 0 and a.lo_closed and not b.lo_closed)


def canonical(parts: list[Part]) -> list[Part]:
    """Sorted, disjoint, non-touching, non-empty parts of the union of `parts`."""
    if len(parts) > MAX_PARTS:
        raise Undecided("too many parts")
    items = [p for p in parts if not _empty(p)]
    # insertion sort with the exact comparison (a handful of parts)
    ordered: list[Part] = []
    for part in items:
        k = len(ordered)
        while k > 0 and _lower_first(part, ordered[k - 1]):
            k -= 1
        ordered.insert(k, part)
    merged: list[Part] = []
    for part in ordered:
        if merged:
            last = merged[-1]
            gap = compare(last.hi, part.lo)
            if gap > 0 or (gap == 0 and (last.hi_closed or part.lo_closed)):
                end = compare(last.hi, part.hi)
                if end < 0 or (end == 0 and part.hi_closed and not last.hi_closed):
                    merged[-1] = Part(last.lo, part.hi, last.lo_closed, part.hi_closed)
                continue
        merged.append(part)
    return merged


def complement(parts: list[Part]) -> list[Part]:
    """The real line minus a canonical union."""
    out: list[Part] = []
    lo, lo_closed = NEG_INF, False
    for part in parts:
        out.append(Part(lo, part.lo, lo_closed, not part.lo_closed))
        lo, lo_closed = part.hi, not part.hi_closed
    out.append(Part(lo, POS_INF, lo_closed, False))
    return canonical(out)


def intersection(a: list[Part], b: list[Part]) -> list[Part]:
    out: list[Part] = []
    for p in a:
        for q in b:
            lo_order = compare(p.lo, q.lo)
            lo, lo_closed = (p.lo, p.lo_closed) if lo_order > 0 else (q.lo, q.lo_closed)
            if lo_order == 0:
                lo_closed = p.lo_closed and q.lo_closed
            hi_order = compare(p.hi, q.hi)
            hi, hi_closed = (p.hi, p.hi_closed) if hi_order < 0 else (q.hi, q.hi_closed)
            if hi_order == 0:
                hi_closed = p.hi_closed and q.hi_closed
            out.append(Part(lo, hi, lo_closed, hi_closed))
    return canonical(out)


def difference(a: list[Part], b: list[Part]) -> list[Part]:
    return intersection(canonical(a), complement(canonical(b)))


def same_parts(a: list[Part], b: list[Part]) -> bool:
    """Two canonical unions are the same set."""
    if len(a) != len(b):
        return False
    for p, q in zip(a, b, strict=True):
        if (p.lo_closed, p.hi_closed) != (q.lo_closed, q.hi_closed):
            return False
        if exprs_equal(p.lo, q.lo) is None or exprs_equal(p.hi, q.hi) is None:
            return False
    return True
