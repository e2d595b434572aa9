"""What the tokenizer knows: the token types, and the whitelists of commands, functions, Greek
letters, units and single characters (`_lexer` reads numbers, commands and symbols with them,
`_words` runs of letters). Anything not listed here is a `LexError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

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


GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
    "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi", "varphi",
    "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega",
}  # fmt: skip
FUNCTIONS = {
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "coth", "sech", "csch", "arcsinh", "arccosh", "arctanh", "ln", "log", "exp", "lg",
}  # fmt: skip
# Other spellings of the inverse functions (`\operatorname{asin}`, `\arsinh`, ...).
FUNCTION_ALIASES = {
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "arsinh": "arcsinh", "arcosh": "arccosh", "artanh": "arctanh",
    "floor": "floor", "ceil": "ceil", "ceiling": "ceil",  # `\floor(a)` is `\lfloor a \rfloor`
}  # fmt: skip
# Functions of a list of arguments: `\max(a, b)`, `\min\{a, b, c\}`, `\gcd(12, 18)`. Spelled
# without a backslash (`\operatorname{lcm}`, `\text{max}`) they are these functions only right
# before their bracket: "5 min" is five minutes.
MULTI_FUNCTIONS = frozenset({"min", "max", "gcd", "lcm"})
# Spacing commands: they separate nothing and mean nothing. Matched as whole names like every
# command, so `\negthinspace` is never `\ne` followed by letters (policy rule 39).
SPACING = frozenset({
    "thinspace", "medspace", "thickspace", "enspace", "negthinspace", "negmedspace",
    "negthickspace", "nobreakspace", "space", "enskip", "hfill", "allowbreak", "nobreak",
})  # fmt: skip
SPACING_WITH_ARGUMENT = frozenset({"hspace", "phantom", "hphantom", "vphantom"})
COMMANDS: dict[str, tuple[str, Any]] = {
    "frac": ("frac", None),
    "sqrt": ("sqrt", None),
    "binom": ("binom", None),
    "pi": ("const", "pi"),
    "imaginaryunit": ("const", "i"),
    "exponentialE": ("const", "e"),
    "infty": ("inf", None),
    "emptyset": ("empty", None),
    "varnothing": ("empty", None),
    "times": ("op", "*"),
    "cdot": ("op", "*"),
    "ast": ("op", "*"),
    "div": ("op", "/"),
    "mod": ("op", "mod"),  # `a \mod b`: the remainder a - b*floor(a/b), bound like `/`
    "bmod": ("op", "mod"),
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
    "lgroup": ("(", None),
    "rgroup": (")", None),
    "lbrack": ("[", None),
    "rbrack": ("]", None),
    "llcorner": ("lfloor", None),  # `\llcorner x \lrcorner`: the floor, as latex2sympy reads it
    "lrcorner": ("rfloor", None),
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
UNITS = {
    "cm", "mm", "km", "kg", "mg", "ml", "ft", "yd", "mi", "hr", "hrs", "min", "mins", "sec", "secs",
    "mph", "lb", "lbs", "oz", "sq", "units", "unit", "dollars", "cents", "degrees", "meters",
    "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks",
    "month", "months", "year", "years", "inch", "inches", "foot", "feet", "mile", "miles",
    "meter", "metres", "metre", "gram", "grams", "liter", "liters", "litre", "litres", "pounds",
    "ounces", "yards", "dollar", "cent", "euros", "people", "students", "times", "ways", "kph",
}  # fmt: skip
PLAIN_WORDS: dict[str, tuple[str, Any]] = {
    "pi": ("const", "pi"),
    "inf": ("inf", None),
    "infty": ("inf", None),
    "infinity": ("inf", None),
    "sqrt": ("sqrt", None),
    "or": ("conn", "or"),
    "and": ("conn", "and"),
}
SINGLE_CHAR = {
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


def is_digit(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts '¹' and '٣', which int() rejects."""
    return bool(text) and text.isascii() and text.isdigit()


def letter(ch: str) -> Token:
    """One letter: the constants e and i, any other a symbol."""
    if ch in ("e", "i"):
        return Token("const", ch)
    return Token("sym", ch)


def function_token(name: str) -> Token | None:
    """The token of a function name (`sin`, `arcsin`, `asin`), None for any other name."""
    if name in FUNCTIONS or name in FUNCTION_ALIASES:
        return Token("func", FUNCTION_ALIASES.get(name, name))
    return None
