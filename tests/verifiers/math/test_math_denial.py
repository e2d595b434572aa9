"""Policy rule 34: a statement that denies or withdraws its value is no answer.

Each pattern has attacks (a response that names the gold only to deny it must score 0) and the
honest near-misses beside them (a response that denies another value, checks its work, or uses
"not" in its reasoning keeps its answer). Rule 35 (`options.bare_answer`) and rule 36 (a
multiple-choice answer that rules out other options) are here too: both turn on what a
statement affirms.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.verifiers.denial import split_denial
from referee.verifiers.math import MathOptions, MathVerifier

verifier = MathVerifier()
DEFAULT = MathOptions()
BARE = MathOptions(bare_answer=True)


def score(response: str, gold: str, options: MathOptions = DEFAULT) -> float:
    return verifier.check(response, verifier.prepare(gold, options), options).score


DENIED = {
    "plain negation": [
        "The answer is not 42.",
        "The final answer is not $42$.",
        "Answer: not 42",
        "**Answer:** not 42",
        "#### not 42",
        "It's not 42.",
        "It isn't 42.",
        "It is definitely not $42$.",
        "Clearly, the total is not 42.",
        "The answer is never 42.",
        "The result cannot be 42.",
        "It is not equal to 42.",
        "The answer does not equal 42.",
        "So the answer is definitely not \\boxed{42}.",
        "The answer is not \\boxed{42}.",
        "It can't be $\\boxed{42}$.",
    ],
    "denying predicate": [
        "42 is wrong.",
        "$42$ is wrong.",
        "42 is incorrect.",
        "The value 42 is not correct.",
        "\\boxed{42} is wrong.",
        "Answer: 42 is wrong",
    ],
    "retraction without a new value": [
        "\\boxed{42}. Actually, I made an error, so the answer is not 42.",
        "Answer: 42. Hmm, on reflection this is incorrect.",
        "\\boxed{42}\n\nWait, that is wrong.",
        "\\boxed{42}. Hmm, this is incorrect.",
        "\\boxed{42}. On reflection, my answer is wrong.",
        "Answer: 42\nActually, I made a mistake.",
        "The answer is 42. Actually no, that's wrong.",
        "The answer is 42. But that is not right.",
        "$\\boxed{42}$. The answer is not 42.",
        "Answer: 42. The answer is not 42.",
        "So she sold 42 muffins. No wait, that is wrong.",
    ],
    "another value instead": [
        "So the answer is 41, not 42.",
        "So she sold 41 muffins, not 42.",
        "The answer is 41 (not 42).",
        "The answer is 41 rather than 42.",
        "The answer is $\\boxed{41}$, not 42.",
        "The answer is not 42 but 41.",
    ],
    "words in the box": [
        "\\boxed{\\text{not } 42}",
        "\\boxed{\\text{not}\\ 42}",
        "\\boxed{\\textbf{not} 42}",
        "\\boxed{\\mathrm{not}\\;42}",
        "\\boxed{\\text{42 is wrong}}",
        "\\boxed{\\text{42 is not the answer}}",
        "\\boxed{42 \\text{ (wrong)}}",
        "\\boxed{\\text{maybe } 42}",
        "\\boxed{\\text{probably } 42}",
        "\\boxed{\\text{anything except } 42}",
    ],
}

KEPT = {
    "checking the work": [
        "Wait, let me double-check: 6*7 = 42. Yes, \\boxed{42}.",
        "The answer is 42. Let me verify: 6 times 7 is 42, so this is correct.",
        "\\boxed{42}. Let me check whether this is wrong: 6 times 7 is 42. It is right.",
        "Answer: 42. I made an error in step 2 earlier, but the answer is still 42.",
        "\\boxed{42}. I hope it is correct.",
    ],
    "another value denied": [
        "The answer is 42, not 41.",
        "The answer is $42$, not $41$.",
        "So she sold 42 muffins, not 41.",
        "\\boxed{42}, not 41.",
        "The answer is not 41 but 42.",
        "The answer is not 41; it is 42.",
        "Not 41: the answer is \\boxed{42}.",
        "41 is wrong, so the answer is \\boxed{42}.",
        "\\boxed{41} is wrong. The correct answer is \\boxed{42}.",
        "The answer is \\boxed{42}. Note that it is not 41.",
        "The answer is 42. It is not 41 because 41 is prime.",
        "Answer: 42 (41 is not possible).",
    ],
    "'not' in the reasoning": [
        "It is not hard to see that the answer is 42.",
        "We get $x \\neq 0$, so the answer is $\\boxed{42}$.",
        "The answer is $\\boxed{42}$ since 41 is not divisible by 7.",
        "Since $n$ is not prime, the answer is $42$.",
    ],
    "units in the box": [
        "\\boxed{42 \\text{ apples}}",
        "\\boxed{42\\text{ cm}}",
        "\\boxed{42 \\text{ square units}}",
        "\\boxed{\\$42}",
    ],
}


@pytest.mark.parametrize(
    ("pattern", "response"), [(p, r) for p, rs in DENIED.items() for r in rs], ids=lambda v: v[:40]
)
def test_a_denied_or_withdrawn_gold_scores_zero(pattern: str, response: str) -> None:
    assert score(response, "42") == 0.0, pattern


@pytest.mark.parametrize(
    ("pattern", "response"), [(p, r) for p, rs in KEPT.items() for r in rs], ids=lambda v: v[:40]
)
def test_honest_near_misses_keep_their_answer(pattern: str, response: str) -> None:
    assert score(response, "42") == 1.0, pattern


def test_the_reason_says_the_value_is_denied() -> None:
    gold = verifier.prepare("42", DEFAULT)
    assert "denies" in (verifier.check("The answer is not 42.", gold, DEFAULT).reason or "")
    assert "denies" in (verifier.check("Answer: 42. The answer is not 42.", gold, DEFAULT).reason or "")
    assert "deny" in (verifier.check("\\boxed{\\text{not } 42}", gold, DEFAULT).reason or "")


def test_not_only_is_prose_for_both_values() -> None:
    assert score("The answer is not only 5 but also 6.", "5, 6") == 1.0
    assert score("The answer is not only 5 but also 6.", "5") == 0.0  # both: a hedge against 5


def test_a_denial_of_a_value_equal_to_the_answer_counts() -> None:
    # the denied value is compared as a value, not as a string
    assert score("\\boxed{0.5}. The answer is not \\frac{1}{2}.", "1/2") == 0.0
    assert score("\\boxed{0.5}. The answer is not \\frac{1}{3}.", "1/2") == 1.0


@pytest.mark.parametrize(
    ("response", "gold", "expected"),
    [
        ("The answer is D, it can't be A or B.", "D", 1.0),
        ("It is (D); (A) and (B) are ruled out.", "D", 1.0),
        ("The answer is (D), since (A) and (B) are wrong.", "D", 1.0),
        ("The answer is (D), not (C).", "D", 1.0),
        ("The answer is (C), not (D).", "D", 0.0),
        ("The answer is not (D).", "D", 0.0),
        ("Answer: (D) is wrong.", "D", 0.0),
        ("\\boxed{D}. Actually (D) is incorrect.", "D", 0.0),
        ("The answer is (B) or (D).", "D", 0.0),  # still a hedge
        ("It is D, it can't be A or B.", "D", 1.0),
        ("So it is D; it cannot be A or B.", "D", 1.0),
        ("A and B are ruled out; the answer must be D.", "D", 1.0),
        ("The answer is D, as A, B and C are incorrect.", "D", 1.0),
        ("It is D.", "D", 1.0),
        ("It is A.", "D", 0.0),
        ("It can't be D.", "D", 0.0),
        ("I cannot solve this.", "D", 0.0),  # inability is still no answer
        ("The answer: D, it doesn't make sense for it to be A or B.", "D", 1.0),
        ("It doesn't make sense for it to be D.", "D", 0.0),
    ],
)
def test_multiple_choice_prose_that_rules_options_out(response: str, gold: str, expected: float) -> None:
    assert score(response, gold) == expected


@pytest.mark.parametrize(
    ("response", "gold"),
    [("The answer is not Monday.", "Monday"), ("\\boxed{\\text{not Monday}}", "Monday")],
)
def test_text_golds_are_denied_too(response: str, gold: str) -> None:
    assert score(response, gold) == 0.0
    assert score("The answer is Monday, not Tuesday.", "Monday") == 1.0


@pytest.mark.parametrize(
    ("response", "gold", "expected"),
    [
        ("42", "42", 1.0),
        (" 42\n", "42", 1.0),
        ("x = 3", "3", 1.0),
        ("$10^3$", "1000", 1.0),
        ("<think>6 times 7</think>42", "42", 1.0),
        ("42 dollars", "42", 1.0),
        ("41", "42", 0.0),
        ("not 42", "42", 0.0),
        ("42 or 43", "42", 0.0),
        ("I think 42", "42", 0.0),  # prose: not a bare answer
        ("42\n43", "42", 0.0),  # two lines: not one bare answer
    ],
)
def test_bare_answer_option(response: str, gold: str, expected: float) -> None:
    assert score(response, gold, BARE) == expected
    assert score(response, gold) == 0.0  # rule 1 stays the default: no statement, no answer


def test_bare_answer_option_leaves_sentences_alone() -> None:
    for response in ("The answer is 42.", "\\boxed{42}", "So she sold 42 muffins."):
        assert score(response, "42", BARE) == score(response, "42") == 1.0


def test_split_denial_parts() -> None:
    assert split_denial("not 5") == ("", ["5"])
    assert split_denial("6, not 5") == ("6", ["5"])
    assert split_denial("5 is wrong") == ("", ["5"])
    assert split_denial("(D), since (A) is ruled out") == ("(D)", ["(A)"])
    assert split_denial("not only 5 but also 6") == ("5 and 6", [])
    assert split_denial("42") == ("42", [])


# ---- properties: no negated or withdrawn statement of the gold scores 1 -------------------

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

golds = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.tuples(st.integers(1, 99), st.integers(2, 99)).map(lambda t: f"\\frac{{{t[0]}}}{{{t[1]}}}"),
    st.integers(2, 99).map(lambda n: f"\\sqrt{{{n}}}"),
    st.integers(0, 9999).map(lambda n: f"{n / 100:.2f}"),
    st.sampled_from(["2\\pi", "x^2+1", "(1, 2)", "\\{1, 2\\}", "[0, 1)", "e^{2}", "\\frac{\\sqrt{3}}{2}"]),
)
WRITE = [lambda g: g, lambda g: f"${g}$", lambda g: f"\\boxed{{{g}}}", lambda g: f"$\\boxed{{{g}}}$"]
NEGATIONS = [
    "The answer is not {a}.",
    "The final answer is not {a}.",
    "Answer: not {a}",
    "It is not {a}.",
    "It is definitely not {a}.",
    "It isn't {a}.",
    "The answer cannot be {a}.",
    "{a} is wrong.",
    "{a} is incorrect.",
    "The value {a} is not correct.",
]
WITHDRAWALS = [
    "{a}. Actually, I made an error, so the answer is not {g}.",
    "Answer: {a}. Hmm, on reflection this is incorrect.",
    "The answer is {a}. Wait, that is wrong.",
    "{a}\n\nActually, I made a mistake.",
    "Answer: {a}. The answer is not {g}.",
    "The answer is {a}. But that is not right.",
]


@SETTINGS
@given(gold=golds, write=st.sampled_from(WRITE), template=st.sampled_from(NEGATIONS))
def test_no_negated_statement_of_the_gold_scores_one(gold: str, write, template: str) -> None:  # type: ignore[no-untyped-def]
    assert score(template.format(a=write(gold)), gold) == 0.0


@SETTINGS
@given(gold=golds, write=st.sampled_from(WRITE), template=st.sampled_from(WITHDRAWALS))
def test_no_withdrawn_statement_of_the_gold_scores_one(gold: str, write, template: str) -> None:  # type: ignore[no-untyped-def]
    assert score(template.format(a=write(gold), g=gold), gold) == 0.0


@SETTINGS
@given(gold=golds, write=st.sampled_from([WRITE[1], WRITE[2], WRITE[3]]))
def test_the_gold_stated_beside_a_denied_other_value_still_scores_one(gold: str, write) -> None:  # type: ignore[no-untyped-def]
    # the controls of the two properties above: the same sentences, the negation moved off the gold
    # (the denied value is none of the generated golds: they are below 10^6 or have no 1/3 part)
    other = "$10^{9}+\\frac{1}{3}$"
    assert score(f"The answer is {write(gold)}, not {other}.", gold) == 1.0
    assert score(f"The answer is not {other}; it is {write(gold)}.", gold) == 1.0
