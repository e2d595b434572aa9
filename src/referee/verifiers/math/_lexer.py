"""Whitelist tokenizer for LaTeX / plain-text math answers.

Only the characters and commands listed in `_tokens` become tokens; anything else (quotes, dots
outside numbers, `@`, unknown `\\commands`, Python syntax such as `__import__`) is a `LexError`,
so model text can never reach anything that evaluates code. Tokens are plain data: the parser
builds its own tree from them. Numbers, commands and symbols are read here, runs of letters by
`_words` (which also drops the words: `strip_words`).
"""

from __future__ import annotations

from fractions import Fraction

from referee.verifiers.math._tokens import (
    COMMANDS,
    DEGREE_MARK,
    GREEK,
    SINGLE_CHAR,
    SPACING,
    SPACING_WITH_ARGUMENT,
    WORD_MARK,
    LexError,
    Num,
    Token,
    function_token,
    is_digit,
)
from referee.verifiers.math._words import marked_word, read_letters, strip_words

__all__ = ["LexError", "Num", "Token", "strip_words", "tokenize"]

MAX_CHARS = 20_000
MAX_DIGITS = 20_000
_CHUNK = 4_000  # Python refuses int(str) beyond 4300 digits: convert long literals in chunks


def _braced_name(text: str, pos: int) -> tuple[str, int]:
    """`{name}` at pos (letters/stars only) -> (name, index after)."""
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos >= len(text) or text[pos] != "{":
        raise LexError("expected {name}")
    end = text.find("}", pos)
    if end < 0 or end - pos > 40:
        raise LexError("bad {name}")
    return text[pos + 1 : end].strip(), end + 1


def _command_at(text: str, pos: int, name: str) -> bool:
    """`\\name` at pos as a whole command name (`\\overlines` is not `\\overline`)."""
    end = pos + 1 + len(name)
    return text.startswith("\\" + name, pos) and not (end < len(text) and text[end].isalpha())


