from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.verifiers import extract
from referee.verifiers.math import MathVerifier


def test_final_part() -> None:
    assert extract.final_part("<think>a</think> b") == " b"
    assert extract.final_part("<think>a</think>x</think>y") == "y"
    assert extract.final_part("no think") == "no think"
    assert extract.final_part("<think>cut off") is None


def test_boxed_balanced_and_last() -> None:
    text = r"first \boxed{1} then \boxed{\frac{1}{2}} and \fbox{x^{2}}"
    assert extract.all_boxed(text) == ["1", r"\frac{1}{2}", "x^{2}"]
    assert extract.last_boxed(r"\boxed{\{1,2\}}") == r"\{1,2\}"
    assert extract.last_boxed(r"\boxed 5$") == "5"
    assert extract.last_boxed(r"\boxed{unclosed") is None
    assert extract.last_boxed("nothing") is None


def test_answer_blocks_after_think_only() -> None:
    text = "<think><answer>1</answer></think><answer>2</answer> <answer>3</answer>"
    assert extract.answer_blocks(text) == ["2", "3"]
    assert extract.last_answer_block(text) == "3"
    assert extract.last_answer_block("<think><answer>1</answer>") is None
    assert extract.last_answer_block("<answer>unclosed") is None


def test_answer_statements() -> None:
    text = "Work.\nAnswer: 12\nso the answer is 13.\n#### 14"
    assert [a for _, a in extract.answer_statements(text)] == ["12", "13", "14"]
    assert extract.last_answer_statement("**Final Answer:** 7") == "7"


def test_fenced_blocks() -> None:
    text = "```python\nprint(1)\n```\ntext\n```cpp\nint main(){}\n```\n```\nplain\n"
    assert extract.fenced_blocks(text) == [
        ("python", "print(1)\n"),
        ("cpp", "int main(){}\n"),
        ("", "plain\n"),
    ]
    assert extract.last_fenced_block(text, ("python", "py")) == "print(1)\n"


@given(st.text(max_size=300))
def test_extractors_never_raise(text: str) -> None:
    extract.final_part(text)
    extract.all_boxed(text)
    extract.answer_blocks(text)
    extract.answer_statements(text)
    extract.fenced_blocks(text)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        # GSM8K style, as verl's gsm8k scorer reads it: "#### X" inline at the end of a sentence.
        ("Natalia sold 48/2 = 24 clips in May, 48+24 = 72 in all. #### 72", "72"),
        ("So she earns 72 dollars. #### 72", "72"),
        ("#### 72", "72"),
        ("It is 70. #### 71\nNo wait, one more. #### 72", "72"),  # the last one wins
        ("#### Step 1\nwe get 72", "Step 1"),  # a markdown heading is still a statement...
    ],
)
def test_gsm8k_hashes_inline(response: str, answer: str) -> None:
    assert extract.last_answer_statement(response) == answer


def test_gsm8k_hashes_reach_the_math_verdict() -> None:
    verifier = MathVerifier()
    assert verifier.score("48+24 = 72 clips in all. #### 72", "72").score == 1.0
    assert verifier.score("48+24 = 72 clips in all. #### 71", "72").score == 0.0
    # ... and a heading followed by the real final statement does not hide it.
    assert verifier.score("#### Step 1\n48+24 = 72\n#### 72", "72").score == 1.0
