from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from referee.client import Client, RefereeHTTPError
from referee.verifiers.math import MathVerifier
from referee.verifiers.short_answer import (
    ExactVerifier,
    MultipleChoiceVerifier,
    NumericOptions,
    NumericVerifier,
    RegexVerifier,
    parse_number,
)
from tests.timing import within

exact, regex, numeric, choice = ExactVerifier(), RegexVerifier(), NumericVerifier(), MultipleChoiceVerifier()


@pytest.mark.parametrize(
    ("response", "reference", "options", "score"),
    [
        ("Paris", "Paris", {}, 1.0),
        ("  Paris\n", "Paris", {}, 1.0),
        ("New   York", "New York", {}, 1.0),
        ("paris", "Paris", {}, 0.0),
        ("paris", "Paris", {"case_sensitive": False}, 1.0),
        ("New   York", "New York", {"collapse_whitespace": False}, 0.0),
        ("Cafe\u0301", "Café", {}, 1.0),  # NFC
        ("<think>x</think><answer> 42 </answer>", "42", {"extract": "answer_tag"}, 1.0),
        ("<think>42", "42", {"extract": "final"}, 0.0),  # unclosed think: no final answer
        ("", "Paris", {}, 0.0),
    ],
)
def test_exact(response: str, reference: str, options: dict, score: float) -> None:
    assert exact.score(response, reference, options).score == score


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ("72", 72.0),  # a pandas integer column with a gap is float64
        ("72", 72),
        ("-3", -3.0),
        ("0", -0.0),
        ("100000000000000000000", 1e20),  # no exponent: the digits an answer spells
        ("0.5", 0.5),
        ("0.0000001", 1e-7),
        ("12345678901234567000", 1.2345678901234567e19),  # the shortest round-trip digits
    ],
)
def test_exact_takes_a_numeric_reference_as_its_written_text(response: str, reference: float) -> None:
    assert exact.score(response, reference).score == 1.0
    assert exact.score(response + "1", reference).score == 0.0


def test_exact_numeric_reference_from_numpy_and_what_it_refuses() -> None:
    np = pytest.importorskip("numpy")
    assert exact.score("72", np.float64(72.0)).score == 1.0
    assert exact.score("72", np.int64(72)).score == 1.0
    assert exact.score("72", "72.0").score == 0.0  # a string is the text it is
    for not_an_answer in (float("nan"), float("inf"), True):
        with pytest.raises(ValidationError):
            exact.score("72", not_an_answer)


def test_exact_rejects_unknown_options() -> None:
    with pytest.raises(ValidationError):
        exact.score("a", "a", {"casesensitive": True})


@pytest.mark.parametrize(
    ("response", "pattern", "options", "score"),
    [
        ("AB-1234", r"[A-Z]{2}-\d{4}", {}, 1.0),
        ("code AB-1234 here", r"[A-Z]{2}-\d{4}", {}, 0.0),
        ("code AB-1234 here", r"[A-Z]{2}-\d{4}", {"mode": "search"}, 1.0),
        ("ab-1234", r"[A-Z]{2}-\d{4}", {"ignore_case": True}, 1.0),
    ],
)
def test_regex(response: str, pattern: str, options: dict, score: float) -> None:
    assert regex.score(response, pattern, options).score == score


def test_regex_is_linear_on_catastrophic_patterns() -> None:
    start = time.perf_counter()
    check = regex.score("a" * 50_000 + "!", r"(a+)+$")
    assert check.score == 0.0
    assert time.perf_counter() - start < within(1.0)  # backtracking engines take ages here


@pytest.mark.parametrize("pattern", ["(unclosed", r"(a)\1", "x" * 3000])
def test_regex_rejects_bad_patterns(pattern: str) -> None:
    with pytest.raises(ValidationError):
        regex.score("a", pattern)


