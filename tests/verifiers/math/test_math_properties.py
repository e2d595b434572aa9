"""Property tests: reflexivity, invariance under notation, totality."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.verifiers.math import MathVerifier

verifier = MathVerifier()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Tree = tuple[Any, ...]


@dataclass(frozen=True)
class Style:
    """How an answer is written: none of these may change a verdict."""

    space: str  # between tokens
    left_right: bool  # \left( ... \right)
    frac: str  # \frac / \dfrac / \tfrac


styles = st.builds(
    Style,
    space=st.sampled_from(["", " ", "  ", "\n"]),
    left_right=st.booleans(),
    frac=st.sampled_from(["\\frac", "\\dfrac", "\\tfrac"]),
)

leaves = st.one_of(
    st.tuples(st.just("int"), st.integers(0, 10**6)),
    st.tuples(st.just("dec"), st.integers(0, 10**5), st.integers(1, 4)),
    st.tuples(st.just("sym"), st.sampled_from(["x", "y", "n"])),
    st.tuples(st.just("pi")),
    st.tuples(st.just("sqrt"), st.integers(0, 200)),
)


def _extend(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul", "frac"]), children, children),
        st.tuples(st.just("pow"), children, st.integers(0, 3)),
        st.tuples(st.sampled_from(["neg", "paren"]), children),
    )


expressions = st.recursive(leaves, _extend, max_leaves=8)
numbers = st.one_of(
    st.tuples(st.just("int"), st.integers(-50, 50)),
    st.tuples(st.just("dec"), st.integers(0, 999), st.integers(1, 2)),
)
answers = st.one_of(
    expressions,
    st.tuples(st.just("tuple"), st.lists(expressions, min_size=2, max_size=4)),
    st.tuples(st.just("set"), st.lists(expressions, min_size=1, max_size=4)),
    st.tuples(st.just("interval"), numbers, numbers, st.booleans(), st.booleans()),
    st.tuples(st.just("text"), st.sampled_from(["Monday", "yes", "even", "odd", "no solution"])),
    st.tuples(st.just("choice"), st.sampled_from("ABCDE"), st.booleans()),
)


def render(tree: Tree, style: Style) -> str:
    s = style.space
    lp, rp = ("\\left(", "\\right)") if style.left_right else ("(", ")")
    kind = tree[0]
    if kind == "int":
        return str(tree[1]) if tree[1] >= 0 else f"{lp}{tree[1]}{rp}"
    if kind == "dec":
        whole, frac = divmod(tree[1], 10 ** tree[2])
        return f"{whole}.{frac:0{tree[2]}d}"
    if kind == "sym":
        return str(tree[1])
    if kind == "pi":
        return "\\pi"
    if kind == "sqrt":
        return f"\\sqrt{{{tree[1]}}}"
    if kind in ("add", "sub", "mul"):
        op = {"add": "+", "sub": "-", "mul": "\\cdot"}[kind]
        return f"{render(tree[1], style)}{s}{op}{s}{lp}{render(tree[2], style)}{rp}"
    if kind == "frac":
        return f"{style.frac}{{{render(tree[1], style)}}}{{{render(tree[2], style)}}}"
    if kind == "pow":
        return f"{lp}{render(tree[1], style)}{rp}^{{{tree[2]}}}"
    if kind == "neg":
        return f"-{lp}{render(tree[1], style)}{rp}"
    if kind == "paren":
        return f"{lp}{render(tree[1], style)}{rp}"
    if kind in ("tuple", "set"):
        inner = f",{s}".join(render(item, style) for item in tree[1])
        if kind == "tuple":
            return f"{lp}{inner}{rp}"
        return f"\\left\\{{{s}{inner}{s}\\right\\}}" if style.left_right else f"\\{{{s}{inner}{s}\\}}"
    if kind == "interval":
        lo, hi = render(tree[1], style), render(tree[2], style)
        open_, close = "[" if tree[3] else "(", "]" if tree[4] else ")"
        if style.left_right:
            open_, close = "\\left" + open_, "\\right" + close
        return f"{open_}{lo},{s}{hi}{close}"
    if kind == "text":
        return f"\\text{{{tree[1]}}}"
    if kind == "choice":
        return f"({tree[1]})" if tree[2] else str(tree[1])
    raise AssertionError(kind)


def verdict(response: str, gold: str) -> float:
    check = verifier.score(response, gold)
    assert check.score in (0.0, 1.0)
    return check.score


@SETTINGS
@given(answers, styles, styles)
def test_math_answer_equals_itself_in_any_notation(
    tree: Tree, gold_style: Style, answer_style: Style
) -> None:
    gold = render(tree, gold_style)
    response = f"Work.\n\nTherefore, the final answer is $\\boxed{{{render(tree, answer_style)}}}$."
    check = verifier.score(response, gold)
    assert check.score == 1.0, (gold, response, check.reason, check.details)


@SETTINGS
@given(answers, answers, styles, styles)
def test_math_notation_never_changes_a_verdict(
    gold_tree: Tree, tree: Tree, style_a: Style, style_b: Style
) -> None:
    gold = render(gold_tree, style_a)
    a, b = render(tree, style_a), render(tree, style_b)
    reference = verdict(f"The final answer is $\\boxed{{{a}}}$.", gold)
    assert verdict(f"The final answer is $\\boxed{{{b}}}$.", gold) == reference
    assert verdict(f"  The final answer is $\\boxed{{\\boxed{{{a}}}}}$.\n\n", gold) == reference
    assert verdict(f"The final answer is ${a}$.", gold) == reference
    assert (
        verdict(f"<think>\nmaybe \\boxed{{7}}\n</think>\nSo the answer is $\\boxed{{{a}}}$.", gold)
        == reference
    )


@SETTINGS
@given(st.text(max_size=300), st.text(max_size=60))
def test_math_never_raises_on_arbitrary_text(response: str, gold: str) -> None:
    verdict(response, gold)


latexish = st.lists(
    st.sampled_from(
        ["\\boxed{", "\\frac", "{", "}", "(", ")", "[", "]", "\\{", "\\}", "^", "_", "-", "+", "=", "<", ",", "x", "2",
         "0.5", "\\sqrt", "\\pi", "\\infty", "\\text{", "or", " ", "$", "\\left(", "\\right)", "\\pm", "!", "%", "\\cup",
         "\\begin{pmatrix}", "\\end{pmatrix}", "&", "\\\\", "</think>", "Answer:", ".", "e", "i", "\\sin"]
    ),
    max_size=40,
).map("".join)  # fmt: skip


@SETTINGS
@given(latexish, latexish)
def test_math_never_raises_on_latex_soup(response: str, gold: str) -> None:
    verdict(response, gold)
    verdict(f"\\boxed{{{response}}}", gold)
