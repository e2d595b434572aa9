"""Bounded rendering of parsed answers for verdict details.

Never `str()` an untrusted value: a huge integer costs quadratic time to print (and Python
refuses beyond 4300 digits), a deep tree costs recursion. This printer stops at a character
budget, summarises big integers by their size, and recurses only as deep as the parser allowed.
"""

from __future__ import annotations

from fractions import Fraction

from referee.verifiers.math._tree import Node
from referee.verifiers.math._values import (
    Assign,
    Assigns,
    Equation,
    Intervals,
    Matrix,
    Other,
    Scalar,
    Seq,
    SetV,
    Text,
    Unsupported,
    Value,
)

BUDGET = 240
_BINARY = {"/": "/", "^": "^"}


def _int(value: int) -> str:
    return str(value) if value.bit_length() <= 200 else f"<{value.bit_length()}-bit integer>"


def _num(value: Fraction) -> str:
    if value.denominator == 1:
        return _int(value.numerator)
    return f"{_int(value.numerator)}/{_int(value.denominator)}"


class _Out:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def put(self, text: str) -> bool:
        if self.size >= BUDGET:
            return False
        self.parts.append(text)
        self.size += len(text)
        return True

    def text(self) -> str:
        joined = "".join(self.parts)
        return joined if len(joined) <= BUDGET else joined[:BUDGET] + "…"


def _node(node: Node, out: _Out) -> None:
    if out.size >= BUDGET:
        return
    tag = node[0]
    if tag == "n":
        out.put(_num(node[1]))
    elif tag in ("s", "c"):
        out.put(str(node[1]))
    elif tag == "inf":
        out.put("oo")
    elif tag in ("+", "*"):
        out.put("(")
        for k, child in enumerate(node[1:]):
            if k:
                out.put(" + " if tag == "+" else "*")
            _node(child, out)
            if out.size >= BUDGET:
                return
        out.put(")")
    elif tag == "neg":
        out.put("-")
        _node(node[1], out)
    elif tag in _BINARY:
        out.put("(")
        _node(node[1], out)
        out.put(_BINARY[tag])
        _node(node[2], out)
        out.put(")")
    elif tag == "base":
        out.put(f"{node[1][:40]}_{node[2]}")
    else:
        name = node[1] if tag == "f" else tag
        out.put(f"{name}(")
        children = node[2:] if tag == "f" else node[1:]
        for k, child in enumerate(children):
            if k:
                out.put(", ")
            if isinstance(child, tuple) and child and isinstance(child[0], str):
                _node(child, out)
            else:
                out.put(str(child)[:20])
        out.put(")")


def _value(value: Value, out: _Out) -> None:
    if out.size >= BUDGET:
        return
    if isinstance(value, Scalar):
        _node(value.expr.node, out)
        if value.pct:
            out.put("%")
    elif isinstance(value, Seq | SetV):
        opener, closer = ("{", "}") if isinstance(value, SetV) else ("(", ")")
        sep = ":" if isinstance(value, Seq) and value.kind == "ratio" else ", "
        out.put(opener)
        for k, item in enumerate(value.items):
            if k:
                out.put(sep)
            _value(item, out)
        out.put(closer)
    elif isinstance(value, Intervals):
        if not value.parts:
            out.put("{}")
        for k, part in enumerate(value.parts):
            if k:
                out.put(" U ")
            out.put("[" if part.lo_closed else "(")
            _node(part.lo.node, out)
            out.put(", ")
            _node(part.hi.node, out)
            out.put("]" if part.hi_closed else ")")
    elif isinstance(value, Matrix):
        out.put("matrix(")
        for row in value.rows:
            _value(Seq(row), out)
        out.put(")")
    elif isinstance(value, Assign):
        out.put(f"{value.var} = ")
        _value(value.value, out)
    elif isinstance(value, Assigns):
        for k, (var, item) in enumerate(value.pairs):
            out.put(", " if k else "")
            out.put(f"{var} = ")
            _value(item, out)
    elif isinstance(value, Equation):
        _node(value.lhs.node, out)
        out.put(" = ")
        _node(value.rhs.node, out)
    elif isinstance(value, Text):
        out.put(repr(value.text[:BUDGET]))
    elif isinstance(value, Unsupported):
        out.put(f"<{value.what}>")
    elif isinstance(value, Other):
        out.put(str(value.node[0]))
        out.put("(...)")


def render(value: Value | None) -> str | None:
    if value is None:
        return None
    out = _Out()
    _value(value, out)
    return out.text()
