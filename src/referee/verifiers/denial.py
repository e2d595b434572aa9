"""Statements that deny or withdraw their value (math policy rule 34), for every verifier that
reads a short final answer (`math`, `numeric`, `multiple_choice`).

A reward that reads "The answer is not 5." as the answer 5 pays a policy for stating the gold
next to a negation: a hack it learns reliably. These patterns find, in plain text around an
answer, the parts the response itself denies:

- a leading negation: "not 5", "it is definitely not $5$", "can't be (A)";
- a negated clause after the answer: "6, not 5", "(D); it can't be (A) or (B)";
- a denying predicate: "5 is wrong", "(A) and (B) are ruled out";
- a withdrawal after the answer with no new value: "Hmm, on reflection this is incorrect.",
  "Actually, I made an error." (a new value after it is a later answer, found by `_extract`).

"not only 5 but also 6" is prose for "5 and 6", not a negation. Every pattern is a bounded
regular expression over one statement or a bounded tail: linear in the length of the text.
"""

from __future__ import annotations

import re

_ADVERB = r"(?:(?:definitely|certainly|surely|clearly|obviously|absolutely|simply|just|actually|really)\s+)"
_NEGATION = (
    r"(?:not|never|no longer|isn't|is not|aren't|are not|wasn't|was not|cannot be|can't be|"
    r"can not be|couldn't be|could not be|won't be|will not be|doesn't equal|does not equal|"
    r"rather than|instead of|(?:does not|doesn't) make sense (?:for it )?to be|makes no sense (?:for it )?to be)"
)
_SUBJECT = (
    r"(?:(?:it|this|that|which|the (?:final |correct )?(?:answer|result|value|option|choice)|"
    r"my (?:final )?answer)\s+)"
)
_VERB = r"(?:(?:is|was|would be|must be|should be)\s+|(?:it|that|this)'s\s+)"
# Every negation and denying predicate below contains one of these: a cheap first scan.
DENIAL_HINT = re.compile(
    r"(?i)not|n't|never|longer|rather|instead|wrong|incorrect|false|impossible|ruled|exclud|"
    r"eliminat|mistake|error"
)
_NOT_ONLY = re.compile(r"(?i)\bnot\s+(?:only|just|merely)\s+(?P<a>.{1,400}?),?\s+but\s+(?:also\s+)?")
# A negation right before what is stated: "not 5", "it is definitely not $5$", "can't be (A)".
NEGATED_BEFORE = re.compile(
    rf"(?i)(?:^|(?<=[\s$(\[{{,;:]))(?:{_SUBJECT}?{_VERB}?|(?:it|that|this)'s\s+){_ADVERB}?{_NEGATION}"
    rf"(?:\s+(?:equal to|equal|be|exactly|the same as))?[\s$\\(]*$"
)
_LEADING = re.compile(
    rf"(?i)^[\s*_$(]*(?:{_SUBJECT}?{_VERB}?|(?:it|that|this)'s\s+){_ADVERB}?{_NEGATION}\b(?!\s+(?:only|just|merely)\b)"
)
# "6, not 5" / "(D); it can't be (A)" / "6 (not 5)" / "6 but not 5": the rest is denied.
_NEGATED_CLAUSE = re.compile(
    rf"(?i)(?:\s*[,;(]|\s+(?:but|and|since|as|because))\s*(?:but\s+|and\s+)?{_SUBJECT}?{_VERB}?"
    rf"{_ADVERB}?{_NEGATION}\b(?!\s+(?:only|just|merely)\b)"
)
_DENYING = (
    r"(?:(?:is|are|was|were|seems|seem|looks|look)\s+" + _ADVERB + r"?(?:wrong|incorrect|false|"
    r"impossible|not (?:correct|right|the (?:answer|solution|result)|valid|possible|it)|"
    r"ruled out|excluded|eliminated|a mistake|an error)|can be ruled out|(?:can|must) be excluded)"
)
# "5 is wrong", "(A) and (B) are ruled out": the predicate right after what it denies.
DENIED_AFTER = re.compile(rf"(?i)^[\s$]*{_DENYING}\b")
_DENYING_CLAUSE = re.compile(rf"(?i)\s+{_DENYING}\b")
# Where a clause starts: the subject of a denying predicate runs back to here. A sentence
# ends one too (". " only: "0.5 is wrong" is one value): "A. B is wrong" denies B alone.
_CLAUSE_START = re.compile(
    r"(?i)(?:[,;:]|\.\s|\((?![A-Za-z]\))|\b(?:since|because|as|and so|so|while|whereas)\b)\s*"
)
# After the final answer: the response disowns it ("this is incorrect", "I made an error").
_WITHDRAWN = re.compile(
    rf"(?i)\b(?:(?:this|that|it|which|the above|my (?:final )?answer|the (?:final )?answer|"
    rf"(?:this|that|the) (?:answer|result|value))\s+(?:is|was|must be|seems|looks)\s+{_ADVERB}?"
    rf"(?:wrong|incorrect|false|not (?:right|correct)|a mistake|an error)|"
    rf"(?:that|it|this)'s\s+{_ADVERB}?(?:wrong|incorrect|not (?:right|correct))|"
    rf"i (?:have )?made (?:a|an) (?:mistake|error)|i (?:do not|don't) know|no answer)\b"
)
# "I made an error in step 2, but the answer is still 42": the withdrawal is not of the answer.
_KEPT_ANYWAY = re.compile(r"(?i)\b(?:still|does(?:n't| not) (?:change|affect)|unchanged|remains)\b")
# "Let me check whether this is wrong": a question about the answer, not a withdrawal.
_QUESTION = re.compile(r"(?i)\b(?:whether|if|check|verify|test|see)\b")


