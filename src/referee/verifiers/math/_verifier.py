"""The `math` verifier: does the completion's final answer equal the gold answer?

Pipeline: extract the final answer (`_extract`) -> clean its spelling (`_text`) -> whitelist
tokenizer (`_lexer`) -> grammar (`_parser`) -> mathematical object (`_values`) -> equality
under the policy (`_compare`, `_numeric`). The gold goes through the same pipeline once per
group in `prepare`; its evaluations are cached on the prepared object.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from referee.verifiers.base import Check, Verifier
from referee.verifiers.judge.options import EquivalenceOptions
from referee.verifiers.math._choices import (
    CHOICE_GOLD,
    CHOICE_GOLD_CONTENT,
    choice_letter,
    trailing_choices,
)
from referee.verifiers.math._compare import EqualityRules, values_equal
from referee.verifiers.math._extract import Extracted, final_answer
from referee.verifiers.math._format import render
from referee.verifiers.math._lexer import LexError, strip_words, tokenize
from referee.verifiers.math._parser import ParseError, parse_tokens
from referee.verifiers.math._text import WORD_MARK, clean, normalize_text
from referee.verifiers.math._values import (
    ConversionError,
    Other,
    Text,
    Unsupported,
    Value,
    answer_value,
    combine,
)

MAX_RESPONSE_CHARS = 1_000_000  # ~250k tokens; beyond this no completion is judged
# More distinct final answers than this is a spray of boxes (a hedge, policy 3) whatever the
# gold; it also bounds the parsing and the pairwise comparisons of `_check_math`.
MAX_ANSWERS = 64


class MathOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rounded_decimal_gold: bool = Field(
        default=True,
        description=(
            "Treat a decimal gold with k decimals as rounded: an answer with more precision "
            "that rounds half-up to it counts (1/3 for 0.33). Off: decimals must be exact."
        ),
    )
    bare_answer: bool = Field(
        default=False,
        description=(
            "For datasets whose prompts ask for the bare answer: a completion that is only a "
            "short answer (`42`, `x = 3`, `$10^3$`: one line, no sentence, no box) states it. "
            "Off (the default, policy rule 1): such a completion has no final answer."
        ),
    )
    # The judge runs in the service, after the worker checks (scoring/fallback.py); here the
    # options are only declared and validated, and the check marks what it could not read.
    fallback: Literal["judge"] | None = Field(
        default=None,
        description=(
            "judge: an answer math cannot read or compare (details.unreadable) goes to "
            "judge_equivalence with the gold as reference, whose verdict replaces the 0. "
            "Needs judge endpoints in the service (REFEREE_JUDGE_ENDPOINTS)."
        ),
    )
    fallback_options: EquivalenceOptions | None = Field(
        default=None, description="judge_equivalence's options for the fallback (endpoint, model, sampling)."
    )

    @model_validator(mode="after")
    def _fallback_named(self) -> MathOptions:
        if self.fallback_options is not None and self.fallback is None:
            raise ValueError('fallback_options need fallback: "judge"')
        return self


class MathReference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = Field(max_length=20_000, description="The gold answer as the dataset stores it.")
    rounded_decimal_gold: bool | None = Field(default=None, description="Overrides the option.")


@dataclass(slots=True)
class Parsed:
    value: Value | None = None
    words: list[str] = field(default_factory=list)
    error: str | None = None
    denies: bool = False  # no value because the answer's words deny or hedge it


# Words that make an answer a statement about its value rather than the value (rule 34):
# `\boxed{\text{not } 42}`, `\boxed{42 \text{ is wrong}}`, `\boxed{\text{maybe } 42}`. Other
# words name what is counted (units, "dollars", "apples") and are ignored (rule 8); a list of
# units could never be complete, the words that deny or hedge a value are few.
_DENYING_WORDS = frozenset(
    {
        "not", "no", "never", "none", "neither", "nor", "isn't", "isnt", "aren't", "wasn't",
        "cannot", "can't", "wrong", "incorrect", "false", "untrue", "mistake", "error", "maybe",
        "perhaps", "possibly", "probably", "might", "guess", "unsure", "uncertain", "impossible",
        "except", "excluding", "unless",
        # a bound is not the value (rule 52): "less than 6", "at least 6", "up to 6", "below 6"
        "than", "least", "most", "below", "above", "under", "exceeds", "exceeding", "nearly", "almost",
    }
)  # fmt: skip


def parse_answer(raw: str) -> Parsed:
    """One answer string -> its mathematical object (None with an error if unreadable)."""
    try:
        tokens = tokenize(clean(raw))
        math_tokens, words = strip_words(tokens)
        if any(w.strip("()[].,;:!?'\"").casefold() in _DENYING_WORDS for word in words for w in word.split()):
            return Parsed(None, words, "the answer's words deny or hedge its value", denies=True)
        if not math_tokens:
            return Parsed(None, words, "no mathematical content" if not words else None)
        return Parsed(answer_value(parse_tokens(math_tokens)), words)
    except (LexError, ParseError, ConversionError) as exc:
        return Parsed(None, [], str(exc)[:120])


_HEDGE_WORDS = frozenset({"not", "or", "and", "no", "either", "maybe", "perhaps", "isn't", "never"})


def _states_text(answer: str, gold: str) -> bool:
    """ "it is on monday" states "monday": a short answer ending with the gold phrase, with no
    negation or alternative in it."""
    words = answer.split()
    if not gold or len(words) > 8 or not answer.endswith(gold):
        return False
    head = answer[: len(answer) - len(gold)]
    return (not head or head.endswith(" ")) and not (_HEDGE_WORDS & set(words))


# Python frames the parser and the evaluator may use: a continued fraction 100 levels deep is
# legal LaTeX (nesting stays bounded by `_parser.MAX_NESTING` and `_tree.MAX_TREE_DEPTH`). Since
# Python 3.11 Python-to-Python calls do not use the C stack, so a higher limit is safe in any thread.
STACK_FRAMES = 6000
_stack_lock = threading.Lock()
_stack_users = 0
_stack_saved = 0


@contextmanager
def _stack_room() -> Iterator[None]:
    """Raise the recursion limit while any check runs (restored when the last one ends)."""
    global _stack_users, _stack_saved
    with _stack_lock:
        if _stack_users == 0:
            _stack_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_stack_saved, STACK_FRAMES))
        _stack_users += 1
    try:
        yield
    finally:
        with _stack_lock:
            _stack_users -= 1
            if _stack_users == 0:
                sys.setrecursionlimit(_stack_saved)


@dataclass(slots=True)
class Gold:
    raw: str
    mode: str  # "choice" | "text" | "math"
    policy: EqualityRules
    letter: str | None = None
    text: str = ""
    value: Value | None = None


DENIES = "the response denies the answer it states"

# "3s", "10 m", "2.5\,\mathrm{h}": a number and one SI unit letter (rule 41). Read as written
# it is a product with an unknown; against a gold with no unknowns that letter can only be the
# unit, as graders' normalisers read it. Letters that are rarely units (x, y, n, ...) stay
# unknowns: "5x" never equals 5.
_UNIT_LETTER = re.compile(
    r"^(?P<value>(?:[^A-Za-z\\]|\\[A-Za-z]+|\\[{}])*?(?:[\d}]|\\[A-Za-z]+))\s*(?:\\[,;:! ]\s*)*"
    r"(?:\\(?:mathrm|text|textrm|rm)\s*\{\s*(?:s|m|g|h|L|J|N|W|V)\s*\}|(?:s|m|g|h|L|J|N|W|V))\s*$"
)
# A gold with a letter outside a command name has unknowns (or is text): no unit is read then.
_GOLD_LETTER = re.compile(r"(?<!\\)(?<![A-Za-z])[A-Za-z]|(?<=[\d}])[A-Za-z]")


def _unit_letter_equal(raw: str, gold: Gold) -> bool:
    unit = _UNIT_LETTER.match(clean(raw))
    if unit is None or gold.value is None or _GOLD_LETTER.search(_COMMANDS.sub(" ", clean(gold.raw))):
        return False
    if re.search(r"[-+=,<>]", unit.group("value").strip().lstrip("-")):  # "3 + 2s": a sum, not 5 s
        return False
    value = parse_answer(unit.group("value")).value
    return value is not None and values_equal(gold.value, value, gold.policy) is not None


_COMMANDS = re.compile(r"\\[A-Za-z]+")


def _denies(denied: list[str], answer: Value, policy: EqualityRules) -> bool:
    """ "\\boxed{42}. The answer is not 42.": a denied value equal to the answer (rule 34)."""
    for raw in denied[:MAX_ANSWERS]:
        value = parse_answer(raw).value
        if value is not None and values_equal(value, answer, policy) is not None:
            return True
    return False


def _verdict(score: float, reason: str | None, **details: Any) -> Check:
    return Check(score, reason=reason, details={k: v for k, v in details.items() if v is not None})


def _unreadable(reason: str, **details: Any) -> Check:
    """A 0 for want of a reading, not because the answer is wrong: `details.unreadable` says
    so, and a service asked for a fallback (`options.fallback`) has a judge look at it.
    Missing answers, hedges, denials and answers read and found different are never this."""
    return _verdict(0.0, reason, unreadable=True, **details)


# What math reads but does not interpret (a relation, a set operation it cannot reduce):
# compared only as the same tree, so a difference says nothing about the value.
_UNINTERPRETED = (Other, Unsupported)


class MathVerifier(Verifier):
    name = "math"
    version = "2"  # 2: sign-aware sample points, no absolute tolerance, lost-term detection
    description = (
        "Final-answer equivalence for math completions under Referee's math policy: last "
        "committed answer after </think> (box, 'Answer:' line or concluding sentence), hedging "
        "and missing answers score 0, value equality (exact for exact golds, rounding for "
        "decimal golds), percent/degrees/units ignored, sets, tuples, intervals, inequalities, "
        "matrices, multiple choice and text answers. Model text is never evaluated as code."
    )
    reference_type = str | MathReference
    options_model = MathOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>2/4 simplifies.</think>\nSo the probability is $\\boxed{\\dfrac{1}{2}}$.",
        "reference": "0.5",
        "options": {},
        "expected_score": 1.0,
    }

    def prepare(self, reference: str | MathReference, options: MathOptions) -> Gold:
        raw = reference if isinstance(reference, str) else reference.answer
        rounded = options.rounded_decimal_gold
        if isinstance(reference, MathReference) and reference.rounded_decimal_gold is not None:
            rounded = reference.rounded_decimal_gold
        policy = EqualityRules(rounded_decimal_gold=rounded)
        letter = CHOICE_GOLD.match(re.sub(r"\s+", "", clean(raw).replace(WORD_MARK, "")))
        if letter:
            return Gold(raw, "choice", policy, letter=letter.group(1))
        labelled = CHOICE_GOLD_CONTENT.match(raw)
        if labelled:  # the letter, or the option's content, is the answer
            content = parse_answer(labelled.group(3))
            return Gold(
                raw, "choice", policy, letter=labelled.group(1) or labelled.group(2), value=content.value
            )
        parsed = parse_answer(raw)
        if parsed.value is not None:
            return Gold(raw, "math", policy, value=parsed.value)
        return Gold(raw, "text", policy, text=normalize_text(raw), value=Text(normalize_text(raw)))

    def check(self, response: str, prepared: Gold, options: MathOptions) -> Check:
        if len(response) > MAX_RESPONSE_CHARS:
            return _verdict(0.0, "response too long to judge", length=len(response))
        try:
            with _stack_room():
                return self._check(response, prepared, options)
        except RecursionError:  # the parser bounds depth; this is the last line of defence
            return _unreadable("answer nested too deeply to judge")

    def _check(self, response: str, prepared: Gold, options: MathOptions) -> Check:
        found = final_answer(response, bare_answer=options.bare_answer)
        if not found.answers:
            return _verdict(0.0, found.reason or "no final answer", extraction=found.how)
        if len(found.answers) > MAX_ANSWERS:
            return _verdict(
                0.0,
                "several different final answers (hedging)",
                extraction=found.how,
                answers=len(found.answers),
                answer=" | ".join(a[:200] for a in found.answers[-4:]),
            )
        if prepared.mode == "choice":
            return self._check_choice(found, prepared, response)
        if prepared.mode == "text":
            return self._check_text(found, prepared)
        return self._check_math(found, prepared)

    def _check_choice(self, found: Extracted, gold: Gold, response: str) -> Check:
        letters = set(trailing_choices(response, found.answers[-1]))
        for raw in found.answers:
            letter, hedged = choice_letter(raw)
            if hedged:
                return _verdict(0.0, "several choices given (hedging)", answer=raw[:200])
            if letter is None and gold.value is not None:
                return self._check_math(found, gold)  # "42" for the gold "C. x = 42"
            if letter is None:
                return _verdict(0.0, "no choice letter in the final answer", answer=raw[:200])
            letters.add(letter)
        details = {"answer": found.answers[-1][:200], "extraction": found.how, "gold": gold.letter}
        if len(letters) > 1:
            return _verdict(0.0, "several choices given (hedging)", **details)
        got = letters.pop()
        if got in {choice_letter(raw)[0] for raw in found.denied}:
            return _verdict(0.0, DENIES, normalized_answer=got, **details)
        if got == gold.letter:
            return _verdict(1.0, None, normalized_answer=got, rule="choice", **details)
        return _verdict(0.0, "wrong choice", normalized_answer=got, rule="choice", **details)

    def _check_text(self, found: Extracted, gold: Gold) -> Check:
        texts = {normalize_text(raw) for raw in found.answers}
        details = {"answer": found.answers[-1][:200], "extraction": found.how, "normalized_gold": gold.text}
        if len(texts) > 1:
            return _verdict(0.0, "several different final answers (hedging)", **details)
        got = texts.pop()
        if got in {normalize_text(raw) for raw in found.denied}:
            return _verdict(0.0, DENIES, normalized_answer=got[:200], **details)
        if got == gold.text:
            return _verdict(1.0, None, normalized_answer=got[:200], rule="string", **details)
        if _states_text(got, gold.text):
            return _verdict(1.0, None, normalized_answer=got[:200], rule="string-in-sentence", **details)
        # A gold that is not mathematics is compared by its spelling only: \emptyset and "no
        # solution" differ in letters, not necessarily in meaning.
        return _unreadable("answer differs from the reference", normalized_answer=got[:200], **details)

    def _check_math(self, found: Extracted, gold: Gold) -> Check:
        assert gold.value is not None
        values: list[Value] = []
        errors: list[str] = []
        denies = False
        for raw in found.answers:
            parsed = parse_answer(raw)
            if parsed.value is not None:
                values.append(parsed.value)
            else:
                errors.append(parsed.error or "no mathematical answer")
                denies = denies or parsed.denies
        details: dict[str, Any] = {
            "answer": " | ".join(a[:200] for a in found.answers[-4:]),
            "extraction": found.how,
            "normalized_gold": render(gold.value),
        }
        if not values:
            if normalize_text(found.answers[-1]) == normalize_text(gold.raw):
                return _verdict(1.0, None, rule="string", **details)
            if denies:
                return _verdict(0.0, f"could not read the answer: {errors[-1]}", **details)
            return _unreadable(f"could not read the answer: {errors[-1]}", **details)
        distinct: list[Value] = []
        for value in values:
            if not any(values_equal(seen, value, gold.policy) for seen in distinct):
                distinct.append(value)
        answer = distinct[0] if len(distinct) == 1 else combine(distinct)
        details["normalized_answer"] = render(answer)
        if _denies(found.denied, answer, gold.policy):
            return _verdict(0.0, DENIES, **details)
        rule = values_equal(gold.value, answer, gold.policy)
        if rule is not None:
            return _verdict(1.0, None, rule=rule, **details)
        if len(found.answers) == 1 and _unit_letter_equal(found.answers[0], gold):
            return _verdict(1.0, None, rule="unit-letter", **details)
        if len(distinct) > 1:
            return _verdict(0.0, "several different final answers (hedging)", **details)
        if isinstance(answer, _UNINTERPRETED) or isinstance(gold.value, _UNINTERPRETED):
            return _unreadable("answer differs from the reference", **details)
        return _verdict(0.0, "answer differs from the reference", **details)
