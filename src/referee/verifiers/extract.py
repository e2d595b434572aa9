"""Answer extraction shared by every verifier.

All functions are linear-time scans (no backtracking regexes over model text), return `None`
when nothing is found, and never raise on any string input.

Conventions (the DeepSeek-R1 template and common math datasets):
- The *final part* of a completion is what follows the last `</think>`. A completion that opens
  `<think>` and never closes it has no final part (the model was cut off while reasoning).
- `\\boxed{...}` / `\\fbox{...}` contents are taken with balanced braces.
- `<answer>` blocks are taken from the final part only; the last one counts.
"""

from __future__ import annotations

import re

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"

_BOX_COMMANDS = ("\\boxed", "\\fbox")


def final_part(text: str) -> str | None:
    """The text after the last `</think>`, the whole text if there is no think block, or None
    if a `<think>` was opened and never closed."""
    close = text.rfind(THINK_CLOSE)
    if close >= 0:
        return text[close + len(THINK_CLOSE) :]
    if THINK_OPEN in text:
        return None
    return text


_BRACE = re.compile(r"\\[{}]|[{}]")
_BOX = re.compile(r"\\(?:boxed|fbox)")


def _brace_matches(text: str) -> dict[int, int]:
    """Index of the matching `}` for every balanced `{`, in one linear pass over the braces; an
    escaped brace (\\{ \\}) neither opens nor closes. Matching per box instead is quadratic on
    "\\boxed{" * 100000."""
    matches: dict[int, int] = {}
    stack: list[int] = []
    for brace in _BRACE.finditer(text):
        ch = brace.group(0)
        if ch == "{":
            stack.append(brace.start())
        elif ch == "}" and stack:
            matches[stack.pop()] = brace.start()
    return matches


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """All `\\boxed{...}` / `\\fbox{...}` occurrences as (start, end, contents), in order.

    `\\boxed 5` (no braces, one token) is accepted too, as LaTeX accepts it. Unbalanced boxes
    (a truncated completion) are skipped. One scan for the commands, one for the braces.
    """
    spans: list[tuple[int, int, str]] = []
    matches: dict[int, int] | None = None
    n = len(text)
    i = 0
    for box in _BOX.finditer(text):
        start = box.start()
        if start < i:
            continue  # inside the previous box
        j = box.end()
        while j < n and text[j] in " \t":
            j += 1
        if j < n and text[j] == "{":
            if matches is None:
                matches = _brace_matches(text)
            close = matches.get(j)
            if close is None:
                i = j + 1
                continue
            spans.append((start, close + 1, text[j + 1 : close]))
            i = close + 1
        elif j < n and j > box.end() and text[j] not in "\\$":
            # "\\boxed 5": a single token up to whitespace or a math delimiter.
            k = j
            while k < n and not text[k].isspace() and text[k] not in "$":
                k += 1
            spans.append((start, k, text[j:k]))
            i = k
        else:
            i = j
    return spans


def all_boxed(text: str) -> list[str]:
    return [contents for _, _, contents in boxed_spans(text)]


def last_boxed(text: str) -> str | None:
    spans = boxed_spans(text)
    return spans[-1][2] if spans else None


def answer_blocks(text: str) -> list[str]:
    """Contents of complete `<answer>...</answer>` blocks in the final part, in order."""
    part = final_part(text)
    if part is None:
        return []
    blocks: list[str] = []
    i = 0
    while True:
        start = part.find(ANSWER_OPEN, i)
        if start < 0:
            return blocks
        end = part.find(ANSWER_CLOSE, start + len(ANSWER_OPEN))
        if end < 0:
            return blocks
        blocks.append(part[start + len(ANSWER_OPEN) : end])
        i = end + len(ANSWER_CLOSE)


def last_answer_block(text: str) -> str | None:
    """The last `<answer>` block after the last `</think>` (None if none or unclosed think)."""
    blocks = answer_blocks(text)
    return blocks[-1] if blocks else None


# "Answer: X", "The answer: X", "**Final Answer:** X", "The answer is X", "#### X". Anchored on line starts or a
# literal phrase, with bounded character classes: linear on any input. GSM8K's "#### X" counts
# inline too ("... so 72 in all. #### 72"), as verl's own GSM8K scorer reads it.
_ANSWER_LINE = re.compile(
    r"(?im)^[ \t>*_#]*(?:the\s+)?(?:final\s+answer|answer)[ \t*_]*[:：][ \t*_]*(?P<a>[^\n]{1,2000})$"
)
_ANSWER_IS = re.compile(r"(?i)\b(?:final\s+answer|answer)\s+is\s*[:：]?\s*(?P<a>[^\n]{1,2000})")
_HASHES = re.compile(r"(?m)####[ \t]*(?P<a>[^\n#][^\n]{0,1999})$")


def answer_statements(text: str) -> list[tuple[int, str]]:
    """All explicit answer statements as (position, text), in order of position."""
    found: list[tuple[int, str]] = []
    for pattern in (_ANSWER_LINE, _ANSWER_IS, _HASHES):
        for match in pattern.finditer(text):
            value = match.group("a").strip().rstrip(".").strip()
            if value:
                found.append((match.start("a"), value))
    found.sort()
    return found


def last_answer_statement(text: str) -> str | None:
    statements = answer_statements(text)
    return statements[-1][1] if statements else None


_FENCE = re.compile(r"(?m)^[ \t]*(```+|~~~+)[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """All fenced code blocks as (language tag lower-cased, code). An unclosed final fence runs
    to the end of the text (a completion cut off inside its code block)."""
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return blocks
        fence, lang = opening.group(1), opening.group(2).lower()
        body_start = opening.end()
        closing = re.compile(rf"(?m)^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end_match = closing.search(text, body_start)
        if end_match is None:
            blocks.append((lang, text[body_start:]))
            return blocks
        blocks.append((lang, text[body_start : end_match.start()]))
        pos = end_match.end()


def last_fenced_block(text: str, languages: tuple[str, ...] | None = None) -> str | None:
    """The last fenced block whose tag is in `languages` (any tag if None)."""
    for lang, code in reversed(fenced_blocks(text)):
        if languages is None or lang in languages:
            return code
    return None
