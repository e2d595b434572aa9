"""Property tests: no response scores 1 against a gold it is not equal to.

Pairs of distinct rationals (near misses included: off by one unit in the last place, the
denominator alone, the numerator alone, the reciprocal, the negation) are written in many surface
forms, as LaTeX and as plain text, inside the ways completions state answers (box, "The answer
is", a concluding sentence, "Answer:", "####", chat debris, labels). Each form must also score 1
against its own value, so that the negative checks are not vacuous.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from referee.verifiers.math import MathVerifier

verifier = MathVerifier()
SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _grouped(n: int, sep: str) -> str:
    digits = str(n)
    head = len(digits) % 3 or 3
    groups = [digits[:head]] + [digits[k : k + 3] for k in range(head, len(digits), 3)]
    return sep.join(groups)


def _decimal(q: Fraction) -> str | None:
    """The terminating decimal spelling of q, if it has one (at most 6 places)."""
    for places in range(1, 7):
        scaled = q * 10**places
        if scaled.denominator == 1:
            sign = "-" if q < 0 else ""
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            return f"{sign}{digits[:-places]}.{digits[-places:]}"
    return None


def latex_forms(q: Fraction) -> list[str]:
    n, d = q.numerator, q.denominator
    sign = "-" if q < 0 else ""
    a = abs(n)
    if d == 1:
        forms = [str(n), sign + _grouped(a, "{,}"), sign + _grouped(a, ",\\! "), f"{sign}{a}.0"]
        if a >= 1000:
            forms.append(sign + _grouped(a, "\\,"))
        return forms
    forms = [
        f"{sign}\\frac{{{a}}}{{{d}}}",
        f"\\dfrac{{{n}}}{{{d}}}",
        f"{sign}\\tfrac{{{a}}}{{{d}}}",
        f"\\frac{{{n * 2}}}{{{d * 2}}}",
        f"{n}/{d}",
    ]
    decimal = _decimal(q)
    if decimal is not None:
        forms.append(decimal)
    if q > 1:
        whole, part = divmod(n, d)
        forms += [f"{whole}\\frac{{{part}}}{{{d}}}", f"{whole} {part}/{d}"]
    return forms


def plain_forms(q: Fraction) -> list[str]:
    n, d = q.numerator, q.denominator
    if d == 1:
        forms = [str(n)]
        if abs(n) >= 1000:
            forms.append(("-" if n < 0 else "") + _grouped(abs(n), ","))
        return forms
    forms = [f"{n}/{d}"]
    decimal = _decimal(q)
    if decimal is not None:
        forms.append(decimal)
    if q > 1:
        whole, part = divmod(n, d)
        forms.append(f"{whole} {part}/{d}")
    return forms


LATEX_TEMPLATES = [
    "\\boxed{{{x}}}",
    "The answer is $\\boxed{{{x}}}$.",
    "The answer is ${x}$.",
    "Therefore, the probability is ${x}$.",
    "So $p = {x}$.",
    "Final Answer: The final answer is ${x}$. I hope it is correct.",
    "We get $y = \\boxed{{{x}}}$.<|im_end|>\n<|im_start|>user\nthanks",
    "<think>maybe 0</think>\n\\[ {x} \\]",
]
PLAIN_TEMPLATES = [
    "So the probability is {x}.",
    "Answer: {x}",
    "#### {x}",
    "The total comes to {x}.",
    "**Answer:** {x}",
    "Thus she ran {x} miles.",
]

values = st.builds(
    Fraction,
    st.integers(-(10**7), 10**7),
    st.one_of(st.just(1), st.integers(1, 64)),
)


@st.composite
def distinct_pairs(draw: st.DrawFn) -> tuple[Fraction, Fraction]:
    gold = draw(values)
    kind = draw(
        st.sampled_from(["any", "ulp", "denominator", "numerator", "reciprocal", "negation", "whole"])
    )
    if kind == "any":
        other = draw(values)
    elif kind == "ulp":
        other = gold + Fraction(draw(st.sampled_from([1, -1])), gold.denominator * draw(st.integers(1, 3)))
    elif kind == "denominator":
        other = Fraction(gold.denominator)
    elif kind == "numerator":
        other = Fraction(gold.numerator)
    elif kind == "reciprocal":
        assume(gold != 0)
        other = 1 / gold
    elif kind == "negation":
        other = -gold
    else:
        other = Fraction(gold.numerator // gold.denominator)
    assume(other != gold)
    return gold, other


def _forms(q: Fraction, latex: bool) -> list[str]:
    return latex_forms(q) if latex else plain_forms(q)


@SETTINGS
@given(distinct_pairs(), st.booleans(), st.booleans(), st.data())
def test_distinct_numbers_never_score_one(
    pair: tuple[Fraction, Fraction], gold_latex: bool, latex: bool, data: st.DataObject
) -> None:
    gold, other = pair
    gold_text = data.draw(st.sampled_from(_forms(gold, gold_latex)), label="gold")
    if "." in gold_text:  # a decimal gold is rounded (policy 5): keep the response clear of it
        places = len(gold_text.split(".")[1])
        assume(abs(other - gold) * 10**places >= 1)
    template = data.draw(st.sampled_from(LATEX_TEMPLATES if latex else PLAIN_TEMPLATES), label="template")
    shown = data.draw(st.sampled_from(_forms(other, latex)), label="response value")
    response = template.format(x=shown)
    check = verifier.score(response, gold_text)
    assert check.score == 0.0, (gold_text, response, check.details)


@SETTINGS
@given(values, st.booleans(), st.booleans(), st.data())
def test_the_same_number_in_another_form_scores_one(
    value: Fraction, gold_latex: bool, latex: bool, data: st.DataObject
) -> None:
    gold_text = data.draw(st.sampled_from(_forms(value, gold_latex)), label="gold")
    template = data.draw(st.sampled_from(LATEX_TEMPLATES if latex else PLAIN_TEMPLATES), label="template")
    shown = data.draw(st.sampled_from(_forms(value, latex)), label="response value")
    response = template.format(x=shown)
    check = verifier.score(response, gold_text)
    assert check.score == 1.0, (gold_text, response, check.reason, check.details)


choices = st.sampled_from("ABCDE")


@SETTINGS
@given(choices, choices, st.sampled_from(["+ 1", "\\cdot 3", "* 2", "- 4", "^2", "/ 2", "= 5"]), st.data())
def test_a_choice_letter_with_arithmetic_or_another_letter_never_scores_one(
    gold: str, other: str, arithmetic: str, data: st.DataObject
) -> None:
    gold_text = data.draw(st.sampled_from([gold, f"({gold})", f"\\text{{{gold}}}"]))
    wrapped = data.draw(st.sampled_from(["{g}", "\\mathrm{{{g}}}", "\\text{{{g}}}"])).format(g=gold)
    assert verifier.score(f"\\boxed{{{wrapped} {arithmetic}}}", gold_text).score == 0.0
    if other != gold:
        for hedge in (f"({gold}) ({other})", f"({gold}) or ({other})", f"{gold}, {other}"):
            assert verifier.score(f"\\boxed{{{hedge}}}", gold_text).score == 0.0, hedge
            assert verifier.score(f"The answer is {hedge}.", gold_text).score == 0.0, hedge
        assert verifier.score(f"The correct option is ({other}).", gold_text).score == 0.0
    assert verifier.score(f"The correct option is ({gold}).", gold_text).score == 1.0


Matrix = list[list[int]]
entries = st.integers(-4, 4)


def _pmatrix(rows: Matrix) -> str:
    return "\\begin{pmatrix}" + " \\\\ ".join(" & ".join(map(str, row)) for row in rows) + "\\end{pmatrix}"


def _matrices(m: int, n: int) -> st.SearchStrategy[Matrix]:
    return st.lists(st.lists(entries, min_size=n, max_size=n), min_size=m, max_size=m)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.data())
def test_matrix_arithmetic_scores_one_exactly_when_the_result_is_the_gold(
    m: int, n: int, p: int, data: st.DataObject
) -> None:
    """Policy rule 30: products in the order written, sums, differences; the gold is the true
    result or that result with one entry off by one (or another product's result)."""
    a, b, c = data.draw(_matrices(m, n)), data.draw(_matrices(n, p)), data.draw(_matrices(m, n))
    product = [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(p)] for i in range(m)]
    total = [[a[i][j] + c[i][j] for j in range(n)] for i in range(m)]
    results = {
        f"{_pmatrix(a)} {_pmatrix(b)}": product,
        f"{_pmatrix(a)} \\cdot {_pmatrix(b)}": product,
        f"{_pmatrix(a)} + {_pmatrix(c)}": total,
    }
    gold = data.draw(st.sampled_from([product, total]), label="gold")
    if data.draw(st.booleans(), label="perturbed"):
        i, j = data.draw(st.integers(0, len(gold) - 1)), data.draw(st.integers(0, len(gold[0]) - 1))
        gold = [row[:] for row in gold]
        gold[i][j] += data.draw(st.sampled_from([-1, 1]))

    def vector(rows: Matrix) -> list[int] | None:  # a row or column vector is its tuple (rule 9)
        return [x for row in rows for x in row] if len(rows) == 1 or len(rows[0]) == 1 else None

    for written, value in results.items():
        same = value == gold or (vector(value) is not None and vector(value) == vector(gold))
        check = verifier.score(f"\\boxed{{{written}}}", _pmatrix(gold))
        assert check.score == float(same), (written, gold, check.details)


