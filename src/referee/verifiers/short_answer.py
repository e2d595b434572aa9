"""The cheap, general verifiers: exact, regex, numeric, multiple_choice."""

from __future__ import annotations

import math
import numbers
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Annotated, Any, ClassVar, Literal

import re2
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from referee.verifiers import extract
from referee.verifiers.base import Check, Resources, Verifier
from referee.verifiers.denial import affirmed_answer, box_denial

Extraction = Literal["none", "final", "answer_tag", "boxed", "answer_line", "auto"]


def select_answer(response: str, how: Extraction) -> str | None:
    """Pick the part of a completion to judge.

    none: the whole response; final: after the last </think>; answer_tag: the last <answer>
    block; boxed: the last \\boxed{}; answer_line: the last "Answer: X" / "answer is X" /
    "#### X"; auto: the first of answer_tag, boxed, answer_line that exists, else final.
    """
    if how == "none":
        return response
    final = extract.final_part(response)
    if final is None:
        return None
    if how == "final":
        return final
    if how == "answer_tag":
        return extract.last_answer_block(response)
    if how == "boxed":
        return extract.last_boxed(final)
    if how == "answer_line":
        return extract.last_answer_statement(final)
    for candidate in (
        extract.last_answer_block(response),
        extract.last_boxed(final),
        extract.last_answer_statement(final),
    ):
        if candidate is not None:
            return candidate
    return final


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- exact ---------------------------------------------------------------------------------


class ExactOptions(_Options):
    case_sensitive: bool = True
    strip: bool = Field(default=True, description="Ignore leading and trailing whitespace.")
    collapse_whitespace: bool = Field(default=True, description="Treat any run of whitespace as one space.")
    extract: Extraction = "none"


_WS = re.compile(r"\s+")


def normalize_text(text: str, *, case_sensitive: bool, strip: bool, collapse_whitespace: bool) -> str:
    # NFC so that "é" typed two ways compares equal; casefold (not lower) for "ß" and friends.
    text = unicodedata.normalize("NFC", text)
    if collapse_whitespace:
        text = _WS.sub(" ", text)
    if strip:
        text = text.strip()
    if not case_sensitive:
        text = text.casefold()
    return text


