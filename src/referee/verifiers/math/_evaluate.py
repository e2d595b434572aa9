"""Evaluation of a parse tree: exact rationals, or numbers at 320 bits at one sample point.

Every operation that could run away is guarded *before* it runs: integer powers and
factorials by the size of their result, trigonometric/exponential functions by the size of
their argument. A sub-expression too large to evaluate (`(10^{10^{10}})!`) becomes an *opaque*
value: a pseudo-random number keyed by its structure, so `X - X` is still 0 and `X` equals
only the same `X`. That can only miss an equality, never invent one.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath

from referee.verifiers.math._tree import Node

PREC = 320
CTX = mpmath.MPContext()  # private context: never touch the process-wide mpmath precision
CTX.prec = PREC
REL_TOL = CTX.mpf(2) ** -200
ABS_TOL = CTX.mpf(2) ** -230
MAX_EXACT_BITS = 200_000  # exact rationals larger than this go numeric
MAX_MAG = 2**36  # log2 of the largest magnitude evaluated numerically
MAX_PERIODIC_MAG = 1000  # log2 of the largest argument of sin/cos/tan (argument reduction cost)
POINTS = 3  # random points for expressions with free symbols


class DomainError(ArithmeticError):
    """The expression has no finite value here (division by zero, log 0, a tuple...)."""


_LOW, _WIDTH = CTX.mpf(35) / 100, CTX.mpf(13) / 10


@functools.lru_cache(maxsize=4096)
def _point_value(name: str, index: int) -> Any:
    # Stable across processes (unlike hash()): the same symbol gets the same value everywhere.
    # Values in (0.35, 1.65): positive (the usual domain of answers' variables), away from 0/1.
    digest = hashlib.blake2b(f"{name}|{index}".encode(), digest_size=8).digest()
    return _LOW + CTX.mpf(int.from_bytes(digest, "big")) / 2**64 * _WIDTH


def _opaque(node: Node) -> Any:
    # Consistent within the process, which is all a comparison needs (gold and response are
    # compared in the same process).
    return 1 + CTX.mpf(hash(node) % (1 << 52)) / (1 << 52)


def _too_big(value: Fraction) -> bool:
    return value.numerator.bit_length() > MAX_EXACT_BITS or value.denominator.bit_length() > MAX_EXACT_BITS


def exact_value(node: Node) -> Fraction | None:
    """The exact rational value, or None when irrational, symbolic or too large."""
    tag = node[0]
    try:
        if tag == "n":
            return node[1]
        if tag == "+":
            total = Fraction(0)
            for child in node[1:]:
                v = exact_value(child)
                if v is None:
                    return None
                total += v
            return None if _too_big(total) else total
        if tag == "*":
            prod = Fraction(1)
            for child in node[1:]:
                v = exact_value(child)
                if v is None:
                    return None
                prod *= v
                if _too_big(prod):
                    return None
            return prod
        if tag == "neg":
            v = exact_value(node[1])
            return None if v is None else -v
        if tag == "/":
            a, b = exact_value(node[1]), exact_value(node[2])
            if a is None or b is None or b == 0:
                return None
            q = a / b
            return None if _too_big(q) else q
        if tag == "%":
            v = exact_value(node[1])
            return None if v is None else v / 100
        if tag == "^":
            base, exp = exact_value(node[1]), exact_value(node[2])
            if base is None or exp is None or exp.denominator != 1:
                return None
            n = exp.numerator
            if base == 0:
                return None if n < 0 else Fraction(int(n == 0))
            if abs(base) == 1:
                return base**n
            bits = max(base.numerator.bit_length(), base.denominator.bit_length())
            if abs(n) * bits > MAX_EXACT_BITS:
                return None
            return base**n
        if tag == "!":
            v = exact_value(node[1])
            if v is None or v.denominator != 1 or not 0 <= v <= 2000:
                return None
            return Fraction(math.factorial(int(v)))
        if tag == "binom":
            n_, k_ = exact_value(node[1]), exact_value(node[2])
            if n_ is None or k_ is None or n_.denominator != 1 or k_.denominator != 1:
                return None
            n, k = int(n_), int(k_)
            if not 0 <= n <= 100_000 or min(k, n - k) > 5000:
                return None
            return Fraction(math.comb(n, k)) if 0 <= k <= n else Fraction(0)
        if tag == "base":
            return Fraction(int(node[1], node[2]))
    except ValueError:
        return None
    return None


class Evaluator:
    """Numeric evaluation of one tree at one point (symbol values) and one ± sign."""

    def __init__(self, point: int, exact: Callable[[Node], Fraction | None]) -> None:
        self.point = point
        self.exact = exact

    def ev(self, node: Node) -> Any:
        tag = node[0]
        ctx = CTX
        if tag == "n":
            return ctx.mpf(node[1].numerator) / node[1].denominator
        if tag == "s":
            return _point_value(node[1], self.point)
        if tag == "c":
            return {"pi": ctx.pi, "e": ctx.e, "i": ctx.j}[node[1]]
        if tag == "+":
            total = ctx.mpf(0)
            for child in node[1:]:
                total += self.ev(child)
            return total
        if tag == "*":
            prod = ctx.mpf(1)
            for child in node[1:]:
                prod *= self.ev(child)
            return prod
        if tag == "neg":
            return -self.ev(node[1])
        if tag == "/":
            den = self.ev(node[2])
            if den == 0:
                raise DomainError("division by zero")
            return self.ev(node[1]) / den
        if tag == "%":
            return self.ev(node[1]) / 100
        if tag == "^":
            return self._power(node)
        if tag == "f":
            return self._function(node)
        if tag == "log":
            base = self.ev(node[1])
            arg = self.ev(node[2])
            if base == 0 or base == 1 or arg == 0:
                raise DomainError("bad logarithm")
            return ctx.ln(arg) / ctx.ln(base)
        if tag == "root":
            return self._root(node)
        if tag == "!":
            return self._factorial(node)
        if tag == "binom":
            n, k = self.ev(node[1]), self.ev(node[2])
            if max(ctx.mag(n), ctx.mag(k)) > 36:
                return _opaque(node)
            return ctx.binomial(n, k)
        if tag == "base":
            return ctx.mpf(int(node[1], node[2]))
        raise DomainError(f"{tag} has no numeric value")

    def _power(self, node: Node) -> Any:
        ctx = CTX
        base = self.ev(node[1])
        n = self.exact(node[2])
        if n is not None and n.denominator == 1:
            k = n.numerator
            if base == 0:
                if k < 0:
                    raise DomainError("0 to a negative power")
                return ctx.mpf(int(k == 0))
            if abs(k) * max(1, abs(ctx.mag(base))) > MAX_MAG:
                return _opaque(node)
            return base**k
        exponent = self.ev(node[2])
        if base == 0:
            if ctx.re(exponent) > 0:
                return ctx.mpf(0)
            raise DomainError("0 to a non-positive power")
        if ctx.mag(exponent) + max(1, abs(ctx.mag(base))).bit_length() > 36:
            return _opaque(node)
        return ctx.power(base, exponent)

    def _root(self, node: Node) -> Any:
        ctx = CTX
        x = self.ev(node[1])
        index = self.exact(node[2])
        if index is None or index.denominator != 1 or index.numerator == 0 or abs(index.numerator) > 10**6:
            raise DomainError("bad root index")
        k = index.numerator
        if ctx.im(x) == 0 and ctx.re(x) < 0 and k % 2 == 1:  # real odd root of a negative number
            return -ctx.root(-ctx.re(x), k)
        return ctx.root(x, k) if k > 0 else 1 / ctx.root(x, -k)

    def _factorial(self, node: Node) -> Any:
        ctx = CTX
        x = self.ev(node[1])
        if ctx.im(x) != 0:
            raise DomainError("factorial of a complex number")
        x = ctx.re(x)
        if ctx.mag(x) > 36:
            return _opaque(node)
        if x < 0 and x == ctx.floor(x):
            raise DomainError("factorial of a negative integer")
        return ctx.factorial(x)

    def _function(self, node: Node) -> Any:
        ctx = CTX
        name = node[1]
        x = self.ev(node[2])
        if name in ("sin", "cos", "tan", "cot", "sec", "csc") and ctx.mag(x) > MAX_PERIODIC_MAG:
            return _opaque(node)
        if name in ("exp", "sinh", "cosh", "tanh") and (
            ctx.mag(ctx.re(x)) > 36 or ctx.mag(ctx.im(x)) > MAX_PERIODIC_MAG
        ):
            return _opaque(node)
        if name == "sqrt":
            return ctx.sqrt(x)
        if name == "ln":
            if x == 0:
                raise DomainError("log 0")
            return ctx.ln(x)
        if name == "abs":
            return abs(x)
        if name in ("floor", "ceil"):
            if ctx.im(x) != 0:
                raise DomainError("floor of a complex number")
            return ctx.floor(ctx.re(x)) if name == "floor" else ctx.ceil(ctx.re(x))
        if name in ("tan", "cot", "sec", "csc"):
            den = {"tan": ctx.cos, "cot": ctx.sin, "sec": ctx.cos, "csc": ctx.sin}[name](x)
            if abs(den) <= ABS_TOL:
                raise DomainError("pole")
            num = {"tan": ctx.sin(x), "cot": ctx.cos(x), "sec": 1, "csc": 1}[name]
            return num / den
        func = {
            "sin": ctx.sin,
            "cos": ctx.cos,
            "exp": ctx.exp,
            "arcsin": ctx.asin,
            "arccos": ctx.acos,
            "arctan": ctx.atan,
            "sinh": ctx.sinh,
            "cosh": ctx.cosh,
            "tanh": ctx.tanh,
        }.get(name)
        if func is None:
            raise DomainError(f"unknown function {name}")
        return func(x)
