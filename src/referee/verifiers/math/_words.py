"""Runs of letters: a function name, a product of one-letter symbols (`2xy`, `|xy|`,
`\\frac{ab}{2}`), points (`|AB|`) or a word (units and prose, which `strip_words` drops).

A run is a product where it stands amid math (policy rule 38): glued to a number or a bracket,
or, up to four letters, right after an operator, an opening bracket, a comma or a math command,
or right before an arithmetic operator or an inequality. Elsewhere (alone, between words, before
`=`) it is a word: "5 apples", "area = 5". Units are always words.
"""

from __future__ import annotations

from referee.verifiers.math._tokens import (
    COMMANDS,
    FUNCTIONS,
    GREEK,
    MULTI_FUNCTIONS,
    PLAIN_WORDS,
    UNITS,
    WORD_MARK,
    LexError,
    Token,
    function_token,
    is_digit,
    letter,
)

__all__ = ["marked_word", "read_letters", "strip_words"]

# A run of at most this many letters amid math is a product of symbols (`xy`, `abc`); longer
# runs are words even there ("area = 5" is a label either way, "perimeter" is never a product).
MAX_PRODUCT_LETTERS = 4
_OPERATORS = frozenset("+-*/^=<>")
_OPENS_OPERAND = _OPERATORS | frozenset("({[|,")
_ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _math_command(name: str) -> bool:
    """A command after which letters are math: functions, operators, relations, Greek letters."""
    if name in COMMANDS:
        return COMMANDS[name][0] != "word"
    return name in FUNCTIONS or name in GREEK


def marked_word(text: str, pos: int) -> tuple[Token, int]:
    """Prose the text cleaner marked off at pos (units, "approximately", connectors):
    (token, index after)."""
    end = text.find(WORD_MARK, pos + 1)
    if end < 0:
        raise LexError("unterminated word")
    word = " ".join(text[pos + 1 : end].lower().split())
    if word in MULTI_FUNCTIONS and _calls(text, word, pos, end + 1):
        return Token("multi", word), end + 1  # `\text{max}(3, 5)`
    function = function_token(word)
    if function is not None and text[end + 1 : end + 12].lstrip().startswith("("):
        return function, end + 1  # `\mathrm{floor}(2.5)`: a function, not a unit to drop
    return (Token("conn", word) if word in ("or", "and") else Token("word", word)), end + 1


def read_letters(text: str, start: int) -> tuple[list[Token], int]:
    """The run of ASCII letters at start: (its tokens, index after)."""
    n, pos = len(text), start
    while pos < n and text[pos].isascii() and text[pos].isalpha():
        pos += 1
    run = text[start:pos]
    return _run_tokens(text, run, start, pos), pos


def _run_tokens(text: str, run: str, start: int, end: int) -> list[Token]:
    lower = run.lower()
    if len(run) == 1:
        return [letter(run)]
    function = function_token(lower)
    if function is not None:
        return [function]
    if lower in PLAIN_WORDS:
        kind, val = PLAIN_WORDS[lower]
        return [Token(kind, val)]
    if lower in MULTI_FUNCTIONS and _calls(text, lower, start, end):
        return [Token("multi", lower)]  # `\operatorname{lcm}(4, 6)`
    glued_left = start > 0 and (text[start - 1].isalnum() or text[start - 1] in ")}]")
    glued_right = end < len(text) and (text[end] in "^_({" or is_digit(text[end]))
    braced = start > 0 and text[start - 1] == "{" and end < len(text) and text[end] == "}"
    if run.isupper() and len(run) <= 4 and (braced or _names_points(text, start)):
        return [letter(ch) for ch in run]  # |AB|, \angle ABC: points, not a word
    amid_math = len(run) <= MAX_PRODUCT_LETTERS and (_math_before(text, start) or _operator_after(text, end))
    if lower in UNITS or not (glued_left or glued_right or amid_math):
        return [Token("word", lower)]
    return [letter(ch) for ch in run]  # "2xy", "a^2b": a product of one-letter symbols


def _calls(text: str, name: str, start: int, end: int) -> bool:
    """`max`, `gcd`, ... spelled out (start..end) is the function right before its bracket;
    `min` after a number is minutes ("5 min (about)")."""
    after = text[end : end + 12].lstrip()
    if not after.startswith(("(", "\\{", "\\lbrace")):
        return False
    before = text[max(0, start - 12) : start].rstrip()
    return not (name == "min" and before[-1:].isdigit())


def _math_before(text: str, start: int) -> bool:
    """A letter run right after an operator, an opening bracket or a math command (`\\ln xy`,
    `|xy|`, `\\frac{ab}{2}`, `x = ab`) is a product of symbols, not prose (policy rule 38)."""
    before = text[max(0, start - 20) : start].rstrip()
    if before[-1:] in _OPENS_OPERAND:
        return True
    name = before[len(before.rstrip(_ASCII_LETTERS)) :]
    return bool(name) and before[: -len(name)].endswith("\\") and _math_command(name)


def _operator_after(text: str, end: int) -> bool:
    """A letter run right before an arithmetic operator or an inequality (`bc + a`,
    `ab \\le 1`) is a product of symbols: dropping it as a word would change the answer.
    Before `=` it may stay a word: `xy = 5` and `time = 5` state 5 either way."""
    after = text[end : end + 20].lstrip()
    if after[:1] in _OPERATORS:
        return after[:1] != "="
    name = after[1 : len(after) - len(after[1:].lstrip(_ASCII_LETTERS))] if after[:1] == "\\" else ""
    return name in COMMANDS and COMMANDS[name][0] in ("op", "rel") and name != "approx"


def _names_points(text: str, start: int) -> bool:
    """Capitals right after `|` or `\\angle` / `\\triangle` name points (`|AB|`), as do
    capitals alone in a group (`\\frac{NO}{BO}`, the caller checks that): prose there is
    spelled `\\text{...}`, which never reaches this point."""
    before = text[max(0, start - 12) : start].rstrip()
    return before.endswith(("|", "\\angle", "\\triangle"))


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
