"""Notation the math verifier reads (issue 25; policy rules 37-40 of tests/data/MATH_POLICY.md):
every pattern in general form, with positives and honest near-miss negatives (a false positive
is a reward hack an RL policy learns). Property tests where a property is natural."""

from __future__ import annotations

import itertools
import string
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.verifiers.math import MathVerifier
from referee.verifiers.math._lexer import LexError, tokenize
from referee.verifiers.math._tokens import COMMANDS, FUNCTIONS, GREEK, SPACING

verifier = MathVerifier()
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def equal(gold: str, answer: str) -> bool:
    return verifier.score(f"So the answer is $\\boxed{{{answer}}}$.", gold).score == 1.0


# (gold, answer, expected): each pattern with near misses right next to its positives.
CASES = [
    # products of absolute values; bars pair by where operands end
    ("|x||y|", "|xy|", True),
    ("|x||y|", "\\left|x\\right| \\cdot \\left|y\\right|", True),
    ("|x||y|", "\\lvert x y\\rvert", True),
    ("2|x|", "|2x|", True),
    ("||x||y||", "|x||y|", True),
    ("||a|-|b||", "\\left| |a| - |b| \\right|", True),
    ("|x-1||x+1|", "|x^2-1|", True),
    ("|x||y|", "|x|+|y|", False),
    ("|x||y|", "xy", False),
    ("|a||b|", "a \\cdot b", False),
    ("||a|-|b||", "|a-b|", False),
    ("|x-1||x+1|", "x^2-1", False),
    # square brackets and \{...\} used as grouping
    ("[x+1]^2", "x^2+2x+1", True),
    ("2[x+1]", "2x+2", True),
    ("3[2(a+b) - c]", "6a + 6b - 3c", True),
    ("2\\{a+b\\}", "2a+2b", True),
    ("\\{x+1\\}^2", "(x+1)^2", True),
    ("\\left\\{x + y\\right\\} z", "xz + yz", True),
    ("2[x+1]", "2x+1", False),
    ("2\\{a+b\\}", "2a+b", False),
    ("\\{x+1\\}^2", "x^2+1", False),
    ("\\{1, 2\\}", "3", False),  # a set of two numbers is still a set
    ("\\{a+b\\}", "2a+2b", False),  # alone it is the set {a+b}
    # function arguments without parentheses run over the implicit product that follows
    ("\\ln xy", "\\ln(xy)", True),
    ("\\ln xy", "\\ln x + \\ln y", False),  # only for positive x, y
    ("\\ln xy", "\\ln x \\cdot y", False),  # an explicit \cdot ends the argument
    ("\\log xy", "\\log(x y)", True),
    ("\\sin 2x", "2\\sin x\\cos x", True),
    ("\\sin 2x", "\\sin(2x)", True),
    ("\\sin 2x", "2\\sin x", False),
    ("\\sin 2x", "\\sin(2)x", False),
    ("\\sin x \\cos x", "\\frac{1}{2}\\sin 2x", True),
    ("\\sin a \\cos b", "\\sin(a\\cos b)", False),
    # letters amid math are symbols, never dropped as words
    ("\\frac{ab}{2}", "\\frac{a b}{2}", True),
    ("\\sqrt{xy}", "\\sqrt{x}\\sqrt{y}", False),  # differs for negative x and y
    ("a", "bc+a", False),
    ("\\emptyset", "\\{ab\\}", False),
    ("c", "ab - ab + c", True),
    # \sum / \prod bounds in either order, unbraced
    ("\\sum^3_{k=1} k", "6", True),
    ("\\sum^3_{k = 1} c", "3c", True),
    ("\\prod^4_{i=1} i", "24", True),
    ("\\sum^n_{k=1} k^2", "\\sum_{j=1}^{n} j^2", True),
    ("\\sum^3_{k=1} k", "5", False),
    ("\\sum^n_{k=1} k^2", "\\sum_{j=0}^{n} j^2 + 1", False),
    # spacing commands are whole names, never \ne
    ("a \\negthinspace b", "a b", True),
    ("a \\negmedspace b", "a \\cdot b", True),
    ("x \\negthickspace + \\thinspace y", "x + y", True),
    ("a \\negthinspace b", "a+b", False),
    ("x \\negthinspace = 2", "2", True),
    ("x \\negthinspace = 2", "3", False),
    # equal forms: roots with any index, the gamma function, min and max in any order
    ("\\sqrt[y]{\\sin x}", "\\sin^{1/y} x", True),
    ("\\sqrt[\\theta]{x}", "x^{\\frac{1}{\\theta}}", True),
    ("\\sqrt[y]{\\sin x}", "\\sin^{y} x", False),
    ("\\sqrt[n]{x}", "\\frac{x}{n}", False),
    ("(x+1)!", "\\Gamma(x+2)", True),
    ("\\Gamma\\left(\\frac12\\right)", "\\sqrt{\\pi}", True),
    ("\\Gamma(5)", "24", True),
    ("(x+1)!", "\\Gamma(x+1)", False),
    ("\\Gamma(5)", "120", False),
    ("\\min(a, b)", "\\min(b, a)", True),
    ("\\max(a, b, c - d, xy)", "\\max\\left(a, b, x y, c - d\\right)", True),
    ("\\min\\{3, \\pi, 4\\}", "3", True),
    ("\\min\\{3, \\pi, 4\\}", "\\pi", False),
    ("\\min(a, b)", "\\max(b, a)", False),
    ("\\min(a, b)", "a", False),
    ("\\max(a, b, c)", "\\max(a, b)", False),
    ("\\operatorname{lcm}(4, 6)", "12", True),
    ("\\gcd(12, 18)", "6", True),
    ("(4, 6)", "\\operatorname{lcm}(4,6)", False),
    ("\\gcd(12, 18)", "3", False),
    ("\\operatorname{asin}(a)", "\\sin^{-1} a", True),
    ("\\sinh^{-1}(a)", "\\ln(a + \\sqrt{a^2+1})", True),
    ("\\arcsin(a)", "\\frac{1}{\\sin a}", False),
    ("\\frac{\\cosh x}{\\sinh x}", "\\coth x", True),
    ("\\frac{1}{\\cosh x}", "\\operatorname{sech}(x)", True),
    ("\\tanh x", "\\coth x", False),
    ("\\frac{1}{\\sinh x}", "\\operatorname{sech} x", False),
    ("\\overline{3+4i}", "3-4i", True),
    ("\\overline{3+4i}", "3+4i", False),
    # a gold in scientific notation is rounded at its mantissa's last digit
    ("2.3148\\times10^{-3}", "\\frac{1}{432}", True),
    ("2.3148\\times10^{-3}", "0.00231481", True),
    ("2.3148 \\cdot 10^{-3}", "2.31481 \\times 10^{-3}", True),
    ("6.02\\times10^{23}", "6.0221\\times10^{23}", True),
    ("6.02e23", "602214076000000000000000", True),
    ("-1.5\\times10^{-7}", "-\\frac{3}{20000000}", True),
    ("2.3148\\times10^{-3}", "2.315\\times10^{-3}", False),  # fewer digits must be exact
    ("2.3148\\times10^{-3}", "0.002315", False),
    ("2.3148\\times10^{-3}", "\\frac{1}{400}", False),
    ("6.02\\times10^{23}", "6.0\\times10^{23}", False),
    ("6.02\\times10^{23}", "6.03\\times10^{23}", False),
    ("1.0\\times10^{-7}", "2\\times10^{-7}", False),
    ("3\\times10^{8}", "299792458", False),  # a whole mantissa is exact
    ("\\frac{1}{432}", "2.3148\\times10^{-3}", False),  # an exact gold stays exact
]


