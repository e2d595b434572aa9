"""Policy rules, one behaviour per row (MATH_POLICY.md numbering in the ids)."""

from __future__ import annotations

import pytest

from referee.verifiers.math import MathVerifier

verifier = MathVerifier()

CASES: list[tuple[str, str, str, float]] = [
    # 1-2: which answer counts; no answer is 0
    (
        "r1-last-box",
        "3",
        "We get $\\boxed{5}$. Actually I dropped a sign; the correct value is $\\boxed{3}$.",
        1,
    ),
    ("r1-think-ignored", "6", "<think>maybe \\boxed{7}</think>\nSo there are $\\boxed{6}$.", 1),
    ("r1-answer-tag", "42", "<think>x</think><answer>42</answer>", 1),
    ("r1-statement", "16", "The answer is 16, not 15.", 1),
    ("r1-hashes", "2.5", "Half of 5.\n#### 2.5", 1),
    ("r1-sentence", "40", "He works 5 hours at $8, so he has $40.", 1),
    ("r1-sentence-last-value", "40", "He earns $40. He then spends $36, leaving $4.", 0),
    ("r1-display-math", "42", "**Final Answer**\n\n$$ 42 $$", 1),
    ("r2-only-in-think", "5", "<think>it is \\boxed{5}</think>", 0),
    ("r2-unclosed-think", "42", "<think>6*7 = 42, so", 0),
    ("r2-truncated", "13", "Step 2: Then 2x + 3 = 13, so", 0),
    ("r2-truncated-box", "5", "First \\boxed{5}, so the answer is \\boxed{1", 0),
    ("r2-empty-box", "0", "Final: \\boxed{}", 0),
    ("r2-refusal", "42", "I'm sorry, but I can't solve this problem.", 0),
    ("r2-wondering", "100", "Let me keep checking whether 99 or 100 is right.", 0),
    # 3: hedging
    ("r3-two-boxes", "5", "The answer is either $\\boxed{5}$ or $\\boxed{6}$.", 0),
    ("r3-or", "5", "The answer is 5 or 6.", 0),
    ("r3-labelled", "12", "Answer A: 24 (ordered).\nAnswer B: 12 (unordered).", 0),
    ("r3-solution-set-ok", "1, 2", "The solutions are $x=\\boxed{1}$ or $x=\\boxed{2}$.", 1),
    ("r3-partial-set", "-1, 1, 2", "The roots are $\\boxed{-1}$ and $\\boxed{2}$.", 0),
    ("r3-same-box-twice", "5", "\\boxed{5} and once more \\boxed{5.0}", 1),
    # 4: value equality
    ("r4-unsimplified", "\\frac{1}{2}", "\\boxed{\\frac{2}{4}}", 1),
    ("r4-complex", "-7 + 24i", "\\boxed{(3+4i)^2}", 1),
    ("r4-euler", "\\frac{1}{2}+\\frac{\\sqrt{3}}{2}i", "\\boxed{e^{i\\pi/3}}", 1),
    ("r4-factored", "x^2 + 5x + 6", "\\boxed{(x+2)(x+3)}", 1),
    ("r4-factored-wrong", "x^2 + 5x + 6", "\\boxed{(x+1)(x+6)}", 0),
    ("r4-pi", "2\\pi - 4", "\\boxed{2(\\pi-2)}", 1),
    ("r4-radicals", "\\sqrt{2}+\\sqrt{3}", "\\boxed{\\sqrt{5+2\\sqrt{6}}}", 1),
    ("r4-trig", "\\sin 2x", "\\boxed{2\\sin x\\cos x}", 1),
    ("r4-log", "\\log_2 5", "\\boxed{\\frac{\\ln 5}{\\ln 2}}", 1),
    ("r4-factorial", "3628800", "\\boxed{10!}", 1),
    ("r4-tower", "2^{65536}", "\\boxed{2^{2^{2^{2^2}}}}", 1),
    # 5: numerics
    ("r5-truncated", "\\frac{1}{3}", "\\boxed{0.333333}", 0),
    ("r5-rounded-pi", "\\pi", "\\boxed{3.1416}", 0),
    ("r5-exact-decimal", "\\frac{1}{8}", "\\boxed{0.125}", 1),
    ("r5-repeating", "\\frac{13}{6}", "\\boxed{2.1\\overline{6}}", 1),
    ("r5-rounded-gold-fraction", "0.33", "\\boxed{\\frac{1}{3}}", 1),
    ("r5-rounded-gold-more-digits", "3.14", "\\boxed{3.1416}", 1),
    ("r5-rounded-gold-half-up", "0.33", "\\boxed{0.335}", 0),
    ("r5-rounded-gold-fewer-digits", "0.33", "\\boxed{0.3}", 0),
    ("r5-rounded-gold-same-digits", "2.45", "\\boxed{2.46}", 0),
    ("r5-rounded-gold-trailing-zero", "0.1", "\\boxed{0.10}", 1),
    ("r5-tiny-distinct", "\\frac{1}{2^{99}}", "\\boxed{\\frac{1}{2^{98}}}", 0),
    ("r5-tiny-1e7", "0.0000001", "\\boxed{0.0000002}", 0),
    ("r5-tiny-equal", "0.0000001", "\\boxed{10^{-7}}", 1),
    ("r5-tiny-not-rounded", "0.0000001", "\\boxed{1.4 \\times 10^{-7}}", 0),
    ("r5-e-notation", "6.02 \\times 10^{23}", "\\boxed{6.02e23}", 1),
    # 6: percent
    ("r6-percent-plain", "12\\%", "\\boxed{12}", 1),
    ("r6-percent-decimal", "12\\%", "\\boxed{0.12}", 1),
    ("r6-percent-wrong", "12\\%", "\\boxed{1.2\\%}", 0),
    ("r6-decimal-gold", "0.4", "\\boxed{40}", 0),
    ("r6-decimal-gold-percent", "0.4", "\\boxed{40\\%}", 1),
    ("r6-mixed-number", "33\\frac{1}{3}\\%", "\\boxed{33.\\overline{3}\\%}", 1),
    # 7-8: ignored decorations
    ("r7-degrees", "135^\\circ", "\\boxed{135°}", 1),
    ("r7-degrees-word", "45", "The angle is 45 degrees.", 1),
    ("r8-thousands", "10,\\!000", "\\boxed{10{,}000}", 1),
    ("r8-thin-space", "1000000", "\\boxed{1\\,000\\,000}", 1),
    ("r8-thousands-wrong", "1200", "\\boxed{12,000}", 0),
    ("r8-units", "250", "\\boxed{250\\text{ cm}^2}", 1),
    ("r8-unit-letter", "12", "\\boxed{12 \\text{ m}}", 1),
    ("r8-currency", "2400", "Thus the farmer earns **$2,400** in total.", 1),
    ("r8-mathbf", "12", "\\boxed{\\mathbf{12}}", 1),
    ("r8-mathrm-e", "e^2", "\\boxed{\\mathrm{e}^{2}}", 1),
    ("r8-leading-zero", "50", "\\boxed{\\mathrm{05}}", 0),
    # 9: structures
    ("r9-set-order", "\\{1,2\\}", "\\boxed{\\{2,1\\}}", 1),
    ("r9-set-list", "\\{1,2\\}", "Answer: $1, 2$", 1),
    ("r9-set-union", "\\{2,3,5\\}", "\\boxed{\\{2,3\\}\\cup\\{5\\}}", 1),
    ("r9-pm", "1 \\pm \\sqrt{2}", "Answer: $1+\\sqrt{2}, 1-\\sqrt{2}$", 1),
    ("r9-empty", "\\emptyset", "\\boxed{\\varnothing}", 1),
    ("r9-tuple-order", "(0, \\frac{3}{2})", "\\boxed{(\\frac{3}{2}, 0)}", 0),
    ("r9-column-vector", "\\begin{pmatrix} 2 \\\\ -1 \\end{pmatrix}", "\\boxed{(2, -1)}", 1),
    (
        "r9-matrix",
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "$\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}$.",
        1,
    ),
    ("r9-interval-closed", "(1,2]", "\\boxed{[1,2]}", 0),
    ("r9-interval-union", "(-\\infty, 1] \\cup [4, \\infty)", "\\boxed{x \\le 1 \\text{ or } x \\ge 4}", 1),
    ("r9-inequality-interval", "-2 \\le x \\le 5", "\\boxed{[-2, 5]}", 1),
    ("r9-inequality-open", "[3, \\infty)", "\\boxed{x > 3}", 0),
    ("r9-reals", "(-\\infty, \\infty)", "\\boxed{\\mathbb{R}}", 1),
    ("r9-assignment", "5", "\\boxed{x = 5}", 1),
    ("r9-assignments-tuple", "(2, 3, -1)", "\\boxed{x=2, y=3, z=-1}", 1),
    ("r9-point-assignment", "(1, -1)", "\\boxed{(x,y)=(1,-1)}", 1),
    ("r9-equation-scaled", "y = -\\frac{1}{2}x + 4", "\\boxed{x + 2y = 8}", 1),
    ("r9-equation-wrong", "y = -\\frac{1}{2}x + 4", "\\boxed{x + 2y = 4}", 0),
    ("r9-time", "9{:}30", "\\boxed{10:30}", 0),
    # 10: multiple choice and text
    ("r10-choice-parens", "(C)", "\\boxed{C}", 1),
    ("r10-choice-textbf", "\\textbf{(D)}", "\\boxed{\\textbf{(D)}}", 1),
    ("r10-choice-wrong", "B", "Answer: (D)", 0),
    ("r10-choice-hedge", "B", "The answer is (B) or (C).", 0),
    ("r10-text-case", "\\text{Yes}", "\\boxed{\\text{yes}}", 1),
    ("r10-text-wrong", "\\text{even}", "Answer: $\\text{odd}$", 0),
    ("r10-infinity-word", "\\infty", "Answer: infinity", 1),
    ("r10-unicode-minus", "-5", "Answer: −5", 1),
    # 11: pathological inputs have mathematical verdicts
    ("r11-nested-radical", "2", "\\boxed{" + "\\sqrt{2+" * 30 + "\\sqrt{2}" + "}" * 30 + "}", 0),
    ("r11-huge-difference", "0", "Answer: $(10^{10^{10}})! - (10^{10^{10}})!$", 1),
    ("r11-huge-compare", "10^{10^{10}}", "\\boxed{10^{10^{9}}}", 0),
    ("r11-trig-identity", "1", "\\boxed{\\sin^2(10^{100}) + \\cos^2(10^{100})}", 1),
    ("r11-factorial-ratio", "1", "\\boxed{\\frac{100000!}{100000!}}", 1),
    ("r11-redundant-parens", "3", "\\boxed{" + "(" * 400 + "3" + ")" * 400 + "}", 1),
]


