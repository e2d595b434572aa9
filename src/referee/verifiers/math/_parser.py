"""Recursive-descent parser: tokens -> a tree of plain tuples (node shapes: `_tree`).

The tree is data, never code: every node is built only by this module (and `_bigops`, the
grammar of sums and products) from whitelisted tokens.
Nothing here evaluates anything. Depth is bounded by the Python stack actually left.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from referee.verifiers.math._bars import BarError, pair_bars
from referee.verifiers.math._bigops import BigOpError, expand_bigops, parse_bigop
from referee.verifiers.math._lexer import Num, Token
from referee.verifiers.math._tree import MAX_TREE_DEPTH, Node, free_symbols, tree_depth

MAX_TOKENS = 30_000
MAX_NESTING = 160  # bracket levels (a continued fraction 100 levels deep is legal LaTeX)
MAX_CHAIN = 50  # longest power tower / postfix chain
_FRAMES_PER_LEVEL = 12  # Python frames one bracket level costs (list -> relation -> ... -> atom)
_MATRIX_ENVS = {"pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "matrix", "smallmatrix", "array"}
_IMPLICIT_START = {
    "num",
    "sym",
    "const",
    "func",
    "sqrt",
    "frac",
    "binom",
    "(",
    "lbar",
    "lfloor",
    "lceil",
    "{",
    "[",
    "lset",
    "begin",
    "bigop",
    "multi",
}
_CLOSERS = {")", "]", "}", "rset", "rowsep", "&", "end", "rbar", "rfloor", "rceil", "eof"}
_GROUPING_FUNCTIONS = {"lbar": ("abs", "rbar"), "lfloor": ("floor", "rfloor"), "lceil": ("ceil", "rceil")}
_INVERSE = {
    "sin": "arcsin",
    "cos": "arccos",
    "tan": "arctan",
    "sinh": "arcsinh",
    "cosh": "arccosh",
    "tanh": "arctanh",
}
_TRIG = frozenset({"sin", "cos", "tan", "cot", "sec", "csc"})


class ParseError(ValueError):
    pass


def _stack_depth() -> int:
    depth = 0
    frame = sys._getframe(1)
    while frame is not None and depth < 5000:
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return depth


class Parser:
    def __init__(self, tokens: list[Token]) -> None:
        if len(tokens) > MAX_TOKENS:
            raise ParseError("answer has too many tokens")
        self.toks = tokens
        self.pos = 0
        self.depth = 0
        # Bracket nesting is bounded by the Python stack actually left, never by luck.
        room = sys.getrecursionlimit() - _stack_depth() - 60
        self.max_depth = max(4, min(MAX_NESTING, room // _FRAMES_PER_LEVEL))
        self.degrees = False  # a degree sign was read: `_resolve_degrees` has work to do
        self.sets = False  # a `\{…\}` set was read: `_braces_as_grouping` has work to do
        self.bound: list[tuple[str, str]] = []  # (written, canonical) index of each enclosing sum

    # -- helpers -------------------------------------------------------------------------
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

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise ParseError("answer nested too deeply")

    @contextmanager
    def _nested(self) -> Iterator[None]:
        """One bracket level deeper for the parse inside the block."""
        self._enter()
        try:
            yield
        finally:
            self.depth -= 1

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> Node:
        items, conns = self._list()
        if not self._is("eof"):
            raise ParseError(f"unexpected {self._peek().kind!r}")
        if not items:
            raise ParseError("empty answer")
        if len(items) == 1 and not conns:
            return items[0]
        return ("list", tuple(sorted(conns)), tuple(items))

    def _list(self) -> tuple[list[Node], set[str]]:
        items: list[Node] = []
        conns: set[str] = set()
        while True:
            tok = self._peek()
            if tok.kind in (",", ";", "conn"):
                self.pos += 1
                if tok.kind == "conn":
                    conns.add(tok.val)
                continue
            if tok.kind in _CLOSERS:
                return items, conns
            items.append(self._relation())
            if self._peek().kind not in (",", ";", "conn"):
                return items, conns

    def _relation(self) -> Node:
        if self._is("rel", "=") or self._is("rel", "approx"):  # "= 5", "\\approx 3.14"
            self.pos += 1
        first = self._setexpr()
        ops: list[str] = []
        operands = [first]
        while self._is("rel"):
            ops.append(self._next().val)
            operands.append(self._setexpr())
        return ("rel", tuple(ops), tuple(operands)) if ops else first

    def _setexpr(self) -> Node:
        node = self._sum()
        while self._peek().kind == "op" and self._peek().val in ("cup", "cap", "setminus"):
            op = self._next().val
            node = (op, node, self._sum())
        return node

    def _sum(self) -> Node:
        terms = [self._term()]
        while self._peek().kind == "op" and self._peek().val in ("+", "-", "pm", "mp"):
            op = self._next().val
            term = self._term()
            if op == "+":
                terms.append(term)
            elif op == "-":
                terms.append(("neg", term))
            else:
                terms = [(op, _add(terms), term)]
        return _add(terms)

    def _term(self) -> Node:
        factors = [self._unary()]
        while True:
            tok = self._peek()
            if tok.kind == "op" and tok.val in ("*", "/"):
                self.pos += 1
                rhs = self._unary()
                if tok.val == "*":
                    factors.append(rhs)
                else:
                    factors = [("/", _mul(factors), rhs)]
            elif self._starts_factor(tok):
                factors.append(self._power())
            else:
                return _mul(factors)

    def _starts_factor(self, tok: Token) -> bool:
        """Whether `tok` starts a factor multiplied implicitly into the term before it."""
        return tok.kind in _IMPLICIT_START and not (
            tok.kind == "num" and self.toks[self.pos - 1].kind == "num"
        )

    def _unary(self) -> Node:
        signs: list[str] = []
        while self._peek().kind == "op" and self._peek().val in ("+", "-", "pm", "mp"):
            sign = self._next().val
            if sign == "+":
                continue
            if sign == "-" and signs and signs[-1] == "-":  # "--x" is x: keep the tree shallow
                signs.pop()
                continue
            signs.append(sign)
            if len(signs) > 4:
                raise ParseError("too many signs")
        node = self._power()
        for sign in reversed(signs):
            if sign == "-":
                node = ("neg", node)
            elif sign == "pm":
                node = ("upm", node)
            elif sign == "mp":
                node = ("neg", ("upm", node))
        return node

    def _power(self) -> Node:
        operands = [self._postfix()]
        while self._is("op", "^"):
            self.pos += 1
            signs = 0
            while self._peek().kind == "op" and self._peek().val in ("+", "-"):
                signs += self._next().val == "-"
            operand = self._postfix()
            operands.append(("neg", operand) if signs % 2 else operand)
        if len(operands) > MAX_CHAIN:
            raise ParseError("power tower too tall")
        node = operands[-1]
        for base in reversed(operands[:-1]):  # right associative: a^b^c = a^(b^c)
            node = ("^", base, node)
        return node

    def _postfix(self) -> Node:
        node = self._atom()
        count = 0
        while self._peek().kind == "op" and self._peek().val in ("!", "%", "deg"):
            op = self._next().val
            self.degrees |= op == "deg"
            node = (op, node)
            count += 1
            if count > MAX_CHAIN:
                raise ParseError("too many postfix operators")
        return node

    def _arg(self) -> Node:
        """A command argument: a braced group or one token."""
        if self._is("{"):
            self.pos += 1
            with self._nested():
                items, conns = self._list()
                self._expect("}")
            if len(items) != 1 or conns:
                raise ParseError("bad command argument")
            return items[0]
        return self._atom()

    def _script_arg(self) -> Node:
        """A bound after `^` or `_`: an argument, but a lone number or letter takes no subscript
        of its own (`\\sum^3_{k=1}`: the `_` belongs to the sum, not to 3)."""
        tok = self._peek()
        if tok.kind == "num" and tok.val.exponent is None:
            self.pos += 1
            return ("n", tok.val.value, tok.val.decimals)
        if tok.kind in ("sym", "const"):
            self.pos += 1
            name = self._bound_name(str(tok.val))
            return ("c", name) if tok.kind == "const" and name == tok.val else ("s", name)
        return self._arg()

    def _bound_name(self, name: str) -> str:
        """The canonical name of a sum's index (`k` -> `#1#`), or the name itself."""
        for written, canonical in reversed(self.bound):
            if written == name:
                return canonical
        return name

    def _subscript_text(self) -> str:
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

    def _atom(self) -> Node:
        tok = self._next()
        kind = tok.kind
        if kind == "num":
            return self._number(tok.val)
        if self.bound and kind in ("sym", "const") and not self._is("op", "_"):
            name = self._bound_name(str(tok.val))
            if name != tok.val:  # the index of an enclosing sum
                return ("s", name)
        if kind == "sym" and tok.val == "Gamma" and self._is("("):
            return ("f", "gamma", self._atom())  # `\Gamma(x+2)` is the gamma function, (x+1)!
        if kind == "sym" or (kind == "const" and self._is("op", "_")):
            name = str(tok.val)
            if self._is("op", "_"):
                self.pos += 1
                name = f"{name}_{self._subscript_text()}"
            return ("s", name)
        if kind == "const":
            return ("c", tok.val)
        if kind == "inf":
            return ("inf",)
        if kind == "empty":
            return ("empty",)
        if kind == "reals":
            return ("reals",)
        if kind in ("(", "[", "{", "lset"):
            return self._bracket(kind)
        if kind in _GROUPING_FUNCTIONS:
            name, closer = _GROUPING_FUNCTIONS[kind]
            with self._nested():
                inner = self._sum()
                self._expect(closer)
            return ("f", name, inner)
        if kind == "frac":
            return ("/", self._arg(), self._arg())
        if kind == "overline":
            return self._conjugate()
        if kind == "binom":
            return ("binom", self._arg(), self._arg())
        if kind == "sqrt":
            if self._is("["):
                self.pos += 1
                index = self._sum()
                self._expect("]")
                return ("root", self._arg(), index)
            return ("f", "sqrt", self._arg())
        if kind == "func":
            return self._function(tok.val)
        if kind == "begin" and tok.val in _MATRIX_ENVS:
            return self._matrix(tok.val)
        if kind == "multi":
            return self._multi(tok.val)
        if kind == "bigop":
            try:
                return parse_bigop(self, tok.val)
            except BigOpError as exc:
                raise ParseError(str(exc)) from exc
        raise ParseError(f"unexpected {kind!r}")

    def _number(self, num: Num) -> Node:
        node: Node = ("n", num.value, num.decimals)
        if num.exponent is not None:  # 6.02e23 is 6.02 x 10^23, written so (policy rule 40)
            exponent: Node = ("n", Fraction(abs(num.exponent)), None)
            return (
                "*",
                node,
                ("^", ("n", Fraction(10), None), exponent if num.exponent >= 0 else ("neg", exponent)),
            )
        if num.decimals is None and num.text.isascii() and num.text.isdigit():
            mixed = self._mixed_fraction()
            if mixed is not None:  # "1 1/2": a whole number and a proper fraction
                return ("n", num.value + mixed, None)
            if self._is("op", "_"):  # 1011_2: digits in a base
                self.pos += 1
                base = self._subscript_text()
                if not (base.isascii() and base.isdigit()) or not 2 <= int(base) <= 36:
                    raise ParseError("bad base")
                return ("base", num.text, int(base))
            if self._is("frac"):  # mixed number 33\frac{1}{3}
                save = self.pos
                self.pos += 1
                try:
                    top, bottom = self._arg(), self._arg()
                except ParseError:
                    top = bottom = ("",)
                if _is_int_literal(top) and _is_int_literal(bottom) and bottom[1] != 0:
                    return ("n", num.value + top[1] / bottom[1], None)
                self.pos = save
        return node

    def _mixed_fraction(self) -> Fraction | None:
        """`1/2` right after a whole number written apart from it ("3 1/2"): the tokenizer
        never puts two numbers side by side otherwise. A proper fraction of plain integers
        only, and nothing binding tighter after it."""
        if self.pos >= 2 and self.toks[self.pos - 2].kind in ("frac", "binom", "sqrt"):
            return None  # `\\frac12/3`: the 1 is an argument of its own
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

    def _bracket(self, opener: str) -> Node:
        with self._nested():
            items, conns = self._list()
            closer = self._next().kind
        count = len(items)
        if conns and count >= 2 and (opener, closer) in (("(", ")"), ("{", "}"), ("[", "]")):
            return ("list", tuple(sorted(conns)), tuple(items))
        if opener == "lset" and closer == "rset":
            self.sets = True
            return ("set", tuple(items)) if items else ("empty",)
        if opener == "{" and closer == "}":
            # A LaTeX group, not a set (only `\{...\}` is a set): `{1,3}` is the bare list 1, 3.
            if count == 1:
                return items[0]
            return ("list", (), tuple(items)) if items else ("empty",)
        if opener in ("(", "[") and closer in (")", "]"):
            if count == 1 and opener + closer in ("()", "[]"):
                return items[0]
            if count == 2:
                return (
                    ("interval", items[0], items[1], opener == "[", closer == "]")
                    if (opener + closer != "()")
                    else ("tuple", tuple(items))
                )
            if count >= 3 and opener + closer in ("()", "[]"):
                return ("tuple", tuple(items))
        raise ParseError("unbalanced or malformed brackets")

    def _function(self, name: str) -> Node:
        self._enter()
        base: Node | None = None
        power: Node | None = None
        if name == "log" and self._is("op", "_"):
            self.pos += 1
            base = self._arg()
        if self._is("op", "^"):
            self.pos += 1
            negative = False
            while self._peek().kind == "op" and self._peek().val in ("+", "-"):
                negative ^= self._next().val == "-"
            power = self._postfix()
            if negative:
                power = ("neg", power)
            if power == ("neg", ("n", Fraction(1), None)) and name in _INVERSE:
                name, power = _INVERSE[name], None
        if self._is("("):
            arg = self._atom()
        else:  # \sin 2x, \ln 5: the argument runs over implicitly multiplied factors
            factors = [self._power()]
            while self._starts_factor(self._peek()) and self._peek().kind != "func":
                factors.append(self._power())
            arg = _mul(factors)
        self.depth -= 1
        if base is not None:
            node: Node = ("log", base, arg)
        elif name == "lg":
            node = ("log", ("n", Fraction(10), None), arg)
        elif name == "log":
            node = ("f", "ln", arg)
        else:
            node = ("f", name, arg)
        return ("^", node, power) if power is not None else node

    def _conjugate(self) -> Node:
        """`\\overline{3+4i}`: the complex conjugate of a number. Over unknowns it is refused:
        they are sampled as real numbers, where it would change nothing (`\\overline{z}` is not z),
        and `\\overline{AB}` names a segment."""
        arg = self._arg()
        if free_symbols(arg):
            raise ParseError("\\overline over unknowns")
        return ("f", "conj", arg)

    def _multi(self, name: str) -> Node:
        """`\\max(a, b)`, `\\min\\{a, b, c\\}`, `\\gcd(12, 18)`: (name, *arguments)."""
        opener = self._next().kind
        if opener not in ("(", "lset"):
            raise ParseError(f"\\{name} needs its arguments in brackets")
        with self._nested():
            items, conns = self._list()
            self._expect(")" if opener == "(" else "rset")
        if not items or conns:
            raise ParseError(f"bad arguments of \\{name}")
        return (name, *items)

    def _matrix(self, env: str) -> Node:
        self._enter()
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
            if tok.kind == "&":
                self.pos += 1
                continue
            if tok.kind == "rowsep":
                self.pos += 1
                rows.append(tuple(row))
                row = []
                continue
            row.append(self._relation())
            if self._peek().kind not in ("&", "rowsep", "end"):
                raise ParseError("bad matrix cell")
        if row:
            rows.append(tuple(row))
        self.depth -= 1
        if not rows or any(len(r) != len(rows[0]) for r in rows):
            raise ParseError("ragged matrix")
        return ("matrix", tuple(rows))