@pytest.mark.parametrize(
    ("response", "reference", "options", "score"),
    [
        ("\\boxed{1,250}", 1250, {}, 1.0),
        ("Answer: 3/4", "0.75", {}, 1.0),
        ("The result is 0.1 + 0.2", 0.3, {}, 0.0),  # two numbers: not an answer
        ("#### 100.0001", 100, {"rel_tol": 1e-5}, 1.0),
        ("#### 100.01", 100, {"rel_tol": 1e-5}, 0.0),
        ("#### 100.01", 100, {"abs_tol": 0.1}, 1.0),
        ("Answer: −5", -5, {}, 1.0),
        ("Answer: 1e400000", 1, {}, 0.0),
        ("Answer: banana", 1, {}, 0.0),
        ("<think>42", 42, {}, 0.0),
    ],
)
def test_numeric(response: str, reference: object, options: dict, score: float) -> None:
    assert numeric.score(response, reference, options).score == score


def test_parse_number_is_exact() -> None:
    assert parse_number("0.1") + parse_number("0.2") == parse_number("0.3")
    assert parse_number("1/0") is None and parse_number("") is None


@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("(C)", 1.0),
        ("Answer: C", 1.0),
        ("The answer is (C).", 1.0),
        ("\\boxed{C}", 1.0),
        ("\\boxed{\\text{(C)}}", 1.0),
        ("After checking each option, **C**", 1.0),
        ("C) 42", 1.0),
        ("Answer: B", 0.0),
        ("It is either (A) or (C).", 0.0),  # hedge
        ("<think>(C) looks right</think>Answer: (B)", 0.0),
        ("<think>Answer: C", 0.0),  # unclosed think
        ("I cannot decide.", 0.0),
        ("Answer: Z", 0.0),  # not among the choices
    ],
)
def test_multiple_choice(response: str, score: float) -> None:
    assert choice.score(response, "C").score == score


# Every spelling of a letter list (issue 32: "A) B)" scored 1.0 against A); whichever of the
# letters is the gold, the verdict is 0.
LETTER_LISTS = [
    "A) B)",
    "A. B.",
    "A/B",
    "A, B",
    "A and B",
    "A or B",
    "A\nB",
    "A.\nB.",
    "Answer: A\nB",
    "The answer is (A)\n(B)",
    "The answer is A. B.",
    "Answer: A) B)",
    "\\boxed{A) B)}",
    "A) x = 2 B) x = 3",
    "A. 42 B. 43",  # the question's options copied out
]


@pytest.mark.parametrize("response", LETTER_LISTS)
@pytest.mark.parametrize("gold", ["A", "B"])
def test_multiple_choice_letter_lists_are_hedges(response: str, gold: str) -> None:
    check = choice.score(response, gold)
    assert check.score == 0.0 and check.reason == "hedged between ['A', 'B']", check


@pytest.mark.parametrize("response", LETTER_LISTS)
@pytest.mark.parametrize("gold", ["A", "B"])
def test_math_letter_lists_score_zero(response: str, gold: str) -> None:
    assert MathVerifier().score(response, gold).score == 0.0


# (response, whether `math` finds a concluding statement in it: a bare "**A**" is no statement
# for `math`, whose bare-answer reading is an option).
ONE_LETTER = [
    ("A. Vitamin C.", False),
    ("Answer: A. (B is ruled out above.)", True),
    ("Option B is wrong.\nAnswer: A", True),
    ("Answer: (A)\nThis is because B fails.", True),
    ("1. compute\n2. check\nAnswer: A", True),
    ("**A**", False),
    ("A) 42", False),
    # The answer, then why the others fail (each scored 0 before: the sentence before "B is
    # wrong" was read as its subject, and a letter followed by "because" as no letter).
    ("The answer is A. B is wrong.", True),
    ("The answer is A. B is wrong because it ignores friction.", True),
    ("The answer is A because it is the only one.", True),
    ("The answer is (A), because the others fail.", True),
    ("The answer is A since B ignores friction.", False),
    ("The answer is A because (B) and (C) are wrong.", True),
]


@pytest.mark.parametrize(("response", "statement"), ONE_LETTER)
def test_one_letter_with_other_letters_in_prose_is_no_hedge(response: str, statement: bool) -> None:
    assert choice.score(response, "A").score == 1.0
    assert MathVerifier().score(response, "A").score == (1.0 if statement else 0.0)


