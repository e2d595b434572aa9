"""Which part of a completion is its final answer (policy rules 1-3).

Order of precedence, all in the part after the last `</think>`:
1. `\\boxed{}` / `\\fbox{}`: the last box, minus boxes retracted before it ("actually ...
   the correct value is"). Several remaining boxes with different values are returned
   together: the caller treats them as one set (a hedge unless the gold is that set).
   Boxes joined only by "and" or a comma are the parts of one answer, returned as one list.
2. the last `<answer>` block;
3. the last explicit statement: "Answer: X", "the answer is X", "#### X";
4. a concluding sentence that states a value ("... so she sold 160 muffins.").
A completion that ends mid-sentence, opens `<think>` without closing it, or only has an empty
box has no final answer. All scans are linear in the length of the completion.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from referee.verifiers import extract
from referee.verifiers.denial import DENIAL_HINT, denied_near, split_denial, withdrawn
from referee.verifiers.math._prose import NO_VALUE_DENIED, is_prose, sentence_values
from referee.verifiers.math._text import OTHER_SCRIPT_DOUBT

# Words that take back what came before: a box before them is retracted.
_RETRACT = re.compile(
    r"(?i)\b(?:actually|wait|oops|mistake|wrong|incorrect|not correct|error|correction|instead|"
    r"re-?check\w*|re-?do|re-?comput\w*|re-?calculat\w*|re-?count\w*|miscalculat\w*|dropped a|"
    r"scratch that|on second thought|correct (?:value|answer|result|total|count|number) is|"
    r"should be)\b"
)
# A last sentence like these does not state a result.
_NOT_A_CONCLUSION = re.compile(
    r"(?i)\b(?:whether|let me|let's|let us|we need|need to|sorry|cannot(?! be)|can't(?! be)|unable|leave|"
    r"left to the reader|not sure|i think|maybe|perhaps|might|could be)\b|\?"
)
# After the last box: a retraction that names a replacement ("wait, it should be 6").
_RETRACT_AFTER = re.compile(r"(?i)\b(?:wait|actually|oops|mistake|wrong|incorrect|correction)\b")
_REPLACEMENT = re.compile(
    r"(?i)\b(?:should be|is actually|correct (?:answer|value|result) is|answer is)\s*[:：]?\s*(?P<a>[^\n]{1,300})"
)
# ... or that only disowns it ("Wait, that is wrong. I do not know the answer."): no answer at
# all. Narrower than _RETRACT_AFTER on purpose: "Wait, let me double-check: ... yes." keeps it.
_DISOWNED = re.compile(
    r"(?i)\b(?:(?:is|was|that's|it's|this is|that is|it is) (?:wrong|incorrect|a mistake|not (?:right|correct))|"
    r"i (?:do not|don't) know|no answer)\b"
)
# "Answer A: ... Answer B: ...": labelled alternatives are a hedge (policy 3).
_LABELLED = re.compile(r"(?im)\b(?:answer|option|case)\s+(?:[A-Z]|\d)\s*[:：]\s*(?P<a>[^\n]{1,300})")
_DISPLAY_END = re.compile(r"(?s)(?:\$\$|\\\[)(?P<a>[^$]{1,2000}?)(?:\$\$|\\\])$")
# A response ending in inline math after a colon or a linking verb states it ("Answer $9$",
# "The sum is $A + B$", "Here is a zero matrix: $...$"): the formula is closed, so not cut off.
_INLINE_END = re.compile(r"(?s)(?:\$(?P<a>(?:\\\$|[^$]){1,2000}?)\$|\\\((?P<b>.{1,2000}?)\\\))$")
_STATES_BEFORE = re.compile(r"(?i)(?:[:：]|\b(?:answer|is|are|equals))\s*$")
# "... points. Final Answer: The maximum ... is 19.": a final-answer label inside a line.
_FINAL_LABEL = re.compile(r"(?i)\bfinal answer\s*[:：]")
# "The answer is for sure D": an adverb that affirms the value is not part of it.
_AFFIRMING = re.compile(
    r"(?i)^(?:(?:for sure|definitely|certainly|surely|clearly|obviously|undoubtedly|indeed)\b[\s,]*)+"
)
# A formula followed by "So, ..." starts a new sentence even without a full stop between.
_SENTENCE_BREAK = re.compile(
    r"(?<!\\)[.!?]\s+|[。！？।]\s*|\n\s*|(?<=\$)[ \t]+(?=(?:So|Thus|Therefore|Hence|Finally)\b)"
)
# Full stops of other scripts: "…一共有13只鸟。", "…67 कमीजें हैं।" conclude as "." does.
_FULL_STOPS = (".", "!", "。", "！", "।")
# Chat-template tokens: what follows one is not the response ("<|im_start|>user ...").
_CHAT_TOKEN = re.compile(r"<\|[A-Za-z_]{1,20}\|>|</s>|<s>|<(?:end|start)_of_turn>|\[/?INST\]")
# Courtesy sentences after the final statement.
_SIGN_OFF = re.compile(
    r"(?i)(?:^|(?<=[.!?\s]))(?:i hope (?:it|this|that) (?:is|was) (?:correct|right|helpful)|"
    r"hope (?:this|that|it) helps|let me know if [^.!?\n]{0,200}|feel free to [^.!?\n]{0,200})"
    r"[.!]?\s*$"
)
# "The largest $n$ is 34": the stated value follows the last linking verb outside math.
_LINK = re.compile(r"(?i)\b(?:is|are|equals|was|were|be)\s+")
# `y_1 = \boxed{2}`: the name a box is assigned to, right before it.
_BOX_LABEL = re.compile(r"(?:^|[\s$(,])([A-Za-z](?:_\{?[A-Za-z0-9]{1,4}\}?)?)\s*=\s*$")

# Between two boxes that are parts of one answer: "and" or a comma, with spacing, `$` and
# `\text{...}` around it (`\boxed{2} \quad \text{and} \quad \boxed{3}`). "or" is not here:
# boxes joined by "or" are alternatives (a set of solutions, or a hedge).
_PART_GAP = re.compile(
    r"(?:\s|\$|\\q?quad(?![A-Za-z])|\\[,;:! ])*"
    r"(?:,|(?:,\s*)?(?:\band\b|\\(?:text|textrm|mathrm)\s*\{\s*and\s*\}))"
    r"(?:\s|\$|\\q?quad(?![A-Za-z])|\\[,;:! ])*"
)
MAX_STATEMENT = 2000
MAX_TAIL = 4000  # the concluding sentence is searched in the last characters only
MAX_LABELLED = 16  # `y_1 = \boxed{..}` parts of one answer; more boxes than this are a spray


DENIED = "no final answer: the response denies or withdraws the value it states"
MAX_BARE = 300  # a bare completion (`options.bare_answer`) is one short line


@dataclass(slots=True)
class Extracted:
    answers: list[str] = field(default_factory=list)
    how: str = "none"
    reason: str | None = None
    # Values the response denies at or after its final answer ("6, not 5"; "\boxed{42}. The
    # answer is not 42."): the caller scores 0 when one of them equals the answer (rule 34).
    denied: list[str] = field(default_factory=list)


def _none(reason: str) -> Extracted:
    return Extracted([], "none", reason)


def _has_hint(hints: list[int], start: int, end: int) -> bool:
    at = bisect.bisect_left(hints, start)
    return at < len(hints) and hints[at] < end


def _boxed(part: str, spans: list[tuple[int, int, str]], denied: list[str]) -> Extracted:
    tail = part[spans[-1][1] :]
    if "\\boxed" in tail or "\\fbox" in tail:
        return _none("the last \\boxed{} is cut off")
    # "The answer is not \boxed{5}", "\boxed{5} is wrong": a denied box is no answer. One scan
    # for the words first: 100k boxes must not cost 100k pattern searches.
    hints = [m.start() for m in DENIAL_HINT.finditer(part)]
    if hints:
        near = [denied_near(part, s, e) if _has_hint(hints, s - 80, e + 80) else False for s, e, _ in spans]
        denied = denied + [c for (_, _, c), no in zip(spans, near, strict=True) if no]
        spans = [span for span, no in zip(spans, near, strict=True) if not no]
        if not spans:
            return _none(DENIED)
    retraction = _RETRACT_AFTER.search(tail)
    if retraction is not None:
        replacements = list(_REPLACEMENT.finditer(tail, retraction.end()))
        replaced = clean_statement(replacements[-1].group("a")) if replacements else None
        if replaced:
            return Extracted([replaced], "retracted-box")
        if withdrawn(tail[retraction.start() :], _DISOWNED):
            return _none("the last \\boxed{} is retracted after it, with no new answer")
    if withdrawn(tail):
        return _none("the last \\boxed{} is retracted after it, with no new answer")
    start = 0
    for k in range(1, len(spans)):
        if _RETRACT.search(part[spans[k - 1][1] : spans[k][0]]):
            start = k
    kept = [contents for _, _, contents in spans[start:]]
    if 1 < len(kept) <= MAX_LABELLED:
        # `y_1 = \boxed{2}` and `y_2 = \boxed{3}`: parts of one answer, named by their labels.
        labels = [_BOX_LABEL.search(part[max(0, s - 40) : s]) for s, _, _ in spans[start:]]
        if all(labels):
            kept = [f"{m.group(1)} = {c}" for m, c in zip(labels, kept, strict=True) if m]
        elif _parts_of_one_answer(part, spans[start:]):
            return Extracted([", ".join(c.strip() for c in kept)], "boxed-parts", denied=denied)
    if not kept[-1].strip():
        return _none("the final \\boxed{} is empty")
    # Identical boxes are one answer (kept at their last position): a completion repeating
    # `\boxed{1}` 100k times must not be parsed 100k times.
    distinct = dict.fromkeys(c for c in reversed(kept) if c.strip())
    return Extracted(list(reversed(distinct)), "boxed", denied=denied)


def _parts_of_one_answer(part: str, spans: list[tuple[int, int, str]]) -> bool:
    """`\boxed{A} and \boxed{B}`, `\boxed{A}, \boxed{B}`: consecutive boxes with only "and"
    or a comma between them are the parts of one answer, read as the list `A, B` (policy rule
    32). Boxes whose contents are all the same stay one answer; a box holding its own list or
    an alternative is left alone."""
    contents = [c.strip() for _, _, c in spans]
    if len(set(contents)) < 2 or any(not c or any(ch in c for ch in ",;") for c in contents):
        return False
    gaps = (part[spans[k - 1][1] : spans[k][0]] for k in range(1, len(spans)))
    return all(len(gap) <= 80 and _PART_GAP.fullmatch(gap) for gap in gaps)


def _sentence_end(text: str) -> int:
    """Index of the end of the first sentence of `text` (math between $...$ is skipped)."""
    in_math = False
    for i, ch in enumerate(text):
        if ch == "$":
            # A `$` with no partner later is currency, not math.
            in_math = not in_math and text.find("$", i + 1) >= 0
        elif not in_math and (ch == "\n" or (ch in ".!" and (i + 1 == len(text) or text[i + 1].isspace()))):
            return i
    return len(text)


def clean_statement(text: str) -> str | None:
    """The answer in "X. I hope it is correct" / "$x$ dollars" / "**12**"."""
    return read_statement(text)[0]


_RELATIVE = re.compile(r"(?i),\s*(?:which|that)\s+(?:is|are|was|means|gives|makes|equals)\b")
_REMARK = re.compile(r"\s*\((?=[^()$\\]*(?:[A-Za-z]{3}|[A-Za-z]{2}\s+[A-Za-z]{2}))[^()$\\]{1,200}\)\s*$")


def read_statement(text: str) -> tuple[str | None, list[str]]:
    """(the answer a statement affirms, the values it denies): "6, not 5" -> ("6", ["5"]),
    "not 5" / "5 is wrong" -> (None, ["5"]) (rule 34)."""
    text = text.strip()
    text = text[: _sentence_end(text)].replace("**", " ").replace("__", " ")
    text, denied = split_denial(text)
    # "5, which is less than 6" / "34, which is even": a relative clause describes the value
    # stated before it; "the number of ways, which is 42" states its value in the clause.
    # A closing remark in parentheses ("5 (less than 6)", "12 (in cm)") is about the value too.
    for pattern in (_RELATIVE, _REMARK):
        clause = pattern.search(text)
        if clause is not None and _holds_value(text[: clause.start()]):
            text = text[: clause.start()]
    for delim in ("$", "\\(", "\\["):
        at = text.find(delim)
        if at > 0:
            text = text[at:]
            break
    # "16, which is not 15" was split above; "The largest $n$ is not 34" is split after the link.
    text, denied_after_link = split_denial(_after_link(text))
    text = _AFFIRMING.sub("", text.strip()).rstrip(".").strip().rstrip(" ,;(")
    return (text or None), denied + denied_after_link


def _after_link(text: str) -> str:
    """ "The largest $n$ is 34" -> "34": what follows the last linking verb outside `$...$`,
    when it holds a digit or math."""
    last = None
    for match in _LINK.finditer(text):
        if text.count("$", 0, match.start()) % 2 == 0:
            last = match
    if last is None:
        return text
    rest = text[last.end() :]
    return rest if _holds_value(rest) else text


def _holds_value(text: str) -> bool:
    """A digit or math (`$`, a command): what states a value, as opposed to prose alone."""
    return any(ch.isdigit() or ch in "$\\" for ch in text)


def _concluding(part: str) -> Extracted:
    tail = part[-MAX_TAIL:].rstrip()
    while tail and tail[-1] in "*_`":
        tail = tail[:-1].rstrip()
    for _ in range(3):
        sign_off = _SIGN_OFF.search(tail)
        if sign_off is None:
            break
        tail = tail[: sign_off.start()].rstrip()
    display = _DISPLAY_END.search(tail)
    if display is not None:  # "**Final Answer**\n$$ 42 $$"
        return Extracted([display.group("a")], "display")
    near_end = tail[-2100:]
    inline = _INLINE_END.search(near_end)
    if inline is not None and _STATES_BEFORE.search(near_end[max(0, inline.start() - 40) : inline.start()]):
        formula = inline.group("a") if inline.group("a") is not None else inline.group("b")
        if formula.strip():
            return Extracted([formula], "inline")
    labels = list(_FINAL_LABEL.finditer(tail))
    if labels:
        cleaned = clean_statement(tail[labels[-1].end() : labels[-1].end() + MAX_STATEMENT])
        if cleaned:
            return Extracted([cleaned], "statement")
    if not tail.endswith(_FULL_STOPS):
        return _none("no final answer: the response does not conclude (cut off or no statement)")
    breaks = list(_SENTENCE_BREAK.finditer(tail, 0, len(tail) - 1))
    sentence = tail[breaks[-1].end() :] if breaks else tail
    if _NOT_A_CONCLUSION.search(sentence) or OTHER_SCRIPT_DOUBT.search(sentence):
        return _none("no final answer: the last sentence does not state a result")
    answers, denied, reason = sentence_values(sentence)
    if reason is not None:
        return _none(DENIED if reason == NO_VALUE_DENIED else reason)
    return Extracted(answers, "sentence", denied=denied)


def _without_chat_debris(part: str) -> str:
    """The response up to a leaked chat-template token (`<|im_end|>`, `<|im_start|>user`,
    `</s>`); leading template tokens are skipped."""
    while True:
        token = _CHAT_TOKEN.search(part)
        if token is None:
            return part
        if part[: token.start()].strip():
            return part[: token.start()]
        part = part[token.end() :]


def final_answer(response: str, *, bare_answer: bool = False) -> Extracted:
    """The final answer of a completion. `bare_answer`: a completion that is only a short
    answer (`42`, `x = 3`, `$10^3$`, no sentence or box) states it (`options.bare_answer`)."""
    part = extract.final_part(response)
    if part is None:
        return _none("no final answer: <think> is never closed")
    part = _without_chat_debris(part)
    if not part.strip():
        return _none("no final answer: nothing after the reasoning")
    found = _stated(response, part)
    if bare_answer and not found.answers and found.reason != DENIED:
        return _bare(part) or found
    return found


def _stated(response: str, part: str) -> Extracted:
    spans = extract.boxed_spans(part)
    if spans:
        # "\boxed{200} ... \boxed{255} ... Final Answer: The final answer is $10,455$": an
        # explicit statement after the last box is the later commitment; "The answer is not
        # 42." after \boxed{42} denies it.
        later = [at for at, _ in extract.answer_statements(part) if at >= spans[-1][1]]
        later += [m.end() for m in _FINAL_LABEL.finditer(part, spans[-1][1])]
        denied: list[str] = []
        if later:
            kept, denied = read_statement(part[max(later) : max(later) + MAX_STATEMENT])
            if kept:
                return _unless_withdrawn(part, max(later), Extracted([kept], "statement", denied=denied))
        return _boxed(part, spans, denied)
    block = extract.last_answer_block(response)
    if block is not None and block.strip():
        inner = extract.last_answer_statement(block)
        cleaned = clean_statement(inner if inner is not None else block)
        if cleaned:
            return Extracted([cleaned], "answer_tag")
    labelled = [m.group("a") for m in _LABELLED.finditer(part)]
    if len(labelled) > 1:
        alternatives = [a for a in map(clean_statement, labelled) if a]
        if len(alternatives) > 1:
            return Extracted(alternatives, "statement")
    denied = []
    for at, _ in reversed(extract.answer_statements(part)):
        # Re-read from the statement's start: math between $...$ may run over lines.
        kept, denials = read_statement(part[at : at + MAX_STATEMENT])
        denied += denials  # "Answer: 42. ... The answer is not 42." denies the earlier one
        if kept:
            return _unless_withdrawn(part, at, Extracted([kept], "statement", denied=denied))
    return _concluding(part)


def _unless_withdrawn(part: str, at: int, found: Extracted) -> Extracted:
    """ "Answer: 42. Hmm, on reflection this is incorrect.": a statement the response takes
    back after it, with no later answer, is no answer (rule 34)."""
    end = at + _sentence_end(part[at : at + MAX_STATEMENT])
    return _none(DENIED) if withdrawn(part[end:]) else found


def _bare(part: str) -> Extracted | None:
    """A completion that is nothing but its answer: one short line, no prose."""
    text = part.strip()
    if not text or len(text) > MAX_BARE or "\n" in text or is_prose(text):
        return None
    kept, denied = read_statement(text)
    if not kept:
        return _none(DENIED) if denied else None
    return Extracted([kept], "bare", denied=denied)