def number_text(value: Any) -> Any:
    """A numeric reference as the text an answer would spell it; anything else unchanged.

    Datasets hand numbers over as floats more often than not (a pandas integer column with one
    missing value is float64, so 72 arrives as 72.0; numpy scalars arrive as plain JSON
    numbers): a number is written positionally from its shortest round-trip decimal, without
    exponent or trailing zeros, so 72.0 is "72", 1e20 is "100000000000000000000", 1e-07 is
    "0.0000001" and -0.0 is "0". NaN and infinities are no answer: refused (ValueError).
    bool is left alone (it is not a number here: the string type refuses it)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        return value
    if isinstance(value, numbers.Integral):  # int, numpy integers
        return str(int(value))
    # repr is the shortest text that round-trips a float: the digits the dataset showed.
    exact_value = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    if not exact_value.is_finite():
        raise ValueError(f"a reference must be a finite number, not {value!r}")
    if exact_value.is_zero():
        return "0"
    return format(exact_value.normalize(), "f")


# A string; a number is taken as its written-out text (`number_text`).
AnswerText = Annotated[str, BeforeValidator(number_text)]


class ExactVerifier(Verifier):
    name = "exact"
    description = (
        "String equality after normalisation: Unicode NFC, optional whitespace collapsing and "
        "stripping, optional case folding; optionally on an extracted part of the response."
    )
    reference_type = AnswerText
    options_model = ExactOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "  Paris ",
        "reference": "Paris",
        "options": {},
        "expected_score": 1.0,
    }

    def prepare(self, reference: str, options: ExactOptions) -> str:
        return normalize_text(
            reference,
            case_sensitive=options.case_sensitive,
            strip=options.strip,
            collapse_whitespace=options.collapse_whitespace,
        )

    def check(self, response: str, prepared: str, options: ExactOptions) -> Check:
        selected = select_answer(response, options.extract)
        if selected is None:
            return Check(0.0, reason=f"no answer found (extract={options.extract})")
        got = normalize_text(
            selected,
            case_sensitive=options.case_sensitive,
            strip=options.strip,
            collapse_whitespace=options.collapse_whitespace,
        )
        if got == prepared:
            return Check(1.0, details={"answer": got[:200]})
        return Check(0.0, reason="answer differs from reference", details={"answer": got[:200]})


# ---- regex ---------------------------------------------------------------------------------

MAX_PATTERN_CHARS = 2000


def _compile_pattern(pattern: str) -> str:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern has {len(pattern)} characters; limit {MAX_PATTERN_CHARS}")
    try:
        re2.compile(pattern)
    except re2.error as exc:
        raise ValueError(f"not a valid RE2 pattern: {exc}") from exc
    return pattern


Pattern = Annotated[str, AfterValidator(_compile_pattern)]


class RegexOptions(_Options):
    mode: Literal["fullmatch", "search"] = "fullmatch"
    ignore_case: bool = False
    strip: bool = True
    extract: Extraction = "none"


class RegexVerifier(Verifier):
    name = "regex"
    description = (
        "Matches the response against the reference pattern with RE2 (linear time: no "
        "catastrophic backtracking; backreferences and lookaround are not supported)."
    )
    reference_type = Pattern
    options_model = RegexOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "The code is AB-1234.",
        "reference": r"[A-Z]{2}-\d{4}",
        "options": {"mode": "search"},
        "expected_score": 1.0,
    }

    def prepare(self, reference: str, options: RegexOptions) -> Any:
        re2_options = re2.Options()
        re2_options.case_sensitive = not options.ignore_case
        return re2.compile(reference, options=re2_options)

    def check(self, response: str, prepared: Any, options: RegexOptions) -> Check:
        selected = select_answer(response, options.extract)
        if selected is None:
            return Check(0.0, reason=f"no answer found (extract={options.extract})")
        if options.strip:
            selected = selected.strip()
        match = prepared.fullmatch(selected) if options.mode == "fullmatch" else prepared.search(selected)
        if match is None:
            return Check(0.0, reason=f"pattern does not {options.mode.replace('match', ' match')} the answer")
        return Check(1.0, details={"match": match.group(0)[:200]})


# ---- numeric -------------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d{1,4})?")
_NUMBER_TOKEN = re.compile(r"[-+−]?(?:\d[\d,]*)(?:\.\d+)?(?:[eE][-+]?\d{1,4})?(?:/\d+)?|[-+−]?\.\d+")
MAX_NUMBER_CHARS = 400


def parse_number(text: str) -> Fraction | None:
    """Exact value of a plain number: "-1,234.5", "1e-3", "3/4", "50%" (= 50), "$12"."""
    text = text.strip().replace("−", "-").replace("\\$", "").replace("$", "").replace("\\%", "%")
    text = text.rstrip(".").removesuffix("%").strip()
    if not text or len(text) > MAX_NUMBER_CHARS:
        return None
    numerator, slash, denominator = text.partition("/")
    try:
        if slash:
            den = Fraction(Decimal(denominator.strip()))
            return Fraction(Decimal(numerator.strip().replace(",", ""))) / den if den else None
        if not _NUMBER.fullmatch(text):
            return None
        value = Decimal(text.replace(",", ""))
    except (InvalidOperation, ValueError, ZeroDivisionError):
        return None
    if not value.is_finite() or abs(value.adjusted()) > 1000:
        return None
    return Fraction(value)


def _shown(value: Fraction) -> float | str:
    """A value for the verdict's details: a float, or its decimal text beyond float range (an
    answer of 1e400 is the candidate's wrong answer, never an error of the judge)."""
    try:
        return float(value)
    except OverflowError:
        return f"{Decimal(value.numerator) / Decimal(value.denominator):.6e}"


