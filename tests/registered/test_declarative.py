"""Declarative specs in-process: extractors, comparators, templates, multi, the formula grammar."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from referee.registered import formula
from referee.registered.declarative import build_class, from_spec, worker_builtins
from referee.registered.template import PathError, render
from referee.verifiers import builtin_index

BUILTINS = worker_builtins(builtin_index())
HAS_MATH = "math" in BUILTINS
CORRECT = "math" if HAS_MATH else "numeric"


def verifier(spec: dict[str, Any], schema: dict[str, Any] | None = None) -> Any:
    return build_class("t", "1", spec, schema, builtins=BUILTINS)()


def check(extract: dict[str, Any], compare: str, reference: Any = "{{reference}}", **options: Any) -> Any:
    spec = {"type": "check", "extract": extract, "compare": {"kind": compare, "options": options}}
    return verifier({**spec, "reference": reference})


MULTI = {
    "type": "multi",
    "components": {
        "correct": {"type": "verifier", "name": CORRECT, "reference": "{{reference.answer}}"},
        "fmt": {"type": "verifier", "name": "format.think_answer", "reference": None},
    },
    "weights": {"correct": 0.9, "fmt": 0.1},
}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("<think>half of 1</think>\n<answer>\\boxed{\\frac{1}{2}}</answer>", 1.0),
        ("The answer is \\boxed{0.5}", 0.9),  # right, but not in the R1 format
        ("<think>hmm</think><answer>\\boxed{3}</answer>", 0.1),
        ("<think>unclosed", 0.0),
    ],
)
def test_multi_math_and_format(response: str, expected: float) -> None:
    result = verifier(MULTI).score(response, {"answer": "1/2" if not HAS_MATH else "\\frac{1}{2}"})
    assert result.score == pytest.approx(expected)
    assert set(result.details["components"]) == {"correct", "fmt"}


def test_worker_factory_rebuilds_the_same_verifier() -> None:
    original = verifier(MULTI)
    factory, spec_json = original.worker_ref()
    assert factory == "referee.registered.declarative:from_spec"
    rebuilt = from_spec(spec_json, builtin_index())
    response = "<think>x</think><answer>\\boxed{2}</answer>"
    assert rebuilt.score(response, {"answer": "2"}) == original.score(response, {"answer": "2"})
    assert rebuilt.qualified_name() == "t@1"


@pytest.mark.parametrize(
    ("extract", "response", "found"),
    [
        ({"kind": "boxed"}, "so \\boxed{7} and \\boxed{8}", "8"),
        ({"kind": "answer_tag"}, "<think>1</think><answer> 9 </answer>", " 9 "),
        ({"kind": "regex", "pattern": r"ID-(\d+)", "group": 1}, "ID-1 then ID-22", "22"),
        ({"kind": "regex", "pattern": r"ID-(\d+)", "group": 1, "occurrence": "first"}, "ID-1 ID-22", "1"),
        (
            {"kind": "json_path", "path": "a.b[1]", "source": "answer_tag"},
            '<answer>{"a":{"b":[1,"x"]}}</answer>',
            "x",
        ),
        ({"kind": "fenced", "languages": ["json"]}, "```json\nhello\n```\n```py\nbye\n```", "hello\n"),
    ],
)
def test_extractors(extract: dict[str, Any], response: str, found: str) -> None:
    assert check(extract, "exact", strip=False).score(response, found).score == 1.0
    assert check(extract, "exact", strip=False).score(response, found + "?").score == 0.0


def test_missing_answer_is_zero_with_reason() -> None:
    result = check({"kind": "boxed"}, "exact").score("no box", "1")
    assert result.score == 0.0 and "no answer" in (result.reason or "")


def test_set_multiset_and_json_schema_comparators() -> None:
    unordered = check({"kind": "answer_tag"}, "set")
    assert unordered.score("<answer>b, A, a</answer>", ["a", "b"]).score == 1.0
    assert unordered.score("<answer>a</answer>", "a,b").score == 0.0
    counted = check({"kind": "answer_tag"}, "multiset", score="f1")
    assert counted.score('<answer>["a","a","b"]</answer>', ["a", "b", "b"]).score == pytest.approx(2 / 3)
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    typed = check({"kind": "answer_tag"}, "json_schema")
    assert typed.score('<answer>{"n": 3}</answer>', schema).score == 1.0
    result = typed.score('<answer>{"n": "3"}</answer>', schema)
    assert result.score == 0.0 and "n" in (result.reason or "")
    assert typed.score("<answer>{not json</answer>", schema).reason == "answer is not valid JSON"


def test_numeric_tolerance_through_template() -> None:
    near = check({"kind": "boxed"}, "numeric", "{{reference.value}}", abs_tol=0.05)
    assert near.score("\\boxed{3.14}", {"value": 3.1416}).score == 1.0
    assert near.score("\\boxed{3.2}", {"value": 3.1416}).score == 0.0


def test_formula_combination_and_range() -> None:
    spec = {
        "type": "multi",
        "components": {
            "a": {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "exact"}},
            "b": {
                "type": "check",
                "extract": {"kind": "none"},
                "compare": {"kind": "regex"},
                "reference": "x.*",
            },
        },
        "formula": "min(a, b) * 0.5 + 0.5 * max(a, b)",
    }
    v = verifier(spec)
    assert [v.score(r, "xy").score for r in ("xy", "xz", "q")] == [1.0, 0.5, 0.0]
    weighted = verifier({**spec, "formula": None, "weights": {"a": 2.0, "b": -1.0}})
    assert type(weighted).score_range == (-1.0, 2.0)


def test_reference_is_validated_before_scoring() -> None:
    cls = build_class("t", "1", MULTI, {"type": "object", "required": ["answer"]}, builtins=BUILTINS)
    with pytest.raises(ValidationError, match="answer"):
        cls.validate_reference({"answr": 1})
    templated = build_class("t", "1", {**MULTI}, None, builtins=BUILTINS)
    with pytest.raises(ValidationError, match=r"reference\.answer"):
        templated.validate_reference({"other": 1})


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "check", "compare": {"kind": "eval"}},
        {"type": "check", "extract": {"kind": "regex", "pattern": "(a"}, "compare": {"kind": "exact"}},
        {"type": "check", "extract": {"kind": "regex"}, "compare": {"kind": "exact"}},
        {"type": "check", "compare": {"kind": "exact", "options": {"nope": 1}}},
        {"type": "verifier", "name": "code"},  # runs in the service, not in a worker
        {"type": "verifier", "name": "no.such"},
        {"type": "check", "compare": {"kind": "exact"}, "reference": "{{options.x}}"},
        {**MULTI, "weights": {"correct": 1.0}},
        {**MULTI, "weights": None, "formula": "__import__('os')"},
        {**MULTI, "weights": None, "formula": "correct ** 2"},
        {**MULTI, "weights": None},
    ],
)
def test_invalid_specs_are_refused(spec: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        build_class("t", "1", spec, None, builtins=BUILTINS)


@pytest.mark.parametrize(
    "text",
    [
        "a.__class__",
        "a; b",
        "lambda: 1",
        "[a]",
        "a if b else 1",
        "exp(a)",
        "a @ b",
        "'a'",
        "(" * 40 + "a" + ")" * 40,
    ],
)
def test_formula_grammar_is_a_whitelist(text: str) -> None:
    with pytest.raises(formula.FormulaError):
        formula.parse(text, frozenset({"a", "b"}))


def test_formula_evaluates_precedence_and_functions() -> None:
    tree = formula.parse("-a + b * 2 / 4 - clip(a - 3, 0, 1) + abs(-1)", frozenset({"a", "b"}))
    assert formula.evaluate(tree, {"a": 1.0, "b": 2.0}) == pytest.approx(-1 + 1 - 0 + 1)


def test_templates() -> None:
    ref = {"answer": [1, {"x": "y"}]}
    assert render("{{reference.answer[1].x}}", ref) == "y"
    assert render("{{ reference.answer }}", ref) == [1, {"x": "y"}]
    assert render({"k": ["n={{reference.answer[0]}}"]}, ref) == {"k": ["n=1"]}
    with pytest.raises(PathError):
        render("{{reference.missing}}", ref)


@pytest.mark.skipif(not HAS_MATH, reason="the math verifier is not installed")
@pytest.mark.parametrize(
    ("spec", "loc"),
    [
        (
            {"type": "check", "compare": {"kind": "math", "options": {"fallback": "judge"}}},
            ("root", "check", "compare", "options"),
        ),
        (
            {
                "type": "multi",
                "components": {"m": {"type": "verifier", "name": "math", "options": {"fallback": "judge"}}},
                "weights": {"m": 1.0},
            },
            ("root", "multi", "components", "m", "verifier", "options"),
        ),
    ],
)
def test_maths_judge_fallback_is_refused_not_ignored(spec: dict[str, Any], loc: tuple[Any, ...]) -> None:
    """The judge fallback runs in the service, after the worker checks; a declarative type is
    worker checks only, so `options.fallback` would be accepted and silently do nothing."""
    with pytest.raises(ValidationError) as refused:
        build_class("t", "1", spec, None, builtins=BUILTINS)
    (error,) = refused.value.errors()
    assert error["loc"] == loc and "options.fallback" in error["msg"] and "declarative" in error["msg"]
    # Without the fallback (or with it off) math is a comparator as before.
    plain = {
        "type": "check",
        "extract": {"kind": "none"},
        "compare": {"kind": "math", "options": {"fallback": None}},
    }
    assert build_class("t", "1", plain, None, builtins=BUILTINS)().score("So \\boxed{4}.", "4").score == 1.0
