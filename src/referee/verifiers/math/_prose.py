"""What a concluding sentence states (policy rules 1, 20, 34, 46, 49 and 52): the values in a
last sentence without a box or an answer statement ("... so she sold 160 muffins.",
"所以一共有13只鸟。"), the values it denies ("6 muffins, not 5."), and the list its last value
ends ("99 or 100"). `_extract` decides that the sentence is the final answer; this module reads
it. Every pattern is a bounded regular expression over one sentence.
"""

from __future__ import annotations

import itertools
import re

from referee.verifiers.denial import denied_near

__all__ = ["NO_VALUE_DENIED", "is_prose", "math_spans", "sentence_values"]

_BOLD = re.compile(r"\*\*([^*\n]{1,200})\*\*")

# A number in prose, with a plain fraction ("2/3", not its denominator), a mixed number
# ("3 1/2") or a ratio or time ("3:5", "8:34", never its last term).
_NUMBER = re.compile(
    r"[-−]?\$?\d[\d,]*(?:\.\d+)?(?:(?::\d+(?:\.\d+)?)+|[ \t]+\d+/\d+(?!\d)|/\d+(?:\.\d+)?)?%?"
)

_CHOICE = re.compile(
    r"\b(?:choice|option|answer)\s+(?:is\s+|must be\s+|would be\s+)?(?:(?:option|choice)\s+)?\(?([A-J])\)?(?![A-Za-z])"
    r"|\b(?:[Ii]t|[Tt]his|[Tt]hat)(?:'s|\s+is|\s+must be)\s+\(?([A-J])\)?(?![A-Za-z])"
    r"|(?<![A-Za-z\\])\(([A-J])\)(?![A-Za-z])"
)

_COMMAND_ARG = re.compile(r"\\[A-Za-z]+(?:\{[^{}]{0,200}\})?")

_PROSE = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}")


def is_prose(text: str) -> bool:
    """Two words side by side outside command names: prose, not a formula."""
    return bool(_PROSE.search(_COMMAND_ARG.sub(" ", text)))


# Between two values of one list: a comma or "or"/"and", also in Chinese or Hindi, where the
# first value's unit may come before the connector ("5个或6个", "5到6个", "5 कमीजें या 6").
_LIST_GAP = re.compile(
    r"(?i)^\s*(?:,\s*(?:(?:or|and)\s+)?|(?:or|and)\s+)$"
    r"|^[\s\u3400-\u9fff\u0900-\u097f]*?(?:[，、,]\s*(?:或者?|或是|还是)?|或者?|或是|还是|和|与|及|到|至|या|अथवा|और)\s*$"
)

# A value right after a bound is not stated ("x is more than 6", "at least $6$"; rule 52).
# The bound's value is no answer either way, nor "2 over 3" (a fraction spoken, not 2).
_BOUND_BEFORE = re.compile(
    r"(?i)\b(?:(?:no\s+)?(?:less|more|fewer|greater|smaller|larger|higher|lower)\s+than|"
    r"at\s+(?:least|most)|up\s+to|below|above|under|over|nearly|almost|exceed(?:s|ing)?)[\s$(]*$"
)

# A LaTeX fraction in prose outside `$...$` ("每份应该是 (\frac{2}{5}) 吨。"): one value.
_PROSE_FRACTION = re.compile(r"\\[dt]?frac\{[^{}$]{1,50}\}\{[^{}$]{1,50}\}")

MAX_LISTED = 64
NO_VALUE_DENIED = "every value the sentence states is denied"


def math_spans(sentence: str) -> list[tuple[int, int, str]]:
    """`$...$` spans whose content looks like math; a `$` that opens prose is currency."""
    spans: list[tuple[int, int, str]] = []
    i = sentence.find("$")
    while i >= 0:
        j = sentence.find("$", i + 1)
        if j < 0:
            break
        content = sentence[i + 1 : j]
        if content.strip() and not is_prose(content):
            spans.append((i, j + 1, content))
            i = sentence.find("$", j + 1)
        else:
            i = j
    return spans