@pytest.mark.parametrize(("gold", "answer", "expected"), CASES, ids=[f"{g} ~ {a}" for g, a, _ in CASES])
def test_notation(gold: str, answer: str, expected: bool) -> None:
    assert equal(gold, answer) is expected


def test_every_pattern_has_near_misses() -> None:
    assert sum(expected for *_, expected in CASES) >= 40
    assert sum(not expected for *_, expected in CASES) >= 35


def test_a_scientific_gold_is_exact_when_rounding_is_off() -> None:
    from referee.verifiers.math import MathReference

    reference = MathReference(answer="2.3148\\times10^{-3}", rounded_decimal_gold=False)
    assert verifier.score("\\boxed{\\frac{1}{432}}", reference).score == 0.0
    assert verifier.score("\\boxed{0.0023148}", reference).score == 1.0


def test_commands_match_whole_names_only() -> None:
    """`\\negthinspace` is not `\\ne` + letters, `\\pix` is not `\\pi x`: no command the lexer
    knows is read from the first letters of a longer name."""
    names = set(COMMANDS) | FUNCTIONS | GREEK | SPACING | {"mathbb", "begin", "end"}
    for name, suffix in itertools.product(sorted(names), ("a", "x", "space", "q")):
        longer = name + suffix
        if longer in names:
            continue
        try:
            tokens = tokenize(f"\\{longer} {{1}}")
        except LexError:
            continue
        assert all(tok.val != name and tok.kind not in ("rel", "func") for tok in tokens[:1]), longer
    for spacing in sorted(SPACING):
        assert [t.kind for t in tokenize(f"a \\{spacing} b")] == ["sym", "sym"], spacing