@SETTINGS
@given(st.lists(st.integers(-9, 9), min_size=2, max_size=4), st.data())
def test_a_bare_list_equals_an_ordered_gold_only_in_order(items: list[int], data: st.DataObject) -> None:
    """Policy rule 29: `1, 3` and `{1,3}` are the tuple `(1,3)` (or `x=1, y=3`) in that order only;
    boxes joined by "and" likewise (rule 32), boxes joined by "or" never."""
    shown = data.draw(st.permutations(items), label="response order")
    names = "xyzw"
    gold = data.draw(
        st.sampled_from(
            [
                "(" + ", ".join(map(str, items)) + ")",
                ", ".join(f"{names[k]}={x}" for k, x in enumerate(items)),
            ]
        ),
        label="gold",
    )
    same = float(list(shown) == items)
    listed = ", ".join(map(str, shown))
    for response in (f"\\boxed{{{listed}}}", f"\\boxed{{{{{listed}}}}}", f"The answer is ${listed}$."):
        assert verifier.score(response, gold).score == same, (gold, response)
    boxes = [f"$\\boxed{{{x}}}$" for x in shown]
    if len(set(shown)) > 1:
        assert verifier.score(" and ".join(boxes) + ".", gold).score == same, (gold, boxes)
        assert verifier.score(" or ".join(boxes) + ".", gold).score == 0.0, (gold, boxes)
