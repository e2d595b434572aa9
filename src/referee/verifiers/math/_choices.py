"""Reading a multiple-choice answer: the gold's letter, the response's letter, and the letters
listed after it (a hedge).

A gold such as "C", "(C)" or "C. x = 42" makes `math` compare choice letters (its content, when
given, may be stated instead); a response's final answer "(D)", "\\textbf{(D)}" or "D. 42" gives
its letter, unless arithmetic follows it (`B \\cdot 3` is an expression) or several letters are
named (a hedge, policy 3).
"""

from __future__ import annotations

import re

from referee.verifiers.math._text import WORD_MARK, clean

# A gold that is only a letter: "C", "(C)", "[C]".
CHOICE_GOLD = re.compile(r"^[(\[]?\s*([A-Z])\s*[)\]]?$")
# A multiple-choice gold written with its option's content: "C. x = 42", "(B) 12".
CHOICE_GOLD_CONTENT = re.compile(r"^\s*(?:\(([A-J])\)|([A-J])[.:)])\s+(\S.{0,500})$", re.S)
# Arithmetic right after a letter: `B \cdot 3`, `C + 1`, `E*2` are expressions, not choices.
_AFTER_LETTER_MATH = re.compile(
    r"\s*(?:[-+*/^_=<>!]|\\(?:cdot|times|div|pm|mp|le|ge|ne|neq|leq|geq|lt|gt|frac|sqrt)(?![A-Za-z]))"
)
_MC_RESPONSE = re.compile(r"^(?:option|choice)?\s*[(\[]?\s*([A-Za-z])\s*[)\]]?(?=$|[\s.:,])")
_LETTERS = re.compile(r"(?<![A-Za-z\\])([A-J])(?![A-Za-z])")


def choice_letter(raw: str) -> tuple[str | None, bool]:
    """(letter, hedged) of a multiple-choice answer such as "(D)", "\\textbf{(D)}", "D. 42"."""
    text = clean(raw).replace(WORD_MARK, " ").strip()
    if len(set(_LETTERS.findall(text))) > 1:
        return None, True
    match = _MC_RESPONSE.match(text)
    if match is None or _AFTER_LETTER_MATH.match(text, match.end()):
        return None, False
    return match.group(1).upper(), False


# What may follow a chosen letter and still list more choices: "A. B.", "A) B)", "A\nB",
# "A, (B)", "A or B" after the answer's letter are a hedge.
_TRAILING_CHOICES = re.compile(
    r"^[\s).\]:*_}$]*(?:(?:[,;/&]|\bor\b|\band\b)?[\s*_]*[(\[]?\s*([A-J])\s*[)\].:]?[\s*_]*)+[.\s]*$"
)


def trailing_choices(response: str, raw: str) -> set[str]:
    """The letters written as choices right after the final answer `raw` and nothing else
    (the answer is the response's last occurrence of it)."""
    at = response.rfind(raw.strip())
    tail = response[at + len(raw.strip()) :] if at >= 0 else ""
    if not tail.strip() or len(tail) > 200 or not _TRAILING_CHOICES.match(tail):
        return set()
    return set(_LETTERS.findall(tail))
