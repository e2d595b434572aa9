"""The parser's reading position over the tokens: lookahead, the nesting bound, and the readers
that need no grammar (subscripts, the fraction of a mixed number, the names of bound indices,
the cells of a matrix environment around a reader of one cell).

`_parser.Parser` extends it with the grammar. Depth is bounded by the Python stack actually left,
never by luck.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from referee.verifiers.math._tokens import Token
from referee.verifiers.math._tree import Node

MAX_TOKENS = 30_000
MAX_NESTING = 160  # bracket levels (a continued fraction 100 levels deep is legal LaTeX)
_FRAMES_PER_LEVEL = 12  # Python frames one bracket level costs (list -> relation -> ... -> atom)


class ParseError(ValueError):
    pass


def _stack_depth() -> int:
    depth = 0
    frame = sys._getframe(1)
    while frame is not None and depth < 5000:
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return depth


class TokenCursor:
    def __init__(self, tokens: list[Token]) -> None:
        if len(tokens) > MAX_TOKENS:
            raise ParseError("answer has too many tokens")
        self.toks = tokens
        self.pos = 0
        self.depth = 0
        room = sys.getrecursionlimit() - _stack_depth() - 60
        self.max_depth = max(4, min(MAX_NESTING, room // _FRAMES_PER_LEVEL))
        self.bound: list[tuple[str, str]] = []  # (written, canonical) index of each enclosing sum

    def _peek(self, offset: int = 0) -> Token:
        i = self.pos + offset
        return self.toks[i] if i < len(self.toks) else Token("eof")

    def _is(self, kind: str, val: Any = None) -> bool:
        tok = self._peek()
        return tok.kind == kind and (val is None or tok.val == val)

    def _next(self) -> Token:
        tok = self._peek()
        self.pos += 1
        return tok

    def _expect(self, kind: str) -> None:
        if not self._is(kind):
            raise ParseError(f"expected {kind!r}, found {self._peek().kind!r}")
        self.pos += 1

    @contextmanager
    def _nested(self) -> Iterator[None]:
        """One bracket level deeper for the parse inside the block."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise ParseError("answer nested too deeply")
        try:
            yield
        finally:
            self.depth -= 1

    def _bound_name(self, name: str) -> str:
        """The canonical name of a sum's index (`k` -> `#1#`), or the name itself."""
        for written, canonical in reversed(self.bound):
            if written == name:
                return canonical
        return name

    def _subscript_text(self) -> str:
        """The subscript after `_` as text: `x_1`, `x_{n+1}`, `F_k` (a bound index renamed)."""
        tok = self._next()
        if tok.kind == "num":
            return str(tok.val.text)
        if tok.kind in ("sym", "const"):
            return self._bound_name(str(tok.val))
        if tok.kind == "{":
            parts: list[str] = []
            while not self._is("}"):
                inner = self._next()
                if inner.kind == "num":
                    parts.append(inner.val.text)
                elif inner.kind in ("sym", "const") and len(str(inner.val)) <= 8:
                    parts.append(self._bound_name(str(inner.val)))
                elif inner.kind == "op" and len(str(inner.val)) <= 8:
                    parts.append(str(inner.val))
                else:
                    raise ParseError("bad subscript")
                if len(parts) > 20:
                    raise ParseError("subscript too long")
            self.pos += 1
            return "".join(parts)
        raise ParseError("bad subscript")

    def _mixed_fraction(self) -> Fraction | None:
        """`1/2` right after a whole number written apart from it ("3 1/2"): the tokenizer
        never puts two numbers side by side otherwise. A proper fraction of plain integers
        only, and nothing binding tighter after it."""
        if self.pos >= 2 and self.toks[self.pos - 2].kind in ("frac", "binom", "sqrt"):
            return None  # `\frac12/3`: the 1 is an argument of its own
        toks = self.toks[self.pos : self.pos + 4]
        if len(toks) < 3 or [t.kind for t in toks[:3]] != ["num", "op", "num"] or toks[1].val != "/":
            return None
        top, bottom = toks[0].val, toks[2].val
        if not (top.text.isdigit() and bottom.text.isdigit()) or not 0 <= top.value < bottom.value:
            return None
        if len(toks) == 4 and toks[3].kind in ("op", "num") and toks[3].val not in ("+", "-", "%"):
            return None
        self.pos += 3
        return Fraction(top.value / bottom.value)

    def _cells(self, env: str, cell: Callable[[], Node]) -> list[tuple[Node, ...]]:
        """The rows of `\\begin{env} a & b \\\\ c & d \\end{env}`, each cell read by `cell`."""
        rows: list[tuple[Node, ...]] = []
        row: list[Node] = []
        while True:
            tok = self._peek()
            if tok.kind == "end":
                self.pos += 1
                if tok.val != env:
                    raise ParseError("mismatched \\end")
                break
            if tok.kind == "eof":
                raise ParseError("unterminated matrix")
            if tok.kind in ("&", "rowsep"):
                self.pos += 1
                if tok.kind == "rowsep":
                    rows.append(tuple(row))
                    row = []
                continue
            row.append(cell())
            if self._peek().kind not in ("&", "rowsep", "end"):
                raise ParseError("bad matrix cell")
        if row:
            rows.append(tuple(row))
        return rows
