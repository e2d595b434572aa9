"""Sums and products with bounds (policy rule 33): `\\sum_{k=0}^{n-1} F_k F_{n-k-1}`,
`\\prod_{i=1}^{5} i`.

Node: ('sum'|'prod', index, lo, hi, body). The parser names a bound index by its nesting level
(`#1#` for the outermost sum, `#2#` inside its body), in the body and inside subscripts (`F_k`
becomes `F_#1#`), so two sums that differ only in the name of their index are the same tree.
A symbol whose name holds an index is bound, not free (`_tree.free_symbols`).

After parsing, a sum whose bounds are small integers is expanded into the plain sum (product)
of its terms, within a node budget; any other sum has no numeric value, and `_numeric` decides
its equality by a sufficient test only: the same operator, equal bounds, and bodies equal as
functions of the index and the other symbols.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from referee.verifiers.math._exact import exact_value
from referee.verifiers.math._tree import BIGOPS, Node, children, contains_tag

if TYPE_CHECKING:
    from referee.verifiers.math._parser import Parser

__all__ = ["BIGOPS", "BigOpError", "expand_bigops", "parse_bigop"]

MAX_TERMS = 1000  # a sum of more terms stays a sum (decided structurally, never expanded)
MAX_EXPANDED_NODES = 5000  # all expansions of one answer together


class BigOpError(ValueError):
    """A malformed sum or product (the parser raises it as its own ParseError)."""


def parse_bigop(p: Parser, op: str) -> Node:
    """`\\sum_{k=lo}^{hi} body`, bounds in either order. The body is the term that follows
    (its factors, up to the next `+` or `-`: `\\sum_k k + 1` is `(\\sum_k k) + 1`), read with
    the index bound to its canonical name."""
    p._enter()
    index: str | None = None
    lo: Node | None = None
    hi: Node | None = None
    for _ in range(2):
        if index is None and p._is("op", "_"):
            p.pos += 1
            index, lo = _lower_bound(p)
        elif hi is None and p._is("op", "^"):
            p.pos += 1
            hi = p._script_arg()
    if index is None or lo is None or hi is None:
        raise BigOpError("a sum or product needs an index and both bounds")
    name = f"#{len(p.bound) + 1}#"
    p.bound.append((index, name))
    try:
        body = p._term()
    finally:
        p.bound.pop()
    p.depth -= 1
    return (op, name, lo, hi, body)


def _lower_bound(p: Parser) -> tuple[str, Node]:
    """`{k=0}`: the index (a plain one-letter or Greek name) and its first value."""
    p._expect("{")
    tok = p._next()
    if tok.kind not in ("sym", "const") or not p._is("rel", "="):
        raise BigOpError("a sum's lower bound must be `index = value`")
    p.pos += 1
    lo = p._sum()
    p._expect("}")
    return str(tok.val), lo


def _node_count(node: Node) -> int:
    count, stack = 0, [node]
    while stack:
        item = stack.pop()
        count += 1
        stack.extend(children(item))
    return count


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_EXPANDED_NODES

    def spend(self, nodes: int) -> bool:
        if nodes > self.left:
            return False
        self.left -= nodes
        return True


def expand_bigops(node: Node) -> Node:
    """The tree with every sum/product over small integer bounds written out term by term."""
    if not contains_tag(node, BIGOPS):
        return node
    return _expand(node, _Budget())


def _expand(node: Node, budget: _Budget) -> Node:
    tag = node[0]
    if tag in ("n", "s", "c", "inf", "base"):
        return node
    if tag in BIGOPS:
        _, name, lo, hi, body = node
        lo, hi = _expand(lo, budget), _expand(hi, budget)
        terms = _expanded_terms(name, lo, hi, body, budget)
        if terms is None:
            return (tag, name, lo, hi, _expand(body, budget))
        if not terms:
            return ("n", Fraction(int(tag == "prod")), None)  # empty sum 0, empty product 1
        return terms[0] if len(terms) == 1 else ("+" if tag == "sum" else "*", *terms)
    if not isinstance(tag, str):  # the items of a list, the rows of a matrix
        return tuple(_expand(child, budget) for child in node)
    return (tag, *(_expand(x, budget) if isinstance(x, tuple) and x else x for x in node[1:]))


def _expanded_terms(name: str, lo: Node, hi: Node, body: Node, budget: _Budget) -> list[Node] | None:
    first, last = exact_value(lo), exact_value(hi)
    if first is None or last is None or first.denominator != 1 or last.denominator != 1:
        return None
    count = max(0, int(last) - int(first) + 1)
    if count > MAX_TERMS or not _substitutable(body, name):
        return None
    if not budget.spend(count * _node_count(body)):
        return None
    return [_expand(_substitute(body, name, k), budget) for k in range(int(first), int(last) + 1)]


def _substitutable(body: Node, name: str) -> bool:
    """The index appears only as itself or as a whole subscript (`x_k`, which is `x_3` at
    k = 3); a compound subscript (`F_{n-k-1}`) names no symbol we could write down."""
    stack = [body]
    while stack:
        item = stack.pop()
        if item[0] == "s" and name in item[1]:
            base, _, sub = str(item[1]).rpartition("_")
            if item[1] != name and (sub != name or "#" in base):
                return False
        stack.extend(children(item))
    return True


def _substitute(node: Node, name: str, value: int) -> Node:
    tag = node[0]
    if tag == "s":
        if node[1] == name:
            return ("n", Fraction(value), None)
        if node[1].endswith("_" + name):
            return ("s", f"{node[1][: -len(name)]}{value}")
        return node
    if tag in ("n", "c", "inf", "base"):
        return node
    if not isinstance(tag, str):
        return tuple(_substitute(child, name, value) for child in node)
    return (tag, *(_substitute(x, name, value) if isinstance(x, tuple) and x else x for x in node[1:]))