# Words after the last box that take it back ("Wait, that is wrong", "I do not know"): the box
# is then no answer. Cautious on purpose: a correct box followed by such words scores 0.
_RETRACTION = re.compile(
    r"\b(?:wait\b|actually\b|scratch that|that(?:'s| is| was) (?:wrong|incorrect|a mistake)|"
    r"(?:is|was) (?:wrong|incorrect|a mistake)|not correct|i (?:do not|don't) know)",
    re.IGNORECASE,
)


def _box_value(content: str) -> Fraction | str:
    value = parse_number(content)
    return value if value is not None else " ".join(content.split())


def _hedged_or_retracted_boxes(response: str) -> str | None:
    """Why the boxes of the final part are no answer, or None: several boxes with different
    values (a hedge, or a spray ending in the right one), or words after the last box that
    retract it. Repeating the same value in several boxes is fine."""
    final = extract.final_part(response)
    if final is None:
        return None
    spans = extract.boxed_spans(final)
    if not spans:
        return None
    values = {_box_value(content) for _, _, content in spans}
    if len(values) > 1:
        return "several different boxed answers (a hedge)"
    if _RETRACTION.search(final[spans[-1][1] :]):
        return "the boxed answer is retracted after it"
    return box_denial(final, spans)


class NumericOptions(_Options):
    abs_tol: float = Field(default=0.0, ge=0.0)
    rel_tol: float = Field(default=1e-9, ge=0.0)
    extract: Extraction = "auto"


class NumericVerifier(Verifier):
    name = "numeric"
    description = (
        "Numeric equality within |got - ref| <= max(abs_tol, rel_tol * |ref|). The answer is "
        "extracted (auto: <answer> block, last \\boxed{}, 'Answer:' line, else the final text) "
        "and must contain exactly one number; exact rational arithmetic, no float parsing surprises."
    )
    reference_type = float | str
    options_model = NumericOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "So the total is \\boxed{1,250.0}.",
        "reference": 1250,
        "options": {},
        "expected_score": 1.0,
    }

    @classmethod
    def validate_inputs(cls, reference: Any, options: Any, resources: Resources | None = None) -> None:
        """A reference that is no finite number ("nan", "inf", "about 5") is refused (422):
        scored, it would give every response 0."""
        if isinstance(reference, int | float) and not isinstance(reference, bool):
            if not math.isfinite(reference):
                raise ValueError("the reference must be a finite number")
        elif not isinstance(reference, str) or parse_number(reference) is None:
            raise ValueError(f"the reference {str(reference)[:40]!r} is not a finite number")

    def prepare(self, reference: float | str, options: NumericOptions) -> Fraction | None:
        if isinstance(reference, float):
            return Fraction(reference) if math.isfinite(reference) else None
        return parse_number(reference)

    def check(self, response: str, prepared: Fraction | None, options: NumericOptions) -> Check:
        if prepared is None:
            return Check(0.0, reason="reference is not a number")
        if options.extract in ("auto", "boxed"):
            refused = _hedged_or_retracted_boxes(response)
            if refused is not None:
                return Check(0.0, reason=refused)
        selected = select_answer(response, options.extract)
        if selected is None:
            return Check(0.0, reason="no final answer")
        # "The answer is not 42." / "42, not 41" (rule 34 of the math policy holds here too).
        affirmed, denied, refused = affirmed_answer(selected)
        if affirmed is None:
            return Check(0.0, reason=refused, details={"answer": selected[-200:]})
        selected = affirmed
        value = parse_number(selected)
        if value is None:
            tokens = _NUMBER_TOKEN.findall(selected[-2000:])
            if len(tokens) != 1:
                reason = "no number in the answer" if not tokens else "answer contains several numbers"
                return Check(0.0, reason=reason, details={"answer": selected[-200:]})
            value = parse_number(tokens[0])
            if value is None:
                return Check(0.0, reason="answer is not a number", details={"answer": selected[-200:]})
        diff = abs(value - prepared)
        tolerance = max(Fraction(options.abs_tol), Fraction(options.rel_tol) * abs(prepared))
        details = {"answer": _shown(value), "reference": _shown(prepared)}
        if value in {parse_number(d) for d in denied}:  # "42. Hmm, 42 is wrong."
            return Check(0.0, reason="the answer denies its value", details=details)
        if diff <= tolerance:
            return Check(1.0, details=details)
        return Check(0.0, reason="value outside tolerance", details=details)