def test_multiple_choice_custom_choices() -> None:
    assert choice.score("Answer: E", {"answer": "E", "choices": "ABCDE"}).score == 1.0
    assert choice.score("Answer: F", {"answer": "E", "choices": "ABCDE"}).score == 0.0


@pytest.mark.parametrize("answer", ["\\boxed{1e400}", "\\boxed{-1e400}", "1" + "0" * 390])
def test_a_number_beyond_float_range_is_a_wrong_answer_not_an_error(answer: str) -> None:
    """A candidate that answers 1e400 gets 0 like any wrong number; before, building the
    verdict's details overflowed and the sample came back masked (no verdict)."""
    verifier, options = NumericVerifier(), NumericOptions()
    check = verifier.check(answer, verifier.prepare("5", options), options)
    assert check.score == 0.0 and check.reason == "value outside tolerance"
    assert "e+" in str(check.details["answer"]) or check.details["answer"] > 1e300


@pytest.mark.parametrize("reference", ["nan", "inf", "-Infinity", "about five", ""])
def test_a_reference_that_is_no_finite_number_is_refused(reference: str, client: Client) -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        NumericVerifier.validate_inputs(reference, NumericOptions())
    with pytest.raises(RefereeHTTPError) as info:
        client.score("numeric", "\\boxed{5}", reference)
    assert info.value.status_code == 422


@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("It is either $\\boxed{41}$ or $\\boxed{42}$.", 0.0),  # a hedge
        ("Candidates: $\\boxed{39}$ $\\boxed{40}$ $\\boxed{42}$", 0.0),  # a spray ending right
        ("The answer is $\\boxed{42}$. Wait, that is wrong: I do not know.", 0.0),  # retracted
        ("I got $\\boxed{41}$, but that was a mistake; the correct value is $\\boxed{42}$.", 0.0),
        ("So $\\boxed{42}$, and checking again: $\\boxed{42.0}$.", 1.0),  # the same value twice
        ("The answer is $\\boxed{42}$, which matches the check above.", 1.0),
        ("<think>maybe \\boxed{41}</think> The answer is $\\boxed{42}$.", 1.0),  # only the final part
    ],
)
def test_numeric_hedged_and_retracted_boxes(response: str, score: float) -> None:
    verifier, options = NumericVerifier(), NumericOptions()
    assert verifier.check(response, verifier.prepare("42", options), options).score == score


# Rule 34 of the math policy holds for the short-answer verifiers too: the gold named only to be
# denied or withdrawn scores 0; denying another value or checking the work keeps the answer.
@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("The answer is not 42.", 0.0),
        ("The answer is not \\boxed{42}.", 0.0),
        ("42 is wrong.", 0.0),
        ("Answer: 42. Hmm, on reflection this is incorrect.", 0.0),
        ("\\boxed{\\text{not } 42}", 0.0),
        ("\\boxed{42} is incorrect.", 0.0),
        ("The answer is 42, not 41.", 1.0),
        ("\\boxed{42 \\text{ apples}}", 1.0),
        ("I made an error before. The total is 42.", 1.0),
    ],
)
def test_numeric_denied_answers(response: str, score: float) -> None:
    verifier, options = NumericVerifier(), NumericOptions()
    assert verifier.check(response, verifier.prepare("42", options), options).score == score


@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("The answer is not (C).", 0.0),
        ("\\boxed{C} is wrong", 0.0),
        ("Answer: C. Hmm, on reflection this is incorrect.", 0.0),
        ("The answer is (C). Actually no, (C) is wrong.", 0.0),
        ("The answer is (C), it can't be A or B.", 1.0),
        ("It is (C); (A) and (B) are ruled out.", 1.0),
        ("The answer is (C), since (A) and (B) are wrong.", 1.0),
        ("The answer is A. C is wrong.", 0.0),
        ("The answer is C. A is wrong.", 1.0),
        ("The answer is A because C is wrong.", 0.0),
    ],
)
def test_multiple_choice_denied_answers(response: str, score: float) -> None:
    verifier = MultipleChoiceVerifier()
    options = verifier.options_model()
    assert verifier.check(response, verifier.prepare("C", options), options).score == score
