"""Whitelist tokenizer for LaTeX / plain-text math answers.

Only the characters and commands listed here become tokens; anything else (quotes, dots
outside numbers, `@`, unknown `\\commands`, Python syntax such as `__import__`) is a `LexError`,
so model text can never reach anything that evaluates code. Tokens are plain data: the parser
builds its own tree from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

MAX_CHARS = 20_000
MAX_DIGITS = 20_000
_CHUNK = 4_000  # Python refuses int(str) beyond 4300 digits: convert long literals in chunks
WORD_MARK = "\x01"  # _text marks the argument of \text{...} as one word: \x01word\x01
DEGREE_MARK = "\x03"  # _text's spelling of a degree sign (`^\circ`, `°`)


class LexError(ValueError):
    pass


@dataclass(slots=True)
class Token:
    kind: str
    val: Any = None


@dataclass(frozen=True, slots=True)
class Num:
    value: Fraction  # of the literal, or of its mantissa when it has an exponent
    decimals: int | None  # digits after the point of a terminating decimal literal, else None
    text: str
    exponent: int | None = None  # E-notation `6.02e23`: the value is value x 10^exponent


_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
    "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi", "varphi",
    "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega",
}  # fmt: skip
FUNCTIONS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "ln", "log", "exp", "lg",
}  # fmt: skip
# Other spellings of the inverse functions (`\operatorname{asin}`, `\arsinh`, ...).
_FUNCTION_ALIASES = {
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "arsinh": "arcsinh", "arcosh": "arccosh", "artanh": "arctanh",
}  # fmt: skip
# Functions of a list of arguments: `\max(a, b)`, `\min\{a, b, c\}`, `\gcd(12, 18)`. Spelled
# without a backslash (`\operatorname{lcm}`, `\text{max}`) they are these functions only right
# before their bracket: "5 min" is five minutes.
MULTI_FUNCTIONS = frozenset({"min", "max", "gcd", "lcm"})
# Spacing commands: they separate nothing and mean nothing. Matched as whole names like every
# command, so `\negthinspace` is never `\ne` followed by letters (policy rule 39).
_SPACING = frozenset({
    "thinspace", "medspace", "thickspace", "enspace", "negthinspace", "negmedspace",
    "negthickspace", "nobreakspace", "space", "enskip", "hfill", "allowbreak", "nobreak",
})  # fmt: skip
_SPACING_WITH_ARGUMENT = frozenset({"hspace", "phantom", "hphantom", "vphantom"})
_COMMANDS: dict[str, tuple[str, Any]] = {
    "frac": ("frac", None),
    "sqrt": ("sqrt", None),
    "binom": ("binom", None),
    "pi": ("const", "pi"),
    "imaginaryunit": ("const", "i"),
    "infty": ("inf", None),
    "emptyset": ("empty", None),
    "varnothing": ("empty", None),
    "times": ("op", "*"),
    "cdot": ("op", "*"),
    "ast": ("op", "*"),
    "div": ("op", "/"),
    "pm": ("op", "pm"),
    "mp": ("op", "mp"),
    "cup": ("op", "cup"),
    "cap": ("op", "cap"),
    "setminus": ("op", "setminus"),
    "le": ("rel", "le"),
    "leq": ("rel", "le"),
    "leqslant": ("rel", "le"),
    "ge": ("rel", "ge"),
    "geq": ("rel", "ge"),
    "geqslant": ("rel", "ge"),
    "lt": ("rel", "<"),
    "gt": ("rel", ">"),
    "ne": ("rel", "ne"),
    "neq": ("rel", "ne"),
    "approx": ("rel", "approx"),
    "in": ("rel", "in"),
    "colon": ("rel", ":"),
    "mid": ("|", None),
    "vert": ("|", None),
    "lvert": ("|", None),
    "rvert": ("|", None),
    "lfloor": ("lfloor", None),
    "rfloor": ("rfloor", None),
    "lceil": ("lceil", None),
    "rceil": ("rceil", None),
    "langle": ("(", None),
    "rangle": (")", None),
    "lbrace": ("lset", None),
    "rbrace": ("rset", None),
    "overline": ("overline", None),  # of a number: its complex conjugate
    "angle": ("word", "angle"),  # `\angle ABC = 90^\circ`: the label is ABC
    "triangle": ("word", "triangle"),
    "sum": ("bigop", "sum"),  # with bounds, `\sum_{k=0}^{n-1}` (policy rule 33)
    "prod": ("bigop", "prod"),
    **{name: ("multi", name) for name in MULTI_FUNCTIONS},
}
# Multi-letter words that are always words (units), even when glued to a number or a `^2`.
_UNITS = {
    "cm", "mm", "km", "kg", "mg", "ml", "ft", "yd", "mi", "hr", "hrs", "min", "mins", "sec", "secs",
    "mph", "lb", "lbs", "oz", "sq", "units", "unit", "dollars", "cents", "degrees", "meters",
    "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks",
    "month", "months", "year", "years", "inch", "inches", "foot", "feet", "mile", "miles",
    "meter", "metres", "metre", "gram", "grams", "liter", "liters", "litre", "litres", "pounds",
    "ounces", "yards", "dollar", "cent", "euros", "people", "students", "times", "ways", "kph",
}  # fmt: skip
_PLAIN_WORDS: dict[str, tuple[str, Any]] = {
    "pi": ("const", "pi"),
    "inf": ("inf", None),
    "infty": ("inf", None),
    "infinity": ("inf", None),
    "sqrt": ("sqrt", None),
    "or": ("conn", "or"),
    "and": ("conn", "and"),
}
_SINGLE_CHAR = {
    "+": ("op", "+"),
    "-": ("op", "-"),
    "/": ("op", "/"),
    "^": ("op", "^"),
    "_": ("op", "_"),
    "%": ("op", "%"),
    "=": ("rel", "="),
    "<": ("rel", "<"),
    ">": ("rel", ">"),
    ":": ("rel", ":"),
    "(": ("(", None),
    ")": (")", None),
    "[": ("[", None),
    "]": ("]", None),
    "{": ("{", None),
    "}": ("}", None),
    ",": (",", None),
    ";": (";", None),
    "|": ("|", None),
    "&": ("&", None),
}


# A run of at most this many letters amid math is a product of symbols (`xy`, `abc`); longer
# runs are words even there ("area = 5" is a label either way, "perimeter" is never a product).
MAX_PRODUCT_LETTERS = 4
_OPERATORS = frozenset("+-*/^=<>")
_OPENS_OPERAND = _OPERATORS | frozenset("({[|,")
_ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _math_command(name: str) -> bool:
    """A command after which letters are math: functions, operators, relations, Greek letters."""
    if name in _COMMANDS:
        return _COMMANDS[name][0] != "word"
    return name in FUNCTIONS or name in _GREEK


def _isdigit(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts '¹' and '٣', which int() rejects."""
    return bool(text) and text.isascii() and text.isdigit()