# ---- multiple choice -----------------------------------------------------------------------


class ChoiceReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str = Field(pattern=r"^[A-Za-z]$")
    choices: str = Field(default="ABCDEFGHIJ", pattern=r"^[A-Za-z]{2,26}$")


class MultipleChoiceOptions(_Options):
    pass


# A letter written as a choice: "(C)", "C)", "**C**", "\text{C}", "\textbf{(C)}", "C." or bare.
_CHOICE = re.compile(
    r"^[\s*_]*(?:\\(?:text|textbf|mathrm|mathbf)\s*\{\s*)?[\s(\[]*([A-Za-z])[\s)\].:]*\}?[\s*_.]*$"
)
_CHOICE_PREFIX = re.compile(r"^[\s*_(\[]*([A-Z])[)\].:]\s")
# A letter, then why: "A because it is the only one", "(C), since ...", "B - the others fail".
_CHOICE_THEN_WHY = re.compile(
    r"^[\s*_(\[]*([A-Z])[)\]*]*(?:\s*,\s*|\s+)(?:(?:because|since|as|for|given|due to|which|that)\b|[-\u2013\u2014])"
)
_BOLD_OR_PAREN = re.compile(r"\*\*\(?([A-Z])\)?\*\*|\(([A-Z])\)")
# A second letter joined to the first one: "A, B", "A or B", "A/B".
_LISTED_LETTER = re.compile(r"\s*(?:,|/|&|\bor\b|\band\b)\s*\(?([A-Z])\)?(?![A-Za-z])")
# Nothing but letters written as choices: "A) B)", "A. B.", "A/B", "A, B", "A and B", "(A) or
# (B)". Every letter of such a text is a choice, so two or more of them are a hedge.
_LETTER_TOKEN = r"[(\[]?\s*[A-Z]\s*[)\].:]?"
_LETTER_LIST = re.compile(
    rf"^[\s*_]*{_LETTER_TOKEN}(?:(?:\s*[,;/&]\s*|\s+(?:or|and)\s+|\s+){_LETTER_TOKEN})+[\s*_.]*$"
)
_LIST_LETTER = re.compile(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])")
# A letter marked as an option further on: "A) x = 2 B) x = 3" and "A. 42 B. 43" list two
# options (a copy of the question's options is no choice).
_OPTION_MARK = re.compile(r"(?<![A-Za-z])([A-Z])(?:\)|\.\s)")


