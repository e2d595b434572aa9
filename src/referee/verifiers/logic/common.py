"""What every logic verifier shares: answer extraction, size guards and lenient tokenising.

The policy (the first line of `logic_dev.jsonl`) in code form:
- the answer is the LAST complete `<answer>...</answer>` block after the last `</think>`; an
  unclosed `<think>`, no block, an empty block, a block containing answer tags (nesting), or an
  `<answer>` opened after the last block and never closed (a truncated final answer) score 0;
- size guards: a response over 2,000,000 characters, more than 1,000 `<answer>` tags or an
  answer block over 8,000 characters scores 0 before any parsing, so every checker works on
  at most 8,000 characters;
- control characters (NUL and friends) in the answer block make it invalid.

A checker raises `Invalid(reason)` for anything it cannot accept (malformed, missing, extra,
duplicated or hedged content, a rule violated); `LogicVerifier.check` turns that into a score-0
verdict with the reason. Checkers never see the raw response.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from referee.verifiers.base import Check, Verifier
from referee.verifiers.extract import ANSWER_CLOSE, ANSWER_OPEN, answer_blocks, final_part

MAX_RESPONSE_CHARS = 2_000_000
MAX_ANSWER_CHARS = 8_000
# Collecting every block of "<answer></answer>" × 100,000 costs tens of milliseconds; a
# completion with this many answer tags is degenerate whatever its last block says.
MAX_ANSWER_TAGS = 1_000
# JSON answers are tiny structures (a grid, a mapping); anything nested deeper is junk and
# deep nesting is what makes recursive parsers blow the stack.
MAX_JSON_DEPTH = 8

# C0 controls except tab/newline/carriage return, DEL and C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Quotes and fences a model may wrap a whole answer in ("`D, E, A`", '"infeasible"').
_WRAPPERS = ("```", "`", '"', "'", "“", "‘", "«")
_CLOSERS = {"```": "```", "`": "`", '"': '"', "'": "'", "“": "”", "‘": "’", "«": "»"}


class Invalid(Exception):
    """The candidate answer is not acceptable; the message is the verdict's reason."""


