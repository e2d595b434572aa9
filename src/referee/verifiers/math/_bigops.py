"""Sums and products with bounds (policy rule 33) written out: a tree pass after parsing.

Node: ('sum'|'prod', index, lo, hi, body), built by `_parser.Parser._bigop`, which names a bound
index by its nesting level (`#1#` for the outermost sum, `#2#` inside its body), in the body and
inside subscripts (`F_k` becomes `F_#1#`), so two sums that differ only in the name of their
index are the same tree. A symbol whose name holds an index is bound, not free
(`_tree.free_symbols`).

A sum whose bounds are small integers is expanded here into the plain sum (product) of its
terms, within a node budget; any other sum has no numeric value, and `_numeric` decides its
equality by a sufficient test only: the same operator, equal bounds, and bodies equal as
functions of the index and the other symbols.
"""

from __future__ import annotations

from fractions import Fraction

from referee.verifiers.math._exact import exact_value
from referee.verifiers.math._tree import BIGOPS, Node, children, contains_tag

__all__ = ["BIGOPS", "expand_bigops"]

MAX_TERMS = 1000  # a sum of more terms stays a sum (decided structurally, never expanded)
MAX_EXPANDED_NODES = 5000  # all expansions of one answer together


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
