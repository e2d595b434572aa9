"""Recursive-descent parser: tokens -> a tree of plain tuples (node shapes: `_tree`).

The tree is data, never code: every node is built only by this module (with the node builders
of `_tree`) from whitelisted tokens. Nothing here evaluates anything. The reading position and
the token-level readers are `_cursor`'s; which `|` opens and which closes is decided before
parsing (`_bars`), and what depends on a node's context after it (`_rewrite`, `_bigops`).
"""

from __future__ import annotations

from fractions import Fraction

from referee.verifiers.math._bars import BarError, pair_bars
from referee.verifiers.math._bigops import expand_bigops
from referee.verifiers.math._cursor import ParseError, TokenCursor
from referee.verifiers.math._rewrite import braces_as_grouping, resolve_degrees
from referee.verifiers.math._tokens import Num, Token
from referee.verifiers.math._tree import (
    MAX_TREE_DEPTH,
    Node,
    add_terms,
    bracket_node,
    free_symbols,
    mul_factors,
    tree_depth,
    tuples_of_groups,
)

__all__ = ["ParseError", "Parser", "parse_tokens"]

MAX_CHAIN = 50  # longest power tower / postfix chain
_MATRIX_ENVS = {"pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "matrix", "smallmatrix", "array"}
# Tokens that start a factor multiplied implicitly into the term before it (`2x`, `3(x+1)`).
_IMPLICIT_START = frozenset({
    "num", "sym", "const", "func", "sqrt", "frac", "binom", "(", "lbar", "lfloor", "lceil", "{", "[",
    "lset", "begin", "bigop", "multi",
})  # fmt: skip
_CLOSERS = {")", "]", "}", "rset", "rowsep", "&", "end", "rbar", "rfloor", "rceil", "eof"}
_GROUPING_FUNCTIONS = {"lbar": ("abs", "rbar"), "lfloor": ("floor", "rfloor"), "lceil": ("ceil", "rceil")}
# `\sin^{-1}` is arcsin.
_INVERSE = {
    "sin": "arcsin", "cos": "arccos", "tan": "arctan", "sinh": "arcsinh", "cosh": "arccosh", "tanh": "arctanh",
}  # fmt: skip


class Parser(TokenCursor):
    def __init__(self, tokens: list[Token]) -> None:
        super().__init__(tokens)
        self.degrees = False  # a degree sign was read: `resolve_degrees` has work to do

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
        groups = [0]  # where each `;`-separated group of items starts
        while True:
            tok = self._peek()
            if tok.kind in (",", ";", "conn"):
                self.pos += 1
                if tok.kind == "conn":
                    conns.add(tok.val)
                elif tok.kind == ";" and items and groups[-1] != len(items):
                    groups.append(len(items))
                continue
            if tok.kind in _CLOSERS or (items and self.toks[self.pos - 1].kind not in (",", ";", "conn")):
                return tuples_of_groups(items, groups), conns
            items.append(self._relation())

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
                terms = [(op, add_terms(terms), term)]
        return add_terms(terms)

    def _term(self) -> Node:
        factors = [self._unary()]
        while True:
            tok = self._peek()
            if tok.kind == "op" and tok.val in ("*", "/", "mod"):
                self.pos += 1
                rhs = self._unary()
                if tok.val == "*":
                    factors.append(rhs)
                else:  # `a / b`, `a \mod b`: the left operand is the term so far
                    factors = [(tok.val, mul_factors(factors), rhs)]
            elif self._starts_factor(tok):
                factors.append(self._power())
            else:
                return mul_factors(factors)

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
            return self._bigop(tok.val)
        raise ParseError(f"unexpected {kind!r}")

    def _number(self, num: Num) -> Node:
        node: Node = ("n", num.value, num.decimals)
        if num.exponent is not None:  # 6.02e23 is 6.02 x 10^23, written so (policy rule 40)
            exponent: Node = ("n", Fraction(abs(num.exponent)), None)
            power = ("^", ("n", Fraction(10), None), exponent if num.exponent >= 0 else ("neg", exponent))
            return ("*", node, power)
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
                if _whole_literal(top) and _whole_literal(bottom) and bottom[1] != 0:
                    return ("n", num.value + top[1] / bottom[1], None)
                self.pos = save
        return node

    def _bracket(self, opener: str) -> Node:
        with self._nested():
            items, conns = self._list()
            closer = self._next().kind
        node = bracket_node(opener, closer, items, conns)
        if node is None:
            raise ParseError("unbalanced or malformed brackets")
        return node

    def _function(self, name: str) -> Node:
        with self._nested():
            base, power, name, arg = self._function_parts(name)
        if base is not None:
            node: Node = ("log", base, arg)
        elif name == "lg":
            node = ("log", ("n", Fraction(10), None), arg)
        elif name == "log":
            node = ("f", "ln", arg)
        else:
            node = ("f", name, arg)
        return ("^", node, power) if power is not None else node

    def _function_parts(self, name: str) -> tuple[Node | None, Node | None, str, Node]:
        """(log base, power, name, argument) of `\\log_2 x`, `\\sin^2 2x`, `\\sin^{-1}(x)`."""
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
            arg = mul_factors(factors)
        return base, power, name, arg

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
        with self._nested():
            rows = self._cells(env, self._relation)
        if not rows or any(len(r) != len(rows[0]) for r in rows):
            raise ParseError("ragged matrix")
        return ("matrix", tuple(rows))

    def _bigop(self, op: str) -> Node:
        """`\\sum_{k=lo}^{hi} body` (policy rule 33), bounds in either order. The body is the
        term that follows (its factors, up to the next `+` or `-`: `\\sum_k k + 1` is
        `(\\sum_k k) + 1`), read with the index bound to its canonical name (`_bigops`)."""
        with self._nested():
            index: str | None = None
            lo: Node | None = None
            hi: Node | None = None
            for _ in range(2):
                if index is None and self._is("op", "_"):
                    self.pos += 1
                    index, lo = self._lower_bound()
                elif hi is None and self._is("op", "^"):
                    self.pos += 1
                    hi = self._script_arg()
            if index is None or lo is None or hi is None:
                raise ParseError("a sum or product needs an index and both bounds")
            name = f"#{len(self.bound) + 1}#"
            self.bound.append((index, name))
            try:
                body = self._term()
            finally:
                self.bound.pop()
        return (op, name, lo, hi, body)

    def _lower_bound(self) -> tuple[str, Node]:
        """`{k=0}`: the index (a plain one-letter or Greek name) and its first value."""
        self._expect("{")
        tok = self._next()
        if tok.kind not in ("sym", "const") or not self._is("rel", "="):
            raise ParseError("a sum's lower bound must be `index = value`")
        self.pos += 1
        lo = self._sum()
        self._expect("}")
        return str(tok.val), lo


def _whole_literal(node: Node) -> bool:
    return node[0] == "n" and node[2] is None and node[1].denominator == 1


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
    if any(tok.kind == "lset" for tok in tokens):
        node = braces_as_grouping(node)
    node = expand_bigops(node)
    return resolve_degrees(node) if parser.degrees else node
