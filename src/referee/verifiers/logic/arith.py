"""A whitelist arithmetic grammar with exact rational evaluation. No eval, ever.

Accepted characters: digits, whitespace, `+ - * / ( )` and the typographic `× ÷ −`. The grammar
is binary operators only:

    expr   := term (('+' | '-') term)*
    term   := factor (('*' | '/') factor)*
    factor := INTEGER | '(' expr ')'

so the policy's rejections fall out of it: `=` and names/calls are outside the alphabet, `**`
is a `*` where a factor is expected, and a unary sign (`-3`, `(-3)`, `+4`) is an operator where
a factor is expected. Every reason is reported by name.

Work is bounded before any arithmetic happens: at most `MAX_TOKENS` tokens and `MAX_DEPTH`
nested parentheses, integer literals of at most `MAX_DIGITS` digits, and callers pass
`allowed`, the multiset of numbers the puzzle gives, so a literal that is not a given number
(or a given number used too often) is rejected while tokenising. The evaluation therefore
only ever combines the puzzle's own few numbers, and Fractions stay small.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from referee.verifiers.logic.common import Invalid

MAX_TOKENS = 400
MAX_DEPTH = 24
MAX_DIGITS = 12

_OPERATORS = {"+": "+", "-": "-", "*": "*", "/": "/", "×": "*", "÷": "/", "−": "-"}
_PARENS = "()"


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "num", "op" or "paren"
    text: str
    value: int = 0


@dataclass(frozen=True, slots=True)
class Evaluated:
    value: Fraction
    numbers: tuple[int, ...]  # the literals in order of appearance


def tokenize(text: str) -> list[Token]:
    """Whitelist tokeniser; the reasons name the first offending construct."""
    if "=" in text:
        raise Invalid("'=' is not allowed: give the expression only")
    if "**" in text or "^" in text:
        raise Invalid("exponentiation is not allowed")
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if "0" <= ch <= "9":
            j = i
            while j < n and "0" <= text[j] <= "9":
                j += 1
            if j - i > MAX_DIGITS:
                raise Invalid("number literal too long")
            if j < n and text[j] in ".,":
                raise Invalid("only integer literals are allowed")
            tokens.append(Token("num", text[i:j], int(text[i:j])))
            i = j
        elif ch in _OPERATORS:
            tokens.append(Token("op", _OPERATORS[ch]))
            i += 1
        elif ch in _PARENS:
            tokens.append(Token("paren", ch))
            i += 1
        elif ch.isalpha() or ch == "_":
            raise Invalid("names and function calls are not allowed")
        else:
            raise Invalid(f"character {ch!r} is not allowed in an expression")
        if len(tokens) > MAX_TOKENS:
            raise Invalid("expression too long")
    if not tokens:
        raise Invalid("empty expression")
    return tokens


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.numbers: list[int] = []

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expr(self, depth: int) -> Fraction:
        value = self.term(depth)
        while (tok := self.peek()) is not None and tok.kind == "op" and tok.text in "+-":
            self.pos += 1
            rhs = self.term(depth)
            value = value + rhs if tok.text == "+" else value - rhs
        return value

    def term(self, depth: int) -> Fraction:
        value = self.factor(depth)
        while (tok := self.peek()) is not None and tok.kind == "op" and tok.text in "*/":
            self.pos += 1
            rhs = self.factor(depth)
            if tok.text == "*":
                value = value * rhs
            else:
                if rhs == 0:
                    raise Invalid("division by zero")
                value = value / rhs
        return value

    def factor(self, depth: int) -> Fraction:
        tok = self.peek()
        if tok is None:
            raise Invalid("expression ends where a number was expected")
        if tok.kind == "num":
            self.pos += 1
            self.numbers.append(tok.value)
            return Fraction(tok.value)
        if tok.kind == "paren" and tok.text == "(":
            if depth >= MAX_DEPTH:
                raise Invalid("parentheses nested too deeply")
            self.pos += 1
            value = self.expr(depth + 1)
            close = self.peek()
            if close is None or close.text != ")":
                raise Invalid("unbalanced parentheses")
            self.pos += 1
            return value
        if tok.kind == "op" and tok.text in "+-":
            raise Invalid("unary signs are not allowed")
        raise Invalid(f"unexpected {tok.text!r} where a number was expected")


def evaluate(text: str, allowed: Counter[int] | None = None) -> Evaluated:
    """Parse and evaluate `text` exactly. With `allowed`, every literal must come from that
    multiset (checked before evaluating, so foreign or oversized numbers never reach Fraction)."""
    tokens = tokenize(text)
    if allowed is not None:
        used = Counter(t.value for t in tokens if t.kind == "num")
        for number, count in used.items():
            if number not in allowed:
                raise Invalid(f"{number} is not one of the given numbers")
            if count > allowed[number]:
                raise Invalid(f"{number} is used more often than it is given")
    # Depth is also checked on the token stream so the recursive parser stays shallow.
    depth = 0
    for tok in tokens:
        if tok.text == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise Invalid("parentheses nested too deeply")
        elif tok.text == ")":
            depth -= 1
            if depth < 0:
                raise Invalid("unbalanced parentheses")
    if depth != 0:
        raise Invalid("unbalanced parentheses")
    parser = _Parser(tokens)
    value = parser.expr(0)
    if parser.pos != len(tokens):
        raise Invalid(f"unexpected {tokens[parser.pos].text!r} after a complete expression")
    return Evaluated(value, tuple(parser.numbers))
