"""Strict parsers of judge replies: one `KEY: VALUE` line, or no verdict at all.

Each built-in template asks the judge to end with one line (`VERDICT: EQUIVALENT`,
`SCORE: 7`, `LABEL: correct`). The parser reads the lines that start with the key, with light
tolerance for how models write them: any case, surrounding whitespace, markdown bold or code
marks (`**VERDICT:** EQUIVALENT`, `` `SCORE: 7` ``), a blockquote or heading mark, a trailing
full stop. Everything else is a parse failure:

- no such line (a refusal, a reply that only reasons, JSON instead of the line);
- two such lines that disagree ("VERDICT: EQUIVALENT ... VERDICT: NOT_EQUIVALENT");
- a value outside the set ("VERDICT: PARTIALLY", "LABEL: mostly_right") or a hedge
  ("VERDICT: EQUIVALENT or NOT_EQUIVALENT");
- a score outside its declared range, or not a number;
- a reply cut off (`finish_reason == "length"`) whose verdict line is its last line: it may
  itself be cut ("SCORE: 1" of "SCORE: 10").

A parse failure becomes an error verdict (masked in training), never a 0 or a 1: the judge's
failure to answer says nothing about the response.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

_DECOR = " \t*_`>#"  # markdown around a verdict line: bold, italics, code, quote, heading
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")


class UnparseableReply(ValueError):
    """The judge's reply holds no verdict this parser can stand behind."""


@dataclass(frozen=True, slots=True)
class Parsed:
    score: float  # in [0, 1]
    value: str  # the verdict, label or score as the judge gave it (normalised)


def normalise_choice(value: str) -> str:
    """`partially correct`, `Partially-Correct` and `PARTIALLY_CORRECT` are one label."""
    return re.sub(r"[\s\-]+", "_", value.strip()).casefold()


def _values(text: str, key: str) -> list[tuple[str, bool]]:
    """The value of each line that starts with `key:`, and whether that line is the reply's last."""
    pattern = re.compile(rf"^(?:final\s+)?{re.escape(key)}\s*[*_`]*\s*[:=]\s*(.*)$", re.IGNORECASE)
    lines = text.splitlines()
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    found = []
    for i, line in enumerate(lines):
        match = pattern.match(line.strip(_DECOR))
        if match is not None:
            value = match.group(1).strip(_DECOR).rstrip(".").strip(_DECOR)
            # Text right after a verdict that ends a sentence: "VERDICT: EQUIVALENT. The ..."
            found.append((value, i == last))
    return found


def _lines(text: str, key: str, finish_reason: str | None) -> list[str]:
    found = _values(text, key)
    if not found:
        cut = " (the reply was cut off at the token limit)" if finish_reason == "length" else ""
        raise UnparseableReply(f"no {key}: line in the judge's reply{cut}")
    if finish_reason == "length" and found[-1][1]:
        raise UnparseableReply(f"the reply was cut off at the token limit on its {key}: line")
    return [value for value, _ in found]


def parse_choice(
    text: str, key: str, choices: Mapping[str, float], finish_reason: str | None = None
) -> Parsed:
    """A `KEY: VALUE` verdict whose value is one of `choices` (compared normalised)."""
    by_norm = {normalise_choice(c): c for c in choices}
    picked: set[str] = set()
    for value in _lines(text, key, finish_reason):
        norm = normalise_choice(value)
        if norm not in by_norm:
            allowed = ", ".join(choices)
            raise UnparseableReply(f"{key}: {value[:80]!r} is not one of {allowed}")
        picked.add(by_norm[norm])
    if len(picked) > 1:
        raise UnparseableReply(f"the reply has {key}: lines that disagree: {', '.join(sorted(picked))}")
    (choice,) = picked
    return Parsed(float(choices[choice]), choice)


def parse_score(text: str, key: str, low: float, high: float, finish_reason: str | None = None) -> Parsed:
    """A `KEY: n` line with n in [low, high] (also written `n/high`), scaled to [0, 1]."""
    numbers: set[float] = set()
    for value in _lines(text, key, finish_reason):
        number, slash, out_of = value.partition("/")
        number = number.strip()
        if not _NUMBER.fullmatch(number):
            raise UnparseableReply(f"{key}: {value[:80]!r} is not a number")
        if slash:
            denominator = out_of.strip().rstrip(".").strip()
            if not _NUMBER.fullmatch(denominator) or float(denominator) != high:
                raise UnparseableReply(f"{key}: {value[:80]!r} is not out of {high:g}")
        score = float(number)
        if not (math.isfinite(score) and low <= score <= high):
            raise UnparseableReply(f"{key}: {number} is outside [{low:g}, {high:g}]")
        numbers.add(score)
    if len(numbers) > 1:
        shown = ", ".join(f"{n:g}" for n in sorted(numbers))
        raise UnparseableReply(f"the reply has {key}: lines that disagree: {shown}")
    (score,) = numbers
    return Parsed((score - low) / (high - low), f"{score:g}")