def _is_int_literal(node: Node) -> bool:
    return node[0] == "n" and node[2] is None and node[1].denominator == 1


def _add(terms: list[Node]) -> Node:
    if len(terms) == 1:
        return terms[0]
    flat: list[Node] = []
    for term in terms:
        flat.extend(term[1:] if term[0] == "+" else (term,))
    return ("+", *flat)


def _mul(factors: list[Node]) -> Node:
    if len(factors) == 1:
        return factors[0]
    flat: list[Node] = []
    for factor in factors:
        flat.extend(factor[1:] if factor[0] == "*" else (factor,))
    return ("*", *flat)


def _resolve_degrees(node: Node, in_trig: bool = False) -> Node:
    """Degree signs: inside the argument of a trigonometric function `a°` is `a*pi/180`;
    anywhere else the sign is dropped (policy 7: `90^\\circ` is 90)."""
    tag = node[0]
    if tag == "deg":
        inner = _resolve_degrees(node[1], in_trig)
        return ("/", _mul([inner, ("c", "pi")]), ("n", Fraction(180), None)) if in_trig else inner
    if tag == "f" and node[1] in _TRIG:
        return ("f", node[1], _resolve_degrees(node[2], True))
    if tag in ("n", "s", "c", "base"):
        return node
    return tuple(
        (_resolve_degrees(x, in_trig) if x and isinstance(x[0], str) else _resolve_degrees(("", *x))[1:])
        if isinstance(x, tuple)
        else x
        for x in node
    )


