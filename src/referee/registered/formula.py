"""A whitelist arithmetic grammar for combining named sub-scores (no eval, no Python AST).

    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "/") unary)*
    unary := "-" unary | atom
    atom  := NUMBER | NAME | FUNC "(" expr ("," expr)* ")" | "(" expr ")"
    FUNC  := min | max | abs | clip      (clip(x, lo, hi))

Names must be the multi verifier's component names. The parser builds a tuple tree once at
registration; evaluation walks it with floats. Formulas come from the registrant, but they
are bounded anyway (length, nesting) so a bad one is a 422, never a hung request.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

MAX_CHARS = 500
MAX_DEPTH = 32
FUNCTIONS = {"min": (2, None), "max": (2, None), "abs": (1, 1), "clip": (3, 3)}

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")

Node = tuple[Any, ...]


class FormulaError(ValueError):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:  # pragma: no cover - the pattern matches any non-blank character
            raise FormulaError(f"cannot read the formula at {pos}")
        number, name, symbol = match.groups()
        if number is not None:
            tokens.append(("num", number))
        elif name is not None:
            tokens.append(("name", name))
        elif symbol in "+-*/(),":
            tokens.append(("op", symbol))
        else:
            raise FormulaError(f"unexpected character {symbol!r} (allowed: numbers, names, + - * / ( ) ,)")
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, names: frozenset[str]) -> None:
        self.tokens = _tokens(text)
        self.i = 0
        self.names = names
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, op: str) -> bool:
        if self.peek() == ("op", op):
            self.i += 1
            return True
        return False

    def expect(self, op: str) -> None:
        if not self.take(op):
            got = self.peek()
            raise FormulaError(f"expected {op!r}, got {got[1] if got else 'the end'!r}")

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(f"formula nested deeper than {MAX_DEPTH}")
        node = self.term()
        while (tok := self.peek()) in (("op", "+"), ("op", "-")):
            self.i += 1
            node = (tok[1], node, self.term())
        self.depth -= 1
        return node

    def term(self) -> Node:
        node = self.unary()
        while (tok := self.peek()) in (("op", "*"), ("op", "/")):
            self.i += 1
            node = (tok[1], node, self.unary())
        return node

    def unary(self) -> Node:
        if self.take("-"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise FormulaError(f"formula nested deeper than {MAX_DEPTH}")
            node = ("neg", self.unary())
            self.depth -= 1
            return node
        return self.atom()

    def atom(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise FormulaError("formula ends too early")
        kind, text = tok
        self.i += 1
        if kind == "num":
            value = float(text)
            if not math.isfinite(value):
                raise FormulaError(f"number {text} is not finite")
            return ("num", value)
        if kind == "name":
            if self.take("("):
                if text not in FUNCTIONS:
                    raise FormulaError(f"unknown function {text!r}; allowed: {', '.join(sorted(FUNCTIONS))}")
                args = [self.expr()]
                while self.take(","):
                    args.append(self.expr())
                self.expect(")")
                low, high = FUNCTIONS[text]
                if len(args) < low or (high is not None and len(args) > high):
                    raise FormulaError(f"{text}() takes {low}{'' if high == low else '+'} arguments")
                return ("call", text, tuple(args))
            if text not in self.names:
                raise FormulaError(f"unknown name {text!r}; components: {', '.join(sorted(self.names))}")
            return ("var", text)
        if text == "(":
            node = self.expr()
            self.expect(")")
            return node
        raise FormulaError(f"unexpected {text!r}")


def parse(text: str, names: frozenset[str]) -> Node:
    if len(text) > MAX_CHARS:
        raise FormulaError(f"formula has {len(text)} characters; limit {MAX_CHARS}")
    parser = _Parser(text, names)
    node = parser.expr()
    extra = parser.peek()
    if extra is not None:
        raise FormulaError(f"unexpected {extra[1]!r} after the formula")
    return node


def variables(node: Node) -> set[str]:
    if node[0] == "var":
        return {node[1]}
    if node[0] == "num":
        return set()
    if node[0] == "call":
        return set().union(*(variables(a) for a in node[2]))
    return set().union(*(variables(a) for a in node[1:]))


def evaluate(node: Node, values: Mapping[str, float]) -> float:
    """Raises ZeroDivisionError on a division by zero (the caller turns it into an error)."""
    op = node[0]
    if op == "num":
        return float(node[1])
    if op == "var":
        return float(values[node[1]])
    if op == "neg":
        return -evaluate(node[1], values)
    if op == "call":
        args = [evaluate(a, values) for a in node[2]]
        name = node[1]
        if name == "min":
            return min(args)
        if name == "max":
            return max(args)
        if name == "abs":
            return abs(args[0])
        return min(max(args[0], args[1]), args[2])  # clip
    left, right = evaluate(node[1], values), evaluate(node[2], values)
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    return left / right