def sentence_values(sentence: str) -> tuple[list[str], list[str], str | None]:
    """(the values a concluding sentence states, the values it denies, why it states none).
    Candidates are `$...$` formulas, prose fractions, numbers (with their fraction, mixed number
    or ratio), bold text and choice letters; the last one that is not denied or bounded counts,
    with the list it ends ("99 or 100", "5个或6个")."""
    spans = math_spans(sentence)
    candidates: list[tuple[int, int, str]] = list(spans)
    # a number or fraction inside `$...$` is part of that formula ("not $10^{9}$" denies 10^9, not 10)
    prose = itertools.chain(_PROSE_FRACTION.finditer(sentence), _NUMBER.finditer(sentence))
    candidates += [
        (m.start(), m.end(), m.group(0))
        for m in prose
        if not any(a <= m.start() and m.end() <= b for a, b, _ in spans)
    ]
    candidates += [(m.start(), m.end(), m.group(1)) for m in _BOLD.finditer(sentence)]
    candidates += [
        (m.start(), m.end(), m.group(1) or m.group(2) or m.group(3)) for m in _CHOICE.finditer(sentence)
    ]
    # "It is definitely not $5$.", "5 is wrong.", "6 muffins, not 5.": denied values are no answer.
    candidates.sort(key=lambda c: (c[1], c[1] - c[0]))
    no = [denied_near(sentence, c[0], c[1]) for c in candidates]
    # "not (A) or (B)" (forwards), "(A), (B) and (C) are ruled out" (backwards): a list shares it.
    listed = [bool(_LIST_GAP.match(sentence[a[1] : b[0]])) for a, b in itertools.pairwise(candidates)]
    for k in range(1, len(candidates)):
        no[k] = no[k] or (no[k - 1] and listed[k - 1])
    for k in range(len(candidates) - 1, 0, -1):
        no[k - 1] = no[k - 1] or (no[k] and listed[k - 1])
    denied = [c[2] for c, n in zip(candidates, no, strict=True) if n]
    candidates = [c for c, n in zip(candidates, no, strict=True) if not n]
    # "x is more than 6": a bounded value is not stated, and "2 over 3" (a fraction spoken) or
    # "5 more than 6" states neither number; "x is 5, which is less than 6" states 5.
    bounded = [bool(_BOUND_BEFORE.search(sentence, max(0, c[0] - 40), c[0])) for c in candidates]
    for k in range(1, len(candidates)):
        gap = sentence[candidates[k - 1][1] : candidates[k][0]]
        joined = not candidates[k - 1][2].endswith(",") and not gap.lstrip().startswith(",")
        if bounded[k] and joined and _BOUND_BEFORE.fullmatch(gap.lstrip()):
            bounded[k - 1] = True
    if any(bounded) and all(bounded):
        return [], denied, "no final answer: the last sentence bounds the value instead of stating it"
    candidates = [c for c, b in zip(candidates, bounded, strict=True) if not b]
    if not candidates:
        return [], denied, NO_VALUE_DENIED if denied else "no final answer found"
    candidates.sort(key=lambda c: (c[1], c[1] - c[0]))
    last = candidates[-1]
    # "99 or 100", "$x = 2$, $x = 4$, and $x = 6$": keep the whole list, judged as one (a set
    # of solutions, or a hedge unless the gold is that set).
    chain = [last]
    while len(chain) <= MAX_LISTED:
        earlier = [c for c in candidates if c[1] <= chain[-1][0]]
        if not earlier:
            break
        prev = max(earlier, key=lambda c: (c[1], c[1] - c[0]))
        if not _LIST_GAP.match(sentence[prev[1] : chain[-1][0]]):
            break
        chain.append(prev)
    return [c[2] for c in reversed(chain)], denied, None