class PuzzleSpec(BaseModel):
    """Base of the reference models: the row's `answer_spec` as is.

    Unknown keys are ignored rather than rejected because a dataset's puzzle record carries
    metadata (`format`, counts of solutions, tags) that the checker does not need.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)


def extract_answer(response: Any) -> str:
    """The answer block to judge, or `Invalid` saying why there is none."""
    if not isinstance(response, str):
        raise Invalid(f"response is not a string ({type(response).__name__})")
    if len(response) > MAX_RESPONSE_CHARS:
        raise Invalid(f"response longer than {MAX_RESPONSE_CHARS} characters")
    part = final_part(response)
    if part is None:
        raise Invalid("<think> is never closed")
    if part.count(ANSWER_OPEN) > MAX_ANSWER_TAGS:
        raise Invalid(f"more than {MAX_ANSWER_TAGS} <answer> tags")
    blocks = answer_blocks(response)
    if not blocks:
        raise Invalid("no complete <answer>...</answer> block after the last </think>")
    # Where the last complete block ends: an <answer> opened after it is a truncated final answer.
    last_end = part.rfind(ANSWER_CLOSE)
    if part.find(ANSWER_OPEN, last_end) >= 0:
        raise Invalid("the last <answer> block is never closed")
    answer = blocks[-1]
    if len(answer) > MAX_ANSWER_CHARS:
        raise Invalid(f"answer block longer than {MAX_ANSWER_CHARS} characters")
    if ANSWER_OPEN in answer:
        raise Invalid("nested <answer> tags")
    if _CONTROL.search(answer):
        raise Invalid("control characters in the answer")
    answer = unwrap(answer)
    if not answer:
        raise Invalid("empty answer block")
    return answer


def unwrap(text: str) -> str:
    """Strip whitespace and one layer of quotes/backticks/code fence around the whole answer."""
    text = text.strip()
    for opener in _WRAPPERS:
        closer = _CLOSERS[opener]
        if len(text) >= len(opener) + len(closer) and text.startswith(opener) and text.endswith(closer):
            inner = text[len(opener) : -len(closer)]
            if opener == "```":
                # A fence may carry a language tag on its first line.
                first, _, rest = inner.partition("\n")
                inner = rest if first.strip().isalnum() or not first.strip() else inner
            if opener not in inner or opener == "```":
                return inner.strip()
    return text


def excerpt(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class LogicVerifier(Verifier):
    """A puzzle checker: the reference is the puzzle, `judge` validates the extracted answer."""

    def prepare(self, reference: Any, options: Any) -> Any:
        return reference

    def judge(self, answer: str, prepared: Any) -> Check:
        """Return a passing Check or raise Invalid. Only called with a guarded answer block."""
        raise NotImplementedError

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        try:
            answer = extract_answer(response)
        except Invalid as exc:
            return Check(0.0, reason=str(exc), details={"stage": "extract"})
        try:
            return self.judge(answer, prepared)
        except Invalid as exc:
            return Check(0.0, reason=str(exc), details={"stage": "check", "answer": excerpt(answer)})
        except RecursionError:
            # Defence in depth: every parser here bounds its depth, so this should not happen.
            return Check(0.0, reason="answer nested too deeply", details={"stage": "check"})


def passed(reason: str = "valid solution", **details: Any) -> Check:
    return Check(1.0, reason=reason, details=details)


# --- lenient tokenising ---------------------------------------------------------------------

# What may separate the items of a list answer: whitespace, punctuation used as a delimiter,
# arrows, brackets and quotes (bracket and quote *style* is format, not content).
_SEPARATOR_CHARS = frozenset(" \t\r\n,;:=|/[](){}<>\"'`“”‘’→⇒➔-–—>.·•*")


def is_separator_text(text: str, extra_words: Iterable[str] = ()) -> bool:
    """True if `text` holds nothing but separators and the given filler words ("and")."""
    words = {w.lower() for w in extra_words}
    token: list[str] = []
    for ch in text + " ":
        if ch in _SEPARATOR_CHARS:
            if token and "".join(token).lower() not in words:
                return False
            token = []
        else:
            token.append(ch)
    return True


def scan_items(text: str, vocabulary: Sequence[str], *, filler: Iterable[str] = ()) -> list[str]:
    """Split `text` into items of `vocabulary` (matched case-insensitively, longest first, on
    word boundaries), requiring that everything between items is separators or filler words.

    Returns the canonical spellings from `vocabulary`. Linear in len(text) × len(vocabulary)
    with an alternation regex built from escaped literals (no backtracking blow-up).
    """
    canon = {v.lower(): v for v in vocabulary}
    ordered = sorted(canon, key=len, reverse=True)
    if not ordered:
        raise Invalid("nothing to match")
    pattern = re.compile(
        r"(?<![0-9A-Za-z_])(?:" + "|".join(re.escape(v) for v in ordered) + r")(?![0-9A-Za-z_])",
        re.IGNORECASE,
    )
    items: list[str] = []
    pos = 0
    fill = tuple(filler)
    for match in pattern.finditer(text):
        gap = text[pos : match.start()]
        if not is_separator_text(gap, fill):
            raise Invalid(f"unexpected text {excerpt(gap.strip(), 40)!r}")
        items.append(canon[match.group(0).lower()])
        pos = match.end()
    if not is_separator_text(text[pos:], fill):
        raise Invalid(f"unexpected text {excerpt(text[pos:].strip(), 40)!r}")
    return items


def json_depth_ok(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Bracket nesting outside strings stays within `limit` (checked before json.loads)."""
    depth = 0
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise Invalid(f"duplicate key {excerpt(key, 40)!r}")
        result[key] = value
    return result


def load_json(text: str) -> Any:
    """Parse a JSON answer with a depth guard and duplicate keys rejected; Invalid on failure."""
    if not json_depth_ok(text):
        raise Invalid("JSON nested too deeply")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError) as exc:
        raise Invalid("malformed JSON") from exc


def looks_like_json(text: str) -> bool:
    return text[:1] in "[{" and text[-1:] in "]}" and '"' in text
