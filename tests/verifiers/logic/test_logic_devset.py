"""The whole labelled dev set, in process: every verdict must match its label."""

from __future__ import annotations

import time
from typing import Any

import pytest
from logic_helpers import BY_NAME, judge, load_logic_rows
from tests.timing import within

from referee.verifiers.format import ThinkAnswer
from referee.verifiers.logic import VERIFIERS

POLICY, ROWS = load_logic_rows()


def test_one_verifier_per_task() -> None:
    tasks = {row["task"] for row in ROWS}
    assert {f"logic.{t}" for t in tasks} <= set(BY_NAME)
    assert len(VERIFIERS) == len(BY_NAME) == 13
    assert "_policy" in POLICY


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_expected_score(row: dict[str, Any]) -> None:
    start = time.perf_counter()
    check = judge(f"logic.{row['task']}", row["response"], row["answer_spec"])
    elapsed = time.perf_counter() - start
    assert check.score == row["expected_score"], check.reason
    assert check.reason
    assert elapsed < within(0.1)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_format_ok(row: dict[str, Any]) -> None:
    check = ThinkAnswer().score(row["response"], None)
    assert check.score == (1.0 if row["format_ok"] else 0.0), check.reason


def test_agreement_is_total() -> None:
    """One number to read in CI logs besides the per-row results."""
    agree = sum(
        judge(f"logic.{r['task']}", r["response"], r["answer_spec"]).score == r["expected_score"]
        for r in ROWS
    )
    assert agree == len(ROWS) == 206


@pytest.mark.parametrize("cls", VERIFIERS, ids=[c.name for c in VERIFIERS])
def test_example_reproduces(cls: Any) -> None:
    example = cls.example
    check = judge(cls.name, example["response"], example["reference"], example.get("options"))
    assert check.score == example["expected_score"], check.reason
    schema = cls.reference_adapter().json_schema()
    assert schema.get("type") == "object" and schema.get("properties")