class MultipleChoiceVerifier(Verifier):
    name = "multiple_choice"
    description = (
        "Extracts the chosen letter from the final part of a completion: \\boxed{C}, "
        "'Answer: C' / 'answer is (C)', '**C**', '(C)' or a bare letter. Several different "
        "letters in the deciding statement are a hedge and score 0."
    )
    reference_type = ChoiceReference | Annotated[str, Field(pattern=r"^[A-Za-z]$")]
    options_model = MultipleChoiceOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "Comparing the options, the answer is (C).",
        "reference": "C",
        "options": {},
        "expected_score": 1.0,
    }

    def prepare(self, reference: ChoiceReference | str, options: MultipleChoiceOptions) -> ChoiceReference:
        if isinstance(reference, str):
            reference = ChoiceReference(answer=reference)
        return ChoiceReference(answer=reference.answer.upper(), choices=reference.choices.upper())

    def _letters(self, text: str, choices: str) -> set[str]:
        text = text.strip()[:400]
        if _LETTER_LIST.match(text):
            return {letter for letter in _LIST_LETTER.findall(text) if letter in choices}
        match = _CHOICE.match(text) or _CHOICE_PREFIX.match(text) or _CHOICE_THEN_WHY.match(text)
        if match:
            letter = match.group(1).upper()
            # "(A) (B)", "(A) or (B)", "A, B", "A) x B) y": more letters written as choices
            # are a hedge.
            rest = text[match.end() :]
            others = {a or b for a, b in _BOLD_OR_PAREN.findall(rest)} | set(_OPTION_MARK.findall(rest))
            listed = _LISTED_LETTER.match(rest)
            if listed:
                others.add(listed.group(1))
            found = {letter} | {other for other in others if other in choices}
            return found if letter in choices else found - {letter}
        found = {a or b for a, b in _BOLD_OR_PAREN.findall(text)}
        return {letter for letter in found if letter in choices}

    def _stacked_letters(self, lines: list[str], choices: str) -> set[str]:
        """The letters of the trailing lines that each hold nothing but a choice (or an answer
        statement of one): "A\nB", "Answer: A\nB" list two choices, one per line."""
        letters: set[str] = set()
        for line in reversed(lines[-len(choices) - 1 :]):
            statement = extract.last_answer_statement(line)
            text = (statement if statement is not None else line).strip()
            match = _CHOICE.match(text)
            if match is None or match.group(1).upper() not in choices:
                break
            letters.add(match.group(1).upper())
            if statement is not None:  # the statement opens the list
                break
        return letters

    def check(self, response: str, prepared: ChoiceReference, options: MultipleChoiceOptions) -> Check:
        final = extract.final_part(response)
        if final is None:
            return Check(0.0, reason="unclosed <think>: no final answer")
        block = extract.last_answer_block(response)
        candidates = [block] if block is not None else []
        spans = extract.boxed_spans(final)
        if spans:
            refused = box_denial(final, spans)
            if refused is not None:
                return Check(0.0, reason=refused, details={"answer": spans[-1][2][:200]})
            candidates.append(spans[-1][2])
        statement = extract.last_answer_statement(final)
        if statement is not None:
            candidates.append(statement)
        lines = [line for line in final.strip().splitlines() if line.strip()]
        if lines:
            candidates.append(lines[-1])
        stacked = self._stacked_letters(lines, prepared.choices)
        if len(stacked) > 1:  # "Answer: A" then "B" on the next line: letters on separate lines
            return Check(0.0, reason=f"hedged between {sorted(stacked)}", details={"answer": final[-200:]})
        for candidate in candidates:
            affirmed, denied, refused = affirmed_answer(candidate)
            if affirmed is None:  # "The answer is not (C)." (rule 34 of the math policy)
                return Check(0.0, reason=refused, details={"answer": candidate[:200]})
            letters = self._letters(affirmed, prepared.choices)
            if letters & {letter for d in denied for letter in self._letters(d, prepared.choices)}:
                return Check(0.0, reason="the answer denies its value", details={"answer": candidate[:200]})
            if len(letters) > 1:
                return Check(
                    0.0, reason=f"hedged between {sorted(letters)}", details={"answer": candidate[:200]}
                )
            if letters:
                (letter,) = letters
                details = {"answer": letter, "reference": prepared.answer}
                if letter == prepared.answer:
                    return Check(1.0, details=details)
                return Check(0.0, reason="wrong choice", details=details)
        return Check(0.0, reason="no choice letter found")


VERIFIERS: list[type[Verifier]] = [ExactVerifier, RegexVerifier, NumericVerifier, MultipleChoiceVerifier]
