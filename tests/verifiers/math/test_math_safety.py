"""Hostile answers: nothing runs, every verdict is 0 (or the mathematically right one) and fast."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from referee.verifiers.math import MathVerifier
from referee.verifiers.math._lexer import LexError, tokenize
from tests.timing import within

verifier = MathVerifier()
FAST_S = within(0.5)  # far below the service's 2 s kill, on a loaded 2-core machine


def _injections(marker: Path) -> list[str]:
    cmd = f"__import__('os').system('touch {marker}')"
    return [
        cmd,
        f"\\boxed{{{cmd}}}",
        f"The answer is ${cmd}$.",
        f"Answer: (lambda: {cmd})()",
        f"\\boxed{{(lambda: {cmd})()}}",
        "\\boxed{9**9**9}",
        "Answer: 9**9**9**9",
        "\\boxed{().__class__.__mro__}",
        "Answer: ().__class__.__mro__[1].__subclasses__()",
        f"#### {cmd}",
        f"<think>x</think><answer>{cmd}</answer>",
    ]


@pytest.mark.parametrize("gold", ["0", "1", "x", "\\{1,2\\}", "B", "\\text{os}"])
def test_math_injections_do_nothing_and_score_zero(tmp_path: Path, gold: str) -> None:
    marker = tmp_path / "pwned"
    for response in _injections(marker):
        start = time.perf_counter()
        check = verifier.score(response, gold)
        assert time.perf_counter() - start < FAST_S
        assert check.score == 0.0, response
        assert check.reason
    assert not marker.exists()


def test_math_tokenizer_rejects_python_syntax() -> None:
    for text in ("__import__('os')", "a.b", "x = 'y'", 'f"{x}"', "x @ y", "x # y", "`ls`"):
        with pytest.raises(LexError):
            tokenize(text)


HOSTILE = [
    "\\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}",
    "\\boxed{" + "(" * 5000 + "1" + ")" * 5000 + "}",
    "\\boxed{" + "\\sqrt{" * 3000 + "2" + "}" * 3000 + "}",
    "\\boxed{" + "-" * 19000 + "1}",
    "\\boxed{" + "2^" * 5000 + "2}",
    "\\boxed{" + "1" * 19000 + "}",
    "\\boxed{" + "x+" * 9000 + "x}",
    "\\boxed{" + "\\frac{1}{" * 1500 + "2" + "}" * 1500 + "}",
    "\\boxed{" + "1/" * 6000 + "1}",
    "\\boxed{" + "5" + "!" * 5000 + "}",
    "\\boxed{" + "\\left(" * 3000 + "1" + "\\right)" * 3000 + "}",
    "\\boxed{10^{10^{10^{10}}}}",
    "\\boxed{(10^{10^{10}})!}",
    "\\boxed{\\sin(10^{10^{10}})}",
    "\\boxed{e^{e^{e^{e^{e^{e}}}}}}",
    "\\boxed{\\binom{10^{100}}{10^{50}}}",
    "\\boxed{(1.0000001)^{10^{30}}}",
    "\\boxed{\\sqrt[10^{100}]{2}}",
    "\\boxed{\\frac{1}{0}} \\boxed{0^{-1}} \\boxed{\\ln 0} \\boxed{\\tan(\\pi/2)}",
    "\\boxed{\\{" + ",".join(str(i) for i in range(3000)) + "\\}}",
    "\\boxed{\\begin{pmatrix}" + " \\\\ ".join(["1 & 2"] * 2000) + "\\end{pmatrix}}",
    "a" * 900_000,
    "$" * 100_000 + "\\boxed{1}",
    "\\boxed{" * 100_000,
    "\\text{" * 5000 + "1" + "}" * 5000,
    "Answer: " + "1," * 9000 + "1",
]


@pytest.mark.parametrize("gold", ["1", "0", "x", "1, 2, 3", "(1,2)"])
def test_math_hostile_inputs_are_bounded(gold: str) -> None:
    for response in HOSTILE:
        start = time.perf_counter()
        check = verifier.score(response, gold)
        elapsed = time.perf_counter() - start
        assert check.score in (0.0, 1.0)
        assert elapsed < FAST_S * 2, (elapsed, response[:60])


def test_math_too_long_response_is_zero_not_slow() -> None:
    start = time.perf_counter()
    check = verifier.score("x" * 2_000_000 + " \\boxed{1}", "1")
    assert check.score == 0.0
    assert "too long" in (check.reason or "")
    assert time.perf_counter() - start < FAST_S