def test_some_identities_hold_only_for_some_signs_or_orders() -> None:
    """Identities true only for some signs or some order of the unknowns are not identities,
    whatever the names of the unknowns (each pair drawn from the whole alphabet)."""
    letters = [c for c in string.ascii_letters if c not in "ei"]
    for p, q in itertools.combinations(letters[::3], 2):
        assert not equal(f"\\sqrt{{{p}^2 {q}^2}}", f"{p} \\cdot {q}"), (p, q)
        assert not equal(f"|{p}-{q}|", f"{p}-{q}"), (p, q)
        assert not equal(f"\\min({p},{q})", p), (p, q)
        assert not equal(f"\\max({p},{q})", q), (p, q)


# -- properties -----------------------------------------------------------------------------

# Factors whose sign varies with the unknowns, so that an absolute value always matters.
bar_factors = st.lists(
    st.sampled_from(["x", "y", "a - b", "2x + 1", "x^3 - y"]), min_size=1, max_size=4, unique=True
)


@SETTINGS
@given(bar_factors, st.booleans())
def test_products_of_absolute_values(factors: list[str], nested: bool) -> None:
    """`|e1||e2|...` (bars side by side, optionally inside one more bar) is |e1 e2 ...|, never
    the product without bars or the sum of the bars."""
    bare = "".join(f"|{f}|" for f in factors)
    if nested:
        bare = f"|{bare}|"
    explicit = "\\left|" + " \\cdot ".join(f"({f})" for f in factors) + "\\right|"
    assert equal(explicit, bare), bare
    assert not equal(" \\cdot ".join(f"({f})" for f in factors), bare), bare
    if len(factors) > 1:
        assert not equal(" + ".join(f"|{f}|" for f in factors), bare), bare


@SETTINGS
@given(
    numerator=st.integers(1, 10**9),
    denominator=st.integers(2, 10**9),
    exponent=st.integers(-12, 12),
    digits=st.integers(1, 6),
)
def test_a_scientific_gold_accepts_what_rounds_to_it(
    numerator: int, denominator: int, exponent: int, digits: int
) -> None:
    """Gold m x 10^e with `digits` decimals in m, against r = (n/d) x 10^e: r rounds half-up to
    the gold at the mantissa's last digit (oracle: `decimal`), so it is equal; one unit of that
    digit away, written exactly, is not."""
    places = Decimal(1).scaleb(-digits)
    mantissa = (Decimal(numerator) / Decimal(denominator)).quantize(places, rounding=ROUND_HALF_UP)
    gold = f"{mantissa}\\times10^{{{exponent}}}"
    value = Fraction(numerator, denominator) * Fraction(10) ** exponent
    assert equal(gold, f"\\frac{{{value.numerator}}}{{{value.denominator}}}"), gold
    nudged = (Fraction(str(mantissa)) + Fraction(str(places))) * Fraction(10) ** exponent
    assert not equal(gold, f"\\frac{{{nudged.numerator}}}{{{nudged.denominator}}}"), gold


ARGUMENTS = ["a", "b", "c - d", "xy", "2", "\\pi"]


@SETTINGS
@given(st.permutations(ARGUMENTS), st.sampled_from(["min", "max"]))
def test_min_and_max_ignore_the_order_of_their_arguments(arguments: list[str], name: str) -> None:
    written = f"\\{name}({', '.join(ARGUMENTS)})"
    other = "max" if name == "min" else "min"
    assert equal(written, f"\\{name}\\left({', '.join(arguments)}\\right)")
    assert equal(written, f"\\{name}\\{{{', '.join(arguments)}\\}}")
    assert not equal(written, f"\\{other}({', '.join(arguments)})")
