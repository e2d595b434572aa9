"""The parse tree: plain tuples `(tag, *children)`; items and matrix rows are plain tuples of
nodes. Helpers here walk it iteratively (no recursion on untrusted depth).

Expression nodes
    ('n', Fraction, decimals|None)   number literal (decimals: digits after the point)
    ('s', name) symbol   ('c', 'pi'|'e'|'i') constant   ('inf',) infinity
    ('+', a, b, ...)  ('*', a, b, ...)  ('neg', a)  ('/', a, b)  ('^', a, b)
    ('f', name, a) function   ('log', base, a)   ('root', a, index)   ('!', a)   ('binom', n, k)
    ('%', a) percent   ('pm', a, b) a±b   ('mp', a, b) a∓b   ('upm', a) ±a
    ('base', digits, base)   e.g. 1011_2
Structure nodes
    ('list', connectors, items)  ('tuple', items)  ('set', items)  ('empty',)  ('reals',)
    ('interval', lo, hi, lo_closed, hi_closed)   ('cup'|'cap'|'setminus', a, b)
    ('matrix', rows)   ('rel', ops, operands)  relation chain: = < > le ge ne in :
Bound operators (`_bigops`)
    ('sum'|'prod', index, lo, hi, body)   index: the canonical name `#1#`, `#2#`, ... of the
    bound variable; a symbol whose name holds it (`#1#`, `F_#1#`) is bound in the body
"""

from __future__ import annotations

import itertools
from typing import Any

Node = tuple[Any, ...]
MAX_TREE_DEPTH = 400  # evaluation, hashing and printing recurse over the tree: keep it bounded
BIGOPS = frozenset({"sum", "prod"})
# Nodes that are not numbers: an expression holding one has no single value.
STRUCT_TAGS = frozenset({"list", "tuple", "set", "interval", "matrix", "rel", "cup", "cap", "setminus"})


def children(item: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Sub-trees of a node, looking through the plain tuples that hold items and rows."""
    out: list[tuple[Any, ...]] = []
    for child in item[1:] if item and isinstance(item[0], str) else item:
        if isinstance(child, tuple) and child:
            out.append(child)
    return out


def tree_depth(node: Node) -> int:
    deepest = 0
    stack = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_TREE_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children(item))
    return deepest


def free_symbols(node: Node) -> frozenset[str]:
    """Symbols not bound by an enclosing sum or product. A body taken out of its sum has its
    index free again: that is how two bodies are compared as functions of the index."""
    found: set[str] = set()
    stack: list[tuple[Node, tuple[str, ...]]] = [(node, ())]
    while stack:
        item, bound = stack.pop()
        tag = item[0]
        if tag == "s":
            if not (bound and any(index in item[1] for index in bound)):
                found.add(item[1])
        elif isinstance(tag, str) and tag in BIGOPS:
            stack.extend(((item[2], bound), (item[3], bound), (item[4], (*bound, item[1]))))
        else:
            stack.extend((child, bound) for child in children(item))
    return frozenset(found)


def contains_tag(node: Node, tags: frozenset[str]) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if item[0] in tags:
            return True
        stack.extend(children(item))
    return False


def infinity_sign(node: Node) -> int | None:
    """+1 / -1 for (signed) infinity, None for anything else."""
    sign = 1
    while node[0] == "neg":
        sign, node = -sign, node[1]
    return sign if node == ("inf",) else None


def add_terms(terms: list[Node]) -> Node:
    """The sum of `terms`, flattened (`a + (b + c)` is one `+` node)."""
    if len(terms) == 1:
        return terms[0]
    flat: list[Node] = []
    for term in terms:
        flat.extend(term[1:] if term[0] == "+" else (term,))
    return ("+", *flat)


def mul_factors(factors: list[Node]) -> Node:
    """The product of `factors`, flattened."""
    if len(factors) == 1:
        return factors[0]
    flat: list[Node] = []
    for factor in factors:
        flat.extend(factor[1:] if factor[0] == "*" else (factor,))
    return ("*", *flat)


def bracket_node(opener: str, closer: str, items: list[Node], conns: set[str]) -> Node | None:
    """What a bracketed list denotes by its brackets (None if they do not fit): `(a)` and `[a]`
    group, `(a, b)` is a tuple (or an open interval), `[a, b)` an interval, `\\{a, b\\}` a set,
    `{a, b}` a LaTeX group holding the bare list a, b; joined by "or"/"and", a list."""
    count = len(items)
    if conns and count >= 2 and (opener, closer) in (("(", ")"), ("{", "}"), ("[", "]")):
        return ("list", tuple(sorted(conns)), tuple(items))
    if opener == "lset" and closer == "rset":
        return ("set", tuple(items)) if items else ("empty",)
    if opener == "{" and closer == "}":
        if count == 1:
            return items[0]
        return ("list", (), tuple(items)) if items else ("empty",)
    if opener in ("(", "[") and closer in (")", "]"):
        if count == 1 and opener + closer in ("()", "[]"):
            return items[0]
        if count == 2:
            if opener + closer == "()":
                return ("tuple", tuple(items))
            return ("interval", items[0], items[1], opener == "[", closer == "]")
        if count >= 3 and opener + closer in ("()", "[]"):
            return ("tuple", tuple(items))
    return None


def tuples_of_groups(items: list[Node], groups: list[int]) -> list[Node]:
    """`1,2;3,4;5,6`: groups of plain values of one size >= 2 are tuples, the solutions of a
    system (policy rule 50); groups of assignments (`p=5,q=2;p=7,q=2`) are `_values`' rule 15."""
    if len(groups) < 2:
        return items
    bounds = [*groups, len(items)]
    sizes = {b - a for a, b in itertools.pairwise(bounds)}
    if len(sizes) != 1 or min(sizes) < 2 or any(item[0] == "rel" for item in items):
        return items
    return [("tuple", tuple(items[a:b])) for a, b in itertools.pairwise(bounds)]