# Operators whose operands are numbers: a one-item `\{…\}` there is a group, not a set.
_ARITHMETIC = frozenset({
    "+", "*", "neg", "/", "^", "f", "log", "root", "!", "binom", "%", "pm", "mp", "upm", "deg", "sum", "prod",
    "min", "max", "gcd", "lcm",
})  # fmt: skip


def _braces_as_grouping(node: Node) -> Node:
    """`2\\{a+b\\}`, `\\{x+1\\}^2`: a one-item `\\{…\\}` around a compound expression that is an
    operand of arithmetic groups it (policy rule 37); alone or in a set operation it is a
    set. Around a lone symbol it stays a set (`x - \\{x\\}` may be a fractional part)."""
    tag = node[0]
    if not isinstance(tag, str):
        return tuple(_braces_as_grouping(item) for item in node)
    if tag in ("n", "s", "c", "inf", "base"):
        return node
    out: list[Any] = [tag]
    for child in node[1:]:
        if isinstance(child, tuple) and child:
            child = _braces_as_grouping(child)
            if tag in _ARITHMETIC and child[0] == "set" and len(child[1]) == 1 and _compound(child[1][0]):
                child = child[1][0]
        out.append(child)
    return tuple(out)


def _compound(node: Node) -> bool:
    return node[0] not in ("s", "c", "n", "inf", "base")


def parse_tokens(tokens: list[Token]) -> Node:
    try:
        parser = Parser(pair_bars(tokens))
        node = parser.parse()
    except BarError as exc:
        raise ParseError(str(exc)) from exc
    except RecursionError as exc:  # belt and braces: max_depth should prevent it
        raise ParseError("answer nested too deeply") from exc
    if tree_depth(node) > MAX_TREE_DEPTH:
        raise ParseError("expression nested too deeply")
    node = expand_bigops(_braces_as_grouping(node) if parser.sets else node)
    return _resolve_degrees(node) if parser.degrees else node
