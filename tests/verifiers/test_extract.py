from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.verifiers import extract


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
