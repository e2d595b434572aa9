"""The pieces of the math pipeline, each on its own."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from referee.verifiers.math._extract import final_answer
from referee.verifiers.math._lexer import LexError, strip_words, tokenize
from referee.verifiers.math._numeric import Expr, exact_value, exprs_equal
from referee.verifiers.math._parser import ParseError, parse_tokens
from referee.verifiers.math._text import DEGREE_MARK, clean, normalize_text
from referee.verifiers.math._values import Intervals, Scalar, Seq, SetV, to_value
from tests.timing import within


def parse(text: str) -> tuple:
    tokens, _ = strip_words(tokenize(clean(text)))
    return parse_tokens(tokens)


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("\\left( 1 ,\\, 2 \\right)", "( 1 , 2 )"),
        ("10,\\!000", "10000"),
        ("1{,}000{,}000", "1000000"),
        ("12,000", "12000"),
        ("\\dfrac{1}{2}", "\\frac{1}{2}"),
        ("30^\\circ", "30" + DEGREE_MARK),  # kept for the tokenizer: degrees matter in trig
        ("135°", "135" + DEGREE_MARK),
        ("\\$15.", "15"),
        ("((((3))))", "(3)"),
        ("−5", "-5"),
    ],
)
def test_clean_spelling(raw: str, cleaned: str) -> None:
    assert " ".join(clean(raw).split()) == " ".join(cleaned.split())


def test_clean_keeps_lists_and_matrices() -> None:
    assert clean("(1,234)") == "(1,234)"  # inside brackets a comma is a separator, not thousands
    assert "\\\\" in clean("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}")


def test_text_wrappers_become_words() -> None:
    kinds = [t.kind for t in tokenize(clean("12\\text{ m}"))]
    assert kinds == ["num", "word"]
    assert [t.val for t in tokenize(clean("x=1 \\text{ or } x=2")) if t.kind == "conn"] == ["or"]
    assert tokenize(clean("\\mathrm{e}"))[0].val == "e"  # the constant, not a word
    assert normalize_text("\\text{The  Monday.}") == "monday"


def test_lexer_numbers() -> None:
    (num,) = tokenize("0.\\overline{3}")
    assert num.val.value == Fraction(1, 3) and num.val.decimals is None
    (num,) = tokenize("6.02e23")
    assert (num.val.value, num.val.decimals, num.val.exponent) == (Fraction(602, 100), 2, 23)
    (num,) = tokenize("2.50")
    assert num.val.value == Fraction(5, 2) and num.val.decimals == 2
    assert [t.val.text for t in tokenize("\\frac12") if t.kind == "num"] == ["1", "2"]
    (big,) = tokenize("1" + "0" * 10_000)  # longer than int()'s 4300-digit limit
    assert big.val.value == 10**10_000


def test_lexer_is_a_whitelist() -> None:
    for text in ("\\input{x}", "\\def\\a{1}", "x'", '"1"', "ℵ", "¹"):
        with pytest.raises(LexError):
            tokenize(text)
    with pytest.raises(LexError):
        tokenize("1" * 30_000)


def test_parser_structures() -> None:
    assert parse("(1,2]")[0] == "interval"
    assert parse("(1,2)")[0] == "tuple"
    assert parse("\\{1,2\\}")[0] == "set"
    assert parse("x=1 \\text{ or } x=2")[0] == "list"
    assert parse("2^{3}^{2}") == ("^", ("n", 2, None), ("^", ("n", 3, None), ("n", 2, None)))
    assert parse("33\\frac{1}{3}") == ("n", Fraction(100, 3), None)  # mixed number
    assert parse("\\sin 2x") == ("f", "sin", ("*", ("n", 2, None), ("s", "x")))
    assert parse("\\sin^{-1} x") == ("f", "arcsin", ("s", "x"))
    assert parse("x_{12}") == ("s", "x_12")
    assert parse("1011_2") == ("base", "1011", 2)
    assert parse("---5") == ("neg", ("n", 5, None))  # sign runs collapse: shallow trees


def test_parser_limits() -> None:
    with pytest.raises(ParseError):
        parse("2^" * 60 + "2")
    with pytest.raises(ParseError):
        parse("\\sqrt{" * 200 + "2" + "}" * 200)
    with pytest.raises(ParseError):
        parse("(1,2")


def test_values() -> None:
    assert isinstance(to_value(parse("1 \\pm \\sqrt{2}")), SetV)
    assert isinstance(to_value(parse("x > 3")), Intervals)
    assert isinstance(to_value(parse("9:30")), Seq)
    pct = to_value(parse("12\\%"))
    assert isinstance(pct, Scalar) and pct.pct
    decimal = to_value(parse("-0.50"))
    assert isinstance(decimal, Scalar) and decimal.decimals == 2 and decimal.literal


def test_exact_arithmetic_and_guards() -> None:
    assert exact_value(parse("\\frac{2}{4} + 0.5")) == 1
    assert exact_value(parse("2^{2^{2^{2^2}}}")) == 2**65536
    assert exact_value(parse("10^{10^{10}}")) is None  # too large: numeric, never materialised
    assert exact_value(parse("\\sqrt{4}")) is None  # irrational functions are numeric


def test_numeric_equality_is_precise() -> None:
    def eq(a: str, b: str) -> str | None:
        return exprs_equal(Expr(parse(a)), Expr(parse(b)))

    assert eq("\\sqrt{45}", "3\\sqrt{5}") == "numeric"
    assert eq("\\pi", "3.14159265358979323846") is None
    assert eq("(x+1)^2", "x^2+2x+1") == "symbolic"
    assert eq("\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}") is None
    start = time.perf_counter()
    assert eq("(10^{10^{10}})! - (10^{10^{10}})!", "0") == "numeric"  # opaque X - X = 0
    assert eq("(10^{10^{10}})!", "(10^{10^{10}})! + 1") is None
    assert eq("10^{10^{10}}", "10^{10^{9}}") is None
    assert time.perf_counter() - start < within(0.5)


def test_extraction() -> None:
    assert final_answer("<think>\\boxed{1}</think> so \\boxed{2}").answers == ["2"]
    got = final_answer("First $\\boxed{5}$. Wait, I made an error; it is $\\boxed{3}$.")
    assert got.answers == ["3"]
    assert final_answer("either $\\boxed{5}$ or $\\boxed{6}$").answers == ["5", "6"]
    assert final_answer("so \\boxed{5} and \\boxed{").answers == []
    assert final_answer("Final Answer: The final answer is $3-4i$. I hope it is correct.").answers == [
        "$3-4i$"
    ]
    assert final_answer("The answer is not 15. The answer is 16.").answers == ["16"]
    assert final_answer("<think>42").how == "none"
    assert final_answer("Then 2x + 3 = 13, so").how == "none"
    assert final_answer("So she sold **160** muffins.").answers == ["160"]
    assert final_answer("Is it 99 or 100? Let me check whether 99 or 100.").how == "none"


def test_prepared_gold_pickles_after_use() -> None:
    import pickle

    from referee.verifiers.math import MathVerifier

    verifier = MathVerifier()
    options = verifier.validate_options({})
    gold = verifier.prepare("\\sqrt{2} + x", options)
    assert verifier.check("\\boxed{x + \\sqrt 2}", gold, options).score == 1.0  # fills the caches
    copy = pickle.loads(pickle.dumps(gold))
    assert verifier.check("\\boxed{x + \\sqrt 2}", copy, options).score == 1.0
    assert verifier.check("\\boxed{x + \\sqrt 3}", copy, options).score == 0.0
