"""Tree passes after parsing, where a reading depends on the context around a node: degree signs
(radians inside a trigonometric function, dropped elsewhere) and `\\{…\\}` (a group inside
arithmetic, a set elsewhere). Sums and products with bounds are written out by `_bigops`.

Each pass returns a new tree; recursion is bounded by the parser's depth limits.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from referee.verifiers.math._tree import Node, mul_factors

__all__ = ["braces_as_grouping", "resolve_degrees"]

_TRIG = frozenset({"sin", "cos", "tan", "cot", "sec", "csc"})
_LEAVES = frozenset({"n", "s", "c", "inf", "base"})
# Operators whose operands are numbers: a one-item `\{…\}` there is a group, not a set.
_ARITHMETIC = frozenset({
    "+", "*", "neg", "/", "^", "f", "log", "root", "!", "binom", "%", "pm", "mp", "upm", "deg", "sum",
    "prod", "min", "max", "gcd", "lcm", "mod",
})  # fmt: skip


def resolve_degrees(node: Node, in_trig: bool = False) -> Node:
    """Degree signs: inside the argument of a trigonometric function `a°` is `a*pi/180`;
    anywhere else the sign is dropped (policy 7: `90^\\circ` is 90)."""
    tag = node[0]
    if tag == "deg":
        inner = resolve_degrees(node[1], in_trig)
        return ("/", mul_factors([inner, ("c", "pi")]), ("n", Fraction(180), None)) if in_trig else inner
    if tag == "f" and node[1] in _TRIG:
        return ("f", node[1], resolve_degrees(node[2], True))
    if tag in _LEAVES:
        return node
    return tuple(
        (resolve_degrees(x, in_trig) if x and isinstance(x[0], str) else resolve_degrees(("", *x))[1:])
        if isinstance(x, tuple)
        else x
        for x in node
    )


def braces_as_grouping(node: Node) -> Node:
    """`2\\{a+b\\}`, `\\{x+1\\}^2`: a one-item `\\{…\\}` around a compound expression that is an
    operand of arithmetic groups it (policy rule 37); alone or in a set operation it is a
    set. Around a lone symbol it stays a set (`x - \\{x\\}` may be a fractional part)."""
    tag = node[0]
    if not isinstance(tag, str):
        return tuple(braces_as_grouping(item) for item in node)
    if tag in _LEAVES:
        return node
    out: list[Any] = [tag]
    for child in node[1:]:
        if isinstance(child, tuple) and child:
            child = braces_as_grouping(child)
            if (
                tag in _ARITHMETIC
                and child[0] == "set"
                and len(child[1]) == 1
                and child[1][0][0] not in _LEAVES
            ):
                child = child[1][0]
        out.append(child)
    return tuple(out)
