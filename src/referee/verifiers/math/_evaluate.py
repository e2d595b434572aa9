"""Numeric evaluation of a parse tree at one sample point, at 320 or 1024 bits (exact
rationals are in `_exact`).

Every operation that could run away is guarded *before* it runs: integer powers and
factorials by the size of their result, trigonometric/exponential functions by the size of
their argument. A sub-expression too large to evaluate (`(10^{10^{10}})!`) becomes an *opaque*
value: a pseudo-random number keyed by its structure, so `X - X` is still 0 and `X` equals
only the same `X`. That can only miss an equality, never invent one.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath

from referee.verifiers.math._exact import TRIG
from referee.verifiers.math._tree import Node

PREC = 320
CTX = mpmath.MPContext()  # private contexts: never touch the process-wide mpmath precision
CTX.prec = PREC
# A comparison that cannot be settled at 320 bits (a value near 0, cancellation, a term
# smaller than the working precision) is redone at 1024 bits; see `_numeric.same_value`.
CTX_HIGH = mpmath.MPContext()
CTX_HIGH.prec = 1024
CONTEXTS = (CTX, CTX_HIGH)
# Per level: two values agree when they differ by less than 2^-REL_BITS relative. A sum term
# smaller than 2^-(REL_BITS - 8) of the largest term would be (nearly) lost in that test, so
# the evaluation is marked imprecise: `\pi + 10^{-400}` must not pass for `\pi`.
REL_BITS = (300, 1000)
MAX_MAG = 2**36  # log2 of the largest magnitude evaluated numerically
MAX_PERIODIC_MAG = 1000  # log2 of the largest argument of sin/cos/tan (argument reduction cost)
POINT_BITS = 40  # sample values are integers / 2^40: exactly the same number at every precision
# Sample points for free symbols, as (sign, low, high) of the value. Both signs, magnitudes
# below and above 1 (away from 0 and +-1, where distinct expressions often meet): `|x|` vs `x`,
# `\sqrt{x^2}` vs `x`, `\ln(x^2)` vs `2\ln x` differ at a negative point. Sign 0: each symbol
# draws its own sign, so `\sqrt{x}\sqrt{y}` meets x, y of opposite signs. No complex point:
# answers' variables are real, and `|x|^2 = x^2` holds there but not for complex x.
_POINTS = (
    (1, 0.35, 0.85),
    (-1, 1.2, 2.6),
    (1, 1.2, 6.5),
    (-1, 0.35, 0.85),
    (0, 0.3, 3.0),
)
# Then points where every symbol draws its own sign, in turn below and above 1: an identity
# that holds only for some signs or some order of the symbols (`\sqrt{a^2b^2}` vs `ab`,
# `|a-b|` vs `a-b`, `\min(a,b)` vs `a`) holds at a point of this kind with probability 1/2, so
# it passes all of them with probability 2^-16. Unequal answers mostly differ at the first
# point, so the extra points cost time only where the answers agree.
_OWN_SIGN_POINTS = 16
_OWN_SIGN = ((0, 0.35, 0.85), (0, 1.2, 6.5))
POINTS = len(_POINTS) + _OWN_SIGN_POINTS


class Undefined(ArithmeticError):
    """The expression has no finite value at this point (division by zero, log 0, a tuple...).
    Caught inside the math verifier (a side undefined where the other is defined differs); it
    is no refusal of a request, which is `referee.errors.DomainError`."""


@functools.lru_cache(maxsize=4096)
def _point_value(name: str, index: int) -> int:
    """The value of symbol `name` at point `index`, times 2^POINT_BITS."""
    # Stable across processes (unlike hash()): the same symbol gets the same value everywhere.
    digest = int.from_bytes(hashlib.blake2b(f"{name}|{index}".encode(), digest_size=8).digest(), "big")
    sign, low, high = _POINTS[index] if index < len(_POINTS) else _OWN_SIGN[index % 2]
    if sign == 0:
        sign = 1 if digest & 1 else -1
    unit = 1 << POINT_BITS
    mantissa = int(low * unit) + (digest >> 1) % int((high - low) * unit)
    return sign * mantissa


def _opaque(node: Node, ctx: Any) -> Any:
    # Consistent within the process, which is all a comparison needs (gold and response are
    # compared in the same process); dyadic, so the same at every precision.
    return 1 + ctx.ldexp(hash(node) % (1 << 52), -52)


def _odd_bits(n: int) -> int:
    """Bits of the odd part of n (a power of two costs no precision)."""
    n = abs(n)
    return (n >> ((n & -n).bit_length() - 1)).bit_length() if n else 0


# Functions equal to 1 or to their argument up to a term in its square near 0 (cos x = 1 - x^2/2,
# sin x = x(1 - x^2/6)): that term is lost when the argument is below half the precision.
_LOST_IN_SQUARE = frozenset({
    "cos", "cosh", "sec", "sin", "tan", "sinh", "tanh", "sech", "arcsin", "arctan", "arcsinh", "arctanh",
})  # fmt: skip


_HYPERBOLIC = frozenset({"sinh", "cosh", "tanh", "coth", "sech", "csch"})


class Evaluator:
    """Numeric evaluation of one tree at one point (symbol values) in one context (precision).

    `imprecise` is set when a term was too small against the others to be seen at this
    precision (`1 + 10^{-400}`, `e^{10^{-400}}`): the value cannot tell such a perturbation from
    none, so a comparison must not conclude from it.
    """

    def __init__(self, point: int, exact: Callable[[Node], Fraction | None], ctx: Any = CTX) -> None:
        self.point = point
        self.exact = exact
        self.ctx = ctx
        self.imprecise = False
        self.lost_bits = REL_BITS[CONTEXTS.index(ctx)] - 8

    def _check_lost(self, small: Any, big_mag: int) -> None:
        if small != 0 and self.ctx.mag(small) < big_mag - self.lost_bits:
            self.imprecise = True

    def _rational(self, q: Fraction) -> Any:
        """A literal as a number. Two rationals of k significant bits each differ by at least
        about 2^-2k relative, so literals of up to lost_bits/2 bits stay distinct after rounding;
        a longer one (`1.000...0001`, 400 zeros) may round onto a simpler number: imprecise."""
        num, den = _odd_bits(q.numerator), _odd_bits(q.denominator)
        exact = den <= 1 and num <= self.ctx.prec
        if not exact and max(num, den) > self.lost_bits // 2:
            self.imprecise = True
        return self.ctx.mpf(q.numerator) / q.denominator

    def value_of(self, node: Node) -> Any:
        tag = node[0]
        ctx = self.ctx
        if tag == "n":
            return self._rational(node[1])
        if tag == "s":
            return ctx.ldexp(_point_value(node[1], self.point), -POINT_BITS)
        if tag == "c":
            return {"pi": ctx.pi, "e": ctx.e, "i": ctx.j}[node[1]]
        if tag == "+":
            # `x+x+...+x` (5000 terms): each distinct term is evaluated once, times its count.
            counts = Counter(node[1:])
            terms = [
                self.value_of(child) * k if k > 1 else self.value_of(child) for child, k in counts.items()
            ]
            biggest = max(ctx.mag(t) for t in terms)
            for term in terms:
                self._check_lost(term, biggest)
            return ctx.fsum(terms)
        if tag == "*":
            prod = ctx.mpf(1)
            for child in node[1:]:
                prod *= self.value_of(child)
            return prod
        if tag == "neg":
            return -self.value_of(node[1])
        if tag == "/":
            den = self.value_of(node[2])
            if den == 0:
                raise Undefined("division by zero")
            return self.value_of(node[1]) / den
        if tag == "%":
            return self.value_of(node[1]) / 100
        if tag == "mod":
            return self._remainder(node)
        if tag == "^":
            return self._power(node)
        if tag == "f":
            exact = self.exact(node) if node[1] in TRIG or node[1] == "gamma" else None
            if exact is not None:
                return ctx.mpf(exact.numerator) / exact.denominator
            return self._function(node)
        if tag == "log":
            base = self.value_of(node[1])
            arg = self.value_of(node[2])
            if base == 0 or base == 1 or arg == 0:
                raise Undefined("bad logarithm")
            return ctx.ln(arg) / ctx.ln(base)
        if tag == "root":
            return self._root(node)
        if tag == "!":
            return self._factorial(node)
        if tag == "binom":
            n, k = self.value_of(node[1]), self.value_of(node[2])
            if max(ctx.mag(n), ctx.mag(k)) > 36:
                return _opaque(node, ctx)
            return ctx.binomial(n, k)
        if tag == "base":
            return ctx.mpf(int(node[1], node[2]))
        if tag in ("min", "max"):
            return self._extremum(node)
        if tag in ("gcd", "lcm"):
            exact = self.exact(node)
            if exact is None:
                raise Undefined(f"{tag} of numbers that are not integers")
            return ctx.mpf(exact.numerator)
        raise Undefined(f"{tag} has no numeric value")

    def _remainder(self, node: Node) -> Any:
        """`a \\mod b` of real numbers: a - b*floor(a/b), the sign of b's (as for whole numbers)."""
        ctx = self.ctx
        a, b = self.value_of(node[1]), self.value_of(node[2])
        if b == 0 or ctx.im(a) != 0 or ctx.im(b) != 0:
            raise Undefined("remainder by 0 or of a complex number")
        a, b = ctx.re(a), ctx.re(b)
        if ctx.mag(a) - ctx.mag(b) > 36:
            return _opaque(node, ctx)
        return a - b * ctx.floor(a / b)

    def _extremum(self, node: Node) -> Any:
        """`\\min` / `\\max` of real numbers (a complex argument has no order)."""
        values = [self.value_of(child) for child in node[1:]]
        if any(self.ctx.im(v) != 0 for v in values):
            raise Undefined(f"{node[0]} of a complex number")
        reals = [self.ctx.re(v) for v in values]
        return min(reals) if node[0] == "min" else max(reals)

    def _power(self, node: Node) -> Any:
        ctx = self.ctx
        base = self.value_of(node[1])
        n = self.exact(node[2])
        if n is not None and n.denominator == 1:
            k = n.numerator
            if base == 0:
                if k < 0:
                    raise Undefined("0 to a negative power")
                return ctx.mpf(int(k == 0))
            if abs(k) * max(1, abs(ctx.mag(base))) > MAX_MAG:
                return _opaque(node, ctx)
            return base**k
        if n is not None and n.denominator % 2 == 1 and ctx.im(base) == 0 and ctx.re(base) < 0:
            # Odd denominator: the real root, as for `\sqrt[3]{x}`, so (-8)^{2/3} = 4.
            if abs(n.numerator) > 10**6 or n.denominator > 10**6:
                return _opaque(node, ctx)
            root = -ctx.root(-ctx.re(base), n.denominator)
            return self._power_of(root, n.numerator, node)
        return self._principal_power(base, self.value_of(node[2]), node)

    def _principal_power(self, base: Any, exponent: Any, node: Node) -> Any:
        """base^exponent for an exponent that is not a known integer or odd-denominator fraction:
        the principal value, guarded by the size of the result."""
        ctx = self.ctx
        if base == 0:
            if ctx.re(exponent) > 0:
                return ctx.mpf(0)
            raise Undefined("0 to a non-positive power")
        if ctx.mag(exponent) + max(1, abs(ctx.mag(base))).bit_length() > 36:
            return _opaque(node, ctx)
        if exponent != 0 and ctx.mag(exponent) < -self.lost_bits // 2:
            self._check_lost(exponent * ctx.ln(base), 0)  # 2^{10^{-400}}: 1 + a lost term
        return ctx.power(base, exponent)

    def _power_of(self, base: Any, k: int, node: Node) -> Any:
        if abs(k) * max(1, abs(self.ctx.mag(base))) > MAX_MAG:
            return _opaque(node, self.ctx)
        return base**k

    def _root(self, node: Node) -> Any:
        ctx = self.ctx
        x = self.value_of(node[1])
        index = self.exact(node[2])
        if index is None:  # `\sqrt[y]{x}` is x^(1/y), as `x^{1/y}` is evaluated
            k = self.value_of(node[2])
            if k == 0:
                raise Undefined("root of index 0")
            return self._principal_power(x, 1 / k, node)
        if index.denominator != 1 or index.numerator == 0 or abs(index.numerator) > 10**6:
            raise Undefined("bad root index")
        k = index.numerator
        if ctx.im(x) == 0 and ctx.re(x) < 0 and k % 2 == 1:  # real odd root of a negative number
            return -ctx.root(-ctx.re(x), k)
        return ctx.root(x, k) if k > 0 else 1 / ctx.root(x, -k)

    def _factorial(self, node: Node) -> Any:
        ctx = self.ctx
        x = self.value_of(node[1])
        if ctx.im(x) != 0:
            raise Undefined("factorial of a complex number")
        x = ctx.re(x)
        if ctx.mag(x) > 36:
            return _opaque(node, ctx)
        if x < 0 and x == ctx.floor(x):
            raise Undefined("factorial of a negative integer")
        return ctx.factorial(x)

    def _gamma(self, x: Any, node: Node) -> Any:
        ctx = self.ctx
        if ctx.mag(x) > 36:
            return _opaque(node, ctx)
        if ctx.im(x) == 0 and ctx.re(x) <= 0 and ctx.re(x) == ctx.floor(ctx.re(x)):
            raise Undefined("gamma at a pole")
        return ctx.gamma(x)

    def _check_series(self, name: str, x: Any) -> None:
        """Functions hide lost terms too: near 0, exp x = 1 + x and sin x = x(1 - x^2/6); far
        out, tanh x = 1 - 2e^{-2x} and arctan x = pi/2 - 1/x. `\\frac{\\sin(10^{-300})}{10^{-300}}`
        is not 1."""
        ctx = self.ctx
        if name in ("exp", "arccos"):
            self._check_lost(x, 0)
        elif name in _LOST_IN_SQUARE:
            self._check_lost(x * x, 0)
        if name in _HYPERBOLIC and abs(ctx.re(x)) * 3 > self.lost_bits:
            self.imprecise = True  # e^{-2|x|} < 2^-lost_bits: 2|x| > lost_bits * ln 2
        elif name == "arctan" and abs(x) > 1:
            self._check_lost(1 / x, 0)

    def _function(self, node: Node) -> Any:
        ctx = self.ctx
        name = node[1]
        x = self.value_of(node[2])
        if name in ("sin", "cos", "tan", "cot", "sec", "csc") and ctx.mag(x) > MAX_PERIODIC_MAG:
            return _opaque(node, ctx)
        if (name == "exp" or name in _HYPERBOLIC) and (
            ctx.mag(ctx.re(x)) > 36 or ctx.mag(ctx.im(x)) > MAX_PERIODIC_MAG
        ):
            return _opaque(node, ctx)
        self._check_series(name, x)
        if name == "gamma":
            return self._gamma(x, node)
        if name == "sqrt":
            return ctx.sqrt(x)
        if name == "ln":
            if x == 0:
                raise Undefined("log 0")
            return ctx.ln(x)
        if name == "abs":
            return abs(x)
        if name in ("floor", "ceil"):
            if ctx.im(x) != 0:
                raise Undefined("floor of a complex number")
            return ctx.floor(ctx.re(x)) if name == "floor" else ctx.ceil(ctx.re(x))
        if name in ("tan", "cot", "sec", "csc"):
            den = {"tan": ctx.cos, "cot": ctx.sin, "sec": ctx.cos, "csc": ctx.sin}[name](x)
            if den == 0 or ctx.mag(den) < -(ctx.prec * 7 // 10):  # at a pole (up to rounding)
                raise Undefined("pole")
            num = {"tan": ctx.sin(x), "cot": ctx.cos(x), "sec": 1, "csc": 1}[name]
            return num / den
        func = {
            "sin": ctx.sin,
            "cos": ctx.cos,
            "exp": ctx.exp,
            "arcsin": ctx.asin,
            "arccos": ctx.acos,
            "arctan": ctx.atan,
            "arcsinh": ctx.asinh,
            "arccosh": ctx.acosh,
            "arctanh": ctx.atanh,
            "conj": ctx.conj,
            "sinh": ctx.sinh,
            "coth": ctx.coth,
            "sech": ctx.sech,
            "csch": ctx.csch,
            "cosh": ctx.cosh,
            "tanh": ctx.tanh,
        }.get(name)
        if func is None:
            raise Undefined(f"unknown function {name}")
        return func(x)