def _letter(ch: str) -> Token:
    if ch in ("e", "i"):
        return Token("const", ch)
    return Token("sym", ch)


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
    while pos < n and _isdigit(text[pos]):
        pos += 1
    int_part = text[start:pos]
    frac_part = ""
    point = False
    if pos < n and text[pos] == "." and (pos + 1 < n and (_isdigit(text[pos + 1]) or text[pos + 1] == "\\")):
        point = True
        pos += 1
        f0 = pos
        while pos < n and _isdigit(text[pos]):
            pos += 1
        frac_part = text[f0:pos]
    if not int_part and not frac_part:
        raise LexError("lone decimal point")
    if len(int_part) + len(frac_part) > MAX_DIGITS:
        raise LexError("number literal too long")
    # Repeating decimal: 0.\overline{3}, 2.1\overline{6}.
    if point and _command_at(text, pos, "overline"):
        rep, after = _braced_name(text, pos + len("\\overline"))
        if not _isdigit(rep) or len(rep) > 200:
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
        while k < n and _isdigit(text[k]) and k - k0 < 6:
            k += 1
        if k > k0 and not (k < n and (_isdigit(text[k]) or text[k].isalpha())):
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
                tokens.append(self._marked_word())
            elif ch == DEGREE_MARK:
                self.pos += 1
                tokens.append(Token("op", "deg"))
            elif _isdigit(ch) or (ch == "." and self.pos + 1 < n and _isdigit(text[self.pos + 1])):
                tok, self.pos = _number(text, self.pos, self.single_args > 0 and _isdigit(ch))
                self._argument_done()
                tokens.append(tok)
            elif ch.isascii() and ch.isalpha():
                tokens.extend(self._letters())
            elif ch == "\\":
                command = self._command()
                if command is not None:
                    tokens.append(command)
            else:
                tokens.append(self._symbol(ch))
        return tokens

    def _argument_done(self) -> None:
        self.single_args = max(0, self.single_args - 1)

    def _marked_word(self) -> Token:
        """Prose the text cleaner marked off (units, "approximately", connectors)."""
        end = self.text.find(WORD_MARK, self.pos + 1)
        if end < 0:
            raise LexError("unterminated word")
        start, word = self.pos, " ".join(self.text[self.pos + 1 : end].lower().split())
        self.pos = end + 1
        if word in MULTI_FUNCTIONS and self._calls(word, start, self.pos):
            return Token("multi", word)  # `\text{max}(3, 5)`
        return Token("conn", word) if word in ("or", "and") else Token("word", word)

    def _letters(self) -> list[Token]:
        text, n, start = self.text, self.n, self.pos
        pos = start
        while pos < n and text[pos].isascii() and text[pos].isalpha():
            pos += 1
        self.pos = pos
        self._argument_done()
        run = text[start:pos]
        lower = run.lower()
        if len(run) == 1:
            return [_letter(run)]
        if lower in FUNCTIONS or lower in _FUNCTION_ALIASES:
            return [Token("func", _FUNCTION_ALIASES.get(lower, lower))]
        if lower in _PLAIN_WORDS:
            kind, val = _PLAIN_WORDS[lower]
            return [Token(kind, val)]
        if lower in MULTI_FUNCTIONS and self._calls(lower, start, pos):
            return [Token("multi", lower)]  # `\operatorname{lcm}(4, 6)`
        glued_left = start > 0 and (text[start - 1].isalnum() or text[start - 1] in ")}]")
        glued_right = pos < n and (text[pos] in "^_({" or _isdigit(text[pos]))
        braced = start > 0 and text[start - 1] == "{" and pos < n and text[pos] == "}"
        if run.isupper() and len(run) <= 4 and (braced or self._names_points(start)):
            return [_letter(letter) for letter in run]  # |AB|, \angle ABC: points, not a word
        amid_math = len(run) <= MAX_PRODUCT_LETTERS and (
            self._math_before(start) or self._operator_after(pos)
        )
        if lower in _UNITS or not (glued_left or glued_right or amid_math):
            return [Token("word", lower)]
        return [_letter(letter) for letter in run]  # "2xy", "a^2b": a product of one-letter symbols

    def _calls(self, name: str, start: int, end: int) -> bool:
        """`max`, `gcd`, ... spelled out (start..end) is the function right before its bracket;
        `min` after a number is minutes ("5 min (about)")."""
        after = self.text[end : end + 12].lstrip()
        if not after.startswith(("(", "\\{", "\\lbrace")):
            return False
        before = self.text[max(0, start - 12) : start].rstrip()
        return not (name == "min" and before[-1:].isdigit())

    def _math_before(self, start: int) -> bool:
        """A letter run right after an operator, an opening bracket or a math command (`\\ln xy`,
        `|xy|`, `\\frac{ab}{2}`, `x = ab`) is a product of symbols, not prose (policy rule 38)."""
        before = self.text[max(0, start - 20) : start].rstrip()
        if before[-1:] in _OPENS_OPERAND:
            return True
        name = before[len(before.rstrip(_ASCII_LETTERS)) :]
        return bool(name) and before[: -len(name)].endswith("\\") and _math_command(name)

    def _operator_after(self, end: int) -> bool:
        """A letter run right before an arithmetic operator or an inequality (`bc + a`,
        `ab \\le 1`) is a product of symbols: dropping it as a word would change the answer.
        Before `=` it may stay a word: `xy = 5` and `time = 5` state 5 either way."""
        after = self.text[end : end + 20].lstrip()
        if after[:1] in _OPERATORS:
            return after[:1] != "="
        name = after[1 : len(after) - len(after[1:].lstrip(_ASCII_LETTERS))] if after[:1] == "\\" else ""
        return name in _COMMANDS and _COMMANDS[name][0] in ("op", "rel") and name != "approx"

    def _names_points(self, start: int) -> bool:
        """Capitals right after `|` or `\\angle` / `\\triangle` name points (`|AB|`), as do
        capitals alone in a group (`\\frac{NO}{BO}`, the caller checks that): prose there is
        spelled `\\text{...}`, which never reaches this point."""
        before = self.text[max(0, start - 12) : start].rstrip()
        return before.endswith(("|", "\\angle", "\\triangle"))

    def _command(self) -> Token | None:
        """The token of a command at `self.pos`; None for spacing, which means nothing."""
        text, n = self.text, self.n
        pos = self.pos + 1
        if pos < n and text[pos].isalpha():
            end = pos
            while end < n and text[end].isalpha():
                end += 1
            self.pos = end
            if text[pos:end] in _SPACING:
                return None
            if text[pos:end] in _SPACING_WITH_ARGUMENT:  # `\hspace{1em}`, `\phantom{x}`
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
        if name in _COMMANDS:
            kind, val = _COMMANDS[name]
            if kind in ("frac", "binom"):
                self.single_args = 3  # counts the command itself, decremented by the caller
            elif kind == "sqrt":
                self.single_args = 2
            return Token(kind, val)
        if name in FUNCTIONS or name in _FUNCTION_ALIASES:
            return Token("func", _FUNCTION_ALIASES.get(name, name))
        if name in _GREEK:
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
        if ch in _SINGLE_CHAR:
            kind, val = _SINGLE_CHAR[ch]
            self.pos += 1
            if ch in "{[":
                self.single_args = 0
            else:
                self._argument_done()
            return Token(kind, val)
        raise LexError(f"unsupported character {ch!r}")


def strip_words(tokens: list[Token]) -> tuple[list[Token], list[str]]:
    """Remove words that are not connectors (units, "dollars", "approximately"), with a `^2`
    or `/` that belongs to a unit ("cm^2", "km/h"). Returns (math tokens, removed words)."""
    out: list[Token] = []
    words: list[str] = []
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.kind == "word":
            words.append(tok.val)
            i += 1
            # unit exponent: cm^2, cm^{2}
            if i + 1 < n and tokens[i].kind == "op" and tokens[i].val == "^":
                if tokens[i + 1].kind == "num":
                    i += 2
                elif tokens[i + 1].kind == "{" and i + 3 < n and tokens[i + 3].kind == "}":
                    i += 4
            # unit ratio: km/h
            if i + 1 < n and tokens[i].kind == "op" and tokens[i].val == "/" and tokens[i + 1].kind == "word":
                i += 1
            continue
        out.append(tok)
        i += 1
    while out and out[0].kind == "conn":
        out.pop(0)
    while out and out[-1].kind in ("conn", ","):
        out.pop()
    return out, words
