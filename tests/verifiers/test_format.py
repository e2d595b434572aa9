"""format.think_answer and format.tag_count on compact, multi-line and broken templates."""

from __future__ import annotations

import pytest

from referee.verifiers.format import TagCount, ThinkAnswer

MULTILINE = "<think>\nLet me see.\n2 + 2 = 4\n</think>\n<answer>\n4\n</answer>"
COMPACT = "<think>2 + 2 = 4</think><answer>4</answer>"


@pytest.mark.parametrize(
    ("response", "score"),
    [
        (MULTILINE, 1.0),
        (COMPACT, 1.0),
        ("  \n" + COMPACT + "\n\n", 1.0),  # surrounding whitespace
        ("<think></think><answer>4</answer>", 1.0),  # empty reasoning is allowed
        ("<think>a</think>\n\n<answer>4</answer>", 1.0),
        ("<answer>4</answer>", 0.0),  # no think
        ("<think>a</think>", 0.0),  # no answer
        ("<think>a</think><answer> \n </answer>", 0.0),  # empty answer
        ("<think>a<answer>4</answer>", 0.0),  # think never closed
        ("<think>a</think><answer>4", 0.0),  # answer never closed
        ("<think>a</think><answer>4</answer>trailing junk", 0.0),
        ("Sure! " + COMPACT, 0.0),  # text before
        ("<think>a</think>So:<answer>4</answer>", 0.0),  # prose between
        ("<think>a</think><answer>3</answer><answer>4</answer>", 0.0),  # repeated answer
        ("<think>a</think><think>b</think><answer>4</answer>", 0.0),  # repeated think
        ("<think><think>a</think></think><answer>4</answer>", 0.0),  # nested think
        ("<think>a</think><answer><answer>4</answer></answer>", 0.0),  # nested answer
        ("<answer>4</answer><think>a</think>", 0.0),  # order
        ("<THINK>a</THINK><ANSWER>4</ANSWER>", 0.0),  # tags are case-sensitive
        ("<think>a</think><answer>4</answer>" + "x" * 2_000_000, 0.0),
        ("", 0.0),
    ],
)
def test_think_answer(response: str, score: float) -> None:
    check = ThinkAnswer().score(response, None)
    assert check.score == score
    assert check.reason


def test_think_answer_non_string() -> None:
    assert ThinkAnswer().score(None, None).score == 0.0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("response", "score"),
    [
        (MULTILINE, 1.0),
        (COMPACT, 1.0),
        (COMPACT + " trailing junk", 1.0),  # junk is format.think_answer's business
        ("<think>a</think>", 0.5),
        ("<answer>4</answer>", 0.5),
        ("<think>a<answer>4</answer>", 0.75),  # </think> missing
        ("<think>a</think><answer>3</answer><answer>4</answer>", 0.5),  # answer tags twice
        ("<think><think>a</think></think><answer>4</answer>", 0.5),  # think tags twice
        ("<answer>4</answer><think>a</think>", 0.5),  # swapped blocks: one pair in order
        ("</think><think><answer>4</answer>", 0.75),  # think pair reversed: 3 of 4 in order
        ("</answer><answer></think><think>", 0.25),  # fully reversed
        ("no tags at all", 0.0),
        ("<Think>a</Think>", 0.0),
    ],
)
def test_tag_count(response: str, score: float) -> None:
    assert TagCount().score(response, None).score == score


def test_tag_count_reports_which_tags_counted() -> None:
    check = TagCount().score("<think>a<answer>4</answer>", None)
    assert check.details["tags"] == ["<think>", "<answer>", "</answer>"]