def _after_group(text: str, pos: int) -> int:
    """The index after the braced group at pos (nested braces counted, 200 characters at most)."""
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos >= len(text) or text[pos] != "{":
        raise LexError("expected {...}")
    depth = 0
    for end in range(pos, min(len(text), pos + 200)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return end + 1
    raise LexError("unterminated {...}")


def _digits(text: str) -> int:
    value = 0
    for start in range(0, len(text), _CHUNK):
        chunk = text[start : start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def _number(text: str, pos: int, single_digit: bool) -> tuple[Token, int]:
    n = len(text)
    start = pos
    if single_digit:
        return Token("num", Num(Fraction(int(text[pos])), None, text[pos])), pos + 1
    while pos < n and is_digit(text[pos]):
        pos += 1
    int_part = text[start:pos]
    frac_part = ""
    point = False
    if pos < n and text[pos] == "." and (pos + 1 < n and (is_digit(text[pos + 1]) or text[pos + 1] == "\\")):
        point = True
        pos += 1
        f0 = pos
        while pos < n and is_digit(text[pos]):
            pos += 1
        frac_part = text[f0:pos]
    if not int_part and not frac_part:
        raise LexError("lone decimal point")
    if len(int_part) + len(frac_part) > MAX_DIGITS:
        raise LexError("number literal too long")
    # Repeating decimal: 0.\overline{3}, 2.1\overline{6}.
    if point and _command_at(text, pos, "overline"):
        rep, after = _braced_name(text, pos + len("\\overline"))
        if not is_digit(rep) or len(rep) > 200:
            raise LexError("bad repeating decimal")
        fixed = _digits((int_part or "0") + frac_part)
        whole = fixed * 10 ** len(rep) + int(rep)
        value = Fraction(whole - fixed, 10 ** len(frac_part) * (10 ** len(rep) - 1))
        return Token("num", Num(value, None, text[start:after])), after
    value = Fraction(_digits((int_part or "0") + frac_part), 10 ** len(frac_part))
    decimals = len(frac_part) if point else None
    # E-notation (policy: "6.02e23" is 6.02 x 10^23).
    if pos + 1 < n and text[pos] in "eE":
        k = pos + 1
        if text[k] in "+-":
            k += 1
        k0 = k
        while k < n and is_digit(text[k]) and k - k0 < 6:
            k += 1
        if k > k0 and not (k < n and (is_digit(text[k]) or text[k].isalpha())):
            exponent = int(text[pos + 1 : k])
            if abs(exponent) > 10_000:
                raise LexError("exponent too large")
            return Token("num", Num(value, decimals, text[start:k], exponent)), k
    return Token("num", Num(value, decimals, text[start:pos])), pos


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_CHARS:
        raise LexError("answer too long")
    return _Lexer(text).run()


class _Lexer:
    """One left-to-right pass. `single_args` counts down the single-character arguments of
    `\\frac12` / `\\sqrt2` (the command itself included), so "12" there is two numbers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.single_args = 0

    def run(self) -> list[Token]:
        text, n = self.text, self.n
        tokens: list[Token] = []
        while self.pos < n:
            ch = text[self.pos]
            if ch.isspace():
                self.pos += 1
            elif ch == WORD_MARK:
                tok, self.pos = marked_word(text, self.pos)
                tokens.append(tok)
            elif ch == DEGREE_MARK:
                self.pos += 1
                tokens.append(Token("op", "deg"))
            elif is_digit(ch) or (ch == "." and self.pos + 1 < n and is_digit(text[self.pos + 1])):
                tok, self.pos = _number(text, self.pos, self.single_args > 0 and is_digit(ch))
                self._argument_done()
                tokens.append(tok)
            elif ch.isascii() and ch.isalpha():
                letters, self.pos = read_letters(text, self.pos)
                self._argument_done()
                tokens.extend(letters)
            elif ch == "\\":
                command = self._command()
                if command is not None:
                    tokens.append(command)
            else:
                tokens.append(self._symbol(ch))
        return tokens

    def _argument_done(self) -> None:
        self.single_args = max(0, self.single_args - 1)

    def _command(self) -> Token | None:
        """The token of a command at `self.pos`; None for spacing, which means nothing."""
        text, n = self.text, self.n
        pos = self.pos + 1
        if pos < n and text[pos].isalpha():
            end = pos
            while end < n and text[end].isalpha():
                end += 1
            self.pos = end
            if text[pos:end] in SPACING:
                return None
            if text[pos:end] in SPACING_WITH_ARGUMENT:  # `\hspace{1em}`, `\phantom{x}`
                self.pos = _after_group(text, end + (text[end : end + 1] == "*"))
                return None
            tok = self._named_command(text[pos:end])
        elif pos < n and text[pos] in "{}":
            tok, self.pos = Token("lset" if text[pos] == "{" else "rset"), pos + 1
        elif pos < n and text[pos] == "\\":
            tok, self.pos = Token("rowsep"), pos + 1
        elif pos < n and text[pos] == "|":
            tok, self.pos = Token("|"), pos + 1
        else:
            raise LexError("unsupported escape")
        self._argument_done()
        return tok

    def _named_command(self, name: str) -> Token:
        """`\\name` with `self.pos` just after the name; braced operands are read here."""
        if name in COMMANDS:
            kind, val = COMMANDS[name]
            if kind in ("frac", "binom"):
                self.single_args = 3  # counts the command itself, decremented by the caller
            elif kind == "sqrt":
                self.single_args = 2
            return Token(kind, val)
        function = function_token(name)
        if function is not None:
            return function
        if name in GREEK:
            return Token("sym", name)
        if name == "mathbb":
            letter, self.pos = _braced_name(self.text, self.pos)
            return Token("reals") if letter == "R" else Token("word", "mathbb" + letter)
        if name in ("begin", "end"):
            env, self.pos = _braced_name(self.text, self.pos)
            if name == "begin" and env == "array":
                _, self.pos = _braced_name(self.text, self.pos)  # column spec {cc}
            return Token(name, env)
        raise LexError(f"unsupported command \\{name[:30]}")

    def _symbol(self, ch: str) -> Token:
        two = self.text[self.pos : self.pos + 2]
        if two == "**":
            self.pos += 2
            return Token("op", "^")
        if two in ("<=", ">=", "!="):
            self.pos += 2
            return Token("rel", {"<=": "le", ">=": "ge", "!=": "ne"}[two])
        if ch in "*!":
            self.pos += 1
            return Token("op", ch)
        if ch in SINGLE_CHAR:
            kind, val = SINGLE_CHAR[ch]
            self.pos += 1
            if ch in "{[":
                self.single_args = 0
            else:
                self._argument_done()
            return Token(kind, val)
        raise LexError(f"unsupported character {ch!r}")
