"""Exact rational value of a parse tree (Python `Fraction`), bounded by the size of results.

Rational values of trigonometric functions at rational multiples of pi are exact too
(Niven's theorem lists them), so `3 + 2\\cos(\\pi/2)` is exactly 3 rather than 3 plus rounding
noise.
"""

from __future__ import annotations

import math
from fractions import Fraction

from referee.verifiers.math._tree import Node

__all__ = ["MAX_EXACT_BITS", "TRIG", "exact_value"]

MAX_EXACT_BITS = 200_000  # exact rationals larger than this go numeric


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
        if tag == "mod":
            a, b = exact_value(node[1]), exact_value(node[2])
            if a is None or b is None or b == 0:
                return None
            return a - b * math.floor(a / b)
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
        if tag == "f" and node[1] in TRIG:
            return _exact_trig(node[1], _pi_multiple(node[2]))
        if tag == "f" and node[1] == "gamma":
            v = exact_value(node[2])  # Gamma(n) = (n-1)! at whole n > 0; irrational or a pole elsewhere
            if v is None or v.denominator != 1 or not 1 <= v <= 2001:
                return None
            return Fraction(math.factorial(int(v) - 1))
        if tag in _LIST_FUNCTIONS:
            return _list_function(tag, node[1:])
    except ValueError:
        return None
    return None


_LIST_FUNCTIONS = frozenset({"min", "max", "gcd", "lcm"})


def _list_function(name: str, arguments: tuple[Node, ...]) -> Fraction | None:
    """min / max of exact numbers; gcd / lcm of whole numbers (None otherwise)."""
    values: list[Fraction] = []
    for argument in arguments:
        v = exact_value(argument)
        if v is None or (name in ("gcd", "lcm") and v.denominator != 1):
            return None
        values.append(v)
    if name == "min":
        return min(values)
    if name == "max":
        return max(values)
    whole = [int(v) for v in values]
    result = Fraction(math.gcd(*whole) if name == "gcd" else math.lcm(*whole))
    return None if _too_big(result) else result


TRIG = frozenset({"sin", "cos", "tan", "cot", "sec", "csc"})
# Niven: the rational values of sin at rational multiples of pi are 0, +-1/2, +-1 (keyed by
# the multiple mod 2). Exact, so `3 + 2\cos(\pi/2)` is 3 without a rounding-noise term.
_SIN = {
    Fraction(0): Fraction(0),
    Fraction(1): Fraction(0),
    Fraction(1, 2): Fraction(1),
    Fraction(3, 2): Fraction(-1),
    Fraction(1, 6): Fraction(1, 2),
    Fraction(5, 6): Fraction(1, 2),
    Fraction(7, 6): Fraction(-1, 2),
    Fraction(11, 6): Fraction(-1, 2),
}
_TAN = {Fraction(0): Fraction(0), Fraction(1, 4): Fraction(1), Fraction(3, 4): Fraction(-1)}


def _pi_multiple(node: Node) -> Fraction | None:
    """q when the node is exactly q*pi with q rational (`\\frac{2\\pi}{3}`, `-\\pi/2`), else None."""
    tag = node[0]
    if node == ("c", "pi"):
        return Fraction(1)
    if tag == "neg":
        m = _pi_multiple(node[1])
        return None if m is None else -m
    if tag == "*":
        found: Fraction | None = None
        coeff = Fraction(1)
        for child in node[1:]:
            v = exact_value(child)
            if v is not None:
                coeff *= v
            elif found is None:
                found = _pi_multiple(child)
                if found is None:
                    return None
            else:
                return None
        return None if found is None or _too_big(coeff) else found * coeff
    if tag == "/":
        m, d = _pi_multiple(node[1]), exact_value(node[2])
        return None if m is None or not d else m / d
    if tag == "+":
        total = Fraction(0)
        for child in node[1:]:
            m = _pi_multiple(child)
            if m is None and exact_value(child) != 0:
                return None
            total += m or 0
        return total
    return None


def _exact_trig(name: str, q: Fraction | None) -> Fraction | None:
    if q is None or _too_big(q):
        return None
    if name in ("tan", "cot"):
        t = _TAN.get(q % 1) if name == "tan" else _TAN.get((Fraction(1, 2) - q) % 1)
        return t
    s, c = _SIN.get(q % 2), _SIN.get((q + Fraction(1, 2)) % 2)
    value = {"sin": s, "cos": c, "sec": c, "csc": s}[name]
    if name in ("sec", "csc"):
        return None if not value else 1 / value
    return value