@pytest.mark.parametrize(("gold", "response", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_math_policy(gold: str, response: str, expected: float) -> None:
    check = verifier.score(response, gold)
    assert check.score == expected, (check.reason, check.details)
    if expected == 0.0:
        assert check.reason


def test_math_details_name_the_rule() -> None:
    check = verifier.score("so the answer is $\\boxed{0.5}$", "\\frac{1}{2}")
    assert check.details["rule"] == "exact"
    assert check.details["answer"] == "0.5"
    assert check.details["extraction"] == "boxed"
    assert check.details["normalized_gold"] == "(1/2)"
    assert check.details["normalized_answer"] == "1/2"


def test_math_reference_object_and_options() -> None:
    assert verifier.score("\\boxed{\\frac13}", {"answer": "0.33"}).score == 1.0
    assert verifier.score("\\boxed{\\frac13}", {"answer": "0.33", "rounded_decimal_gold": False}).score == 0.0
    assert verifier.score("\\boxed{\\frac13}", "0.33", {"rounded_decimal_gold": False}).score == 0.0
    with pytest.raises(ValueError):
        verifier.validate_options({"nonsense": 1})
    with pytest.raises(ValueError):
        verifier.validate_reference({"answer": "1", "extra": 2})


def test_math_example_reproduces() -> None:
    example = MathVerifier.example
    check = verifier.score(example["response"], example["reference"], example["options"])
    assert check.score == example["expected_score"]