def not_only(text: str) -> str:
    """ "not only 5 but also 6" -> "5 and 6": prose for both, not a negation."""
    return _NOT_ONLY.sub(lambda m: f"{m.group('a')} and ", text)


def split_denial(statement: str) -> tuple[str, list[str]]:
    """(what the statement affirms, what it denies). "not 5" -> ("", ["5"]); "6, not 5" ->
    ("6", ["5"]); "5 is wrong" -> ("", ["5"]); "(D), since (A) is ruled out" -> ("(D)", ["(A)"])."""
    text = not_only(statement)
    leading = _LEADING.match(text)
    if leading is not None:
        return "", [text[leading.end() :].strip()]
    clause = _NEGATED_CLAUSE.search(text)
    if clause is not None:
        return text[: clause.start()], [text[clause.end() :].strip()]
    predicate = _DENYING_CLAUSE.search(text)
    if predicate is not None:
        start = _subject_start(text, predicate.start())
        if start is None:
            return text[predicate.end() :].strip(" ,;:.)"), [text[: predicate.start()].strip()]
        # "(C) is wrong; the answer is (D)": what follows the predicate is affirmed again.
        after = text[predicate.end() :].lstrip(" )")
        kept = f"{text[: start.start()].rstrip(' ,;:')} {after}".strip()
        return kept, [text[start.end() : predicate.start()].strip()]
    return text, []


def _subject_start(text: str, end: int) -> re.Match[str] | None:
    """Where the subject of a denying predicate ending at `end` starts: the last clause word or
    `;`/`:`/`(` before it, else the first comma ("D, as A, B and C are wrong": the subject is
    the whole list; "D, A and B are wrong": what follows the first comma)."""
    starts = list(_CLAUSE_START.finditer(text, 0, end))
    strong = [m for m in starts if m.group(0).strip() != ","]
    return strong[-1] if strong else (starts[0] if starts else None)


def withdrawn(after: str, pattern: re.Pattern[str] | None = None) -> bool:
    """Does the text after the final answer take it back without giving another? (`pattern`:
    the disowning phrases to look for, `_WITHDRAWN` by default)."""
    for match in (pattern or _WITHDRAWN).finditer(after):
        start = max(after.rfind(".", 0, match.start()), after.rfind("\n", 0, match.start())) + 1
        end = after.find(".", match.end())
        if _QUESTION.search(after, start, match.start()):
            continue
        if not _KEPT_ANYWAY.search(after, match.start(), end if end >= 0 else len(after)):
            return True
    return False


_DIGIT = re.compile(r"\d")
MAX_TAIL = 4000  # the withdrawal is searched near the end only: linear, bounded
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textit|mathrm|mbox|operatorname)\s*\{([^{}]{0,400})\}")


def plain_words(answer: str) -> str:
    """`\\text{not } 42` -> "not  42": words wrapped in text commands, for the patterns above."""
    return _TEXT_COMMAND.sub(lambda m: f" {m.group(1)} ", answer)


def denied_near(text: str, start: int, end: int) -> bool:
    """Is the value at text[start:end] negated before it ("not $5$") or denied after it ("5 is
    wrong")?"""
    return bool(NEGATED_BEFORE.search(text, max(0, start - 80), start)) or bool(
        DENIED_AFTER.match(text[end : end + 80])
    )


def box_denial(final: str, spans: list[tuple[int, int, str]]) -> str | None:
    """Why the last box of `final` is no answer under rule 34, or None: it is negated ("not
    \\boxed{5}"), denied ("\\boxed{5} is wrong") or withdrawn after it."""
    start, end, contents = spans[-1]
    if denied_near(final, start, end):
        return "the boxed answer is denied"
    affirmed, _ = split_denial(plain_words(contents))
    if not affirmed.strip():
        return "the boxed answer denies its value"
    if withdrawn(final[end:]):
        return "the boxed answer is withdrawn after it"
    return None


def affirmed_answer(selected: str) -> tuple[str | None, list[str], str | None]:
    """(what an extracted answer affirms, what it denies, why it is no answer): "6, not 5" ->
    ("6", ["5"], None); "not 5" -> (None, ["5"], reason); "42. Hmm, on reflection this is
    incorrect." -> (None, [], reason). The caller refuses an answer equal to a denied value."""
    plain = plain_words(selected)
    # Only what comes after the last number can withdraw it ("I made an error before. The total
    # is 42." keeps 42); without a number (a letter), the whole text.
    digits = [m.end() for m in _DIGIT.finditer(plain[-MAX_TAIL:])]
    if withdrawn(plain[-MAX_TAIL:][digits[-1] :] if digits else plain[-MAX_TAIL:]):
        return None, [], "the answer is withdrawn after it"
    affirmed, denied = split_denial(plain)
    if not affirmed.strip():
        return None, denied, "the answer denies its value" if denied else "no final answer"
    return (affirmed if denied else selected), denied, None
