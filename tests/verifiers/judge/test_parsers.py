"""The strict parsers against a recorded set of realistic judge replies (tests/data/judges).

Each row says the format it is parsed with, the reply, its finish_reason and the expected
outcome: a verdict and its score, or a parse failure whose message contains `why`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.verifiers.judge import TEMPLATES
from referee.verifiers.judge.parsers import UnparseableReply, normalise_choice, parse_choice, parse_score

REPLIES = Path(__file__).resolve().parents[2] / "data" / "judges" / "replies.jsonl"
ROWS = [json.loads(line) for line in REPLIES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parse(row: dict[str, Any]) -> Any:
    if row["format"] == "score":
        return parse_score(row["text"], row["key"], row["low"], row["high"], row["finish_reason"])
    return parse_choice(row["text"], row["key"], row["choices"], row["finish_reason"])


def test_the_recorded_set_covers_the_cases() -> None:
    assert len(ROWS) >= 40
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    assert {r["format"] for r in ROWS} == {"verdict", "score", "label", "pairwise"}
    # The pairwise rows are parsed as judge_pairwise parses its replies.
    pairwise = TEMPLATES["pairwise"].output
    assert pairwise is not None
    for row in (r for r in ROWS if r["format"] == "pairwise"):
        assert (row["key"], row["choices"]) == (pairwise.key, dict(pairwise.choices or {})), row["id"]
    failures = [r for r in ROWS if not r["expect"]["ok"]]
    assert len(failures) >= 15 and any(r["finish_reason"] == "length" for r in failures)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_recorded_reply(row: dict[str, Any]) -> None:
    expect = row["expect"]
    if expect["ok"]:
        parsed = _parse(row)
        assert parsed.value == expect["value"]
        assert parsed.score == pytest.approx(expect["score"])
    else:
        with pytest.raises(UnparseableReply, match=expect["why"]):
            _parse(row)


def test_a_cut_reply_keeps_a_verdict_only_when_its_line_ended() -> None:
    choices = {"EQUIVALENT": 1.0, "NOT_EQUIVALENT": 0.0}
    assert parse_choice("VERDICT: EQUIVALENT", "VERDICT", choices, "stop").score == 1.0
    with pytest.raises(UnparseableReply, match="cut off"):
        parse_choice("VERDICT: EQUIVALENT", "VERDICT", choices, "length")
    assert parse_choice("VERDICT: EQUIVALENT\nbecause", "VERDICT", choices, "length").score == 1.0


def test_scores_scale_to_the_declared_range() -> None:
    assert parse_score("SCORE: 3", "SCORE", 1, 5).score == pytest.approx(0.5)
    assert parse_score("SCORE: 5/5", "SCORE", 1, 5).score == 1.0
    with pytest.raises(UnparseableReply, match="outside"):
        parse_score("SCORE: 0", "SCORE", 1, 5)
    with pytest.raises(UnparseableReply, match="not a number"):
        parse_score("SCORE: nan", "SCORE", 0, 10)


def test_labels_compare_without_case_spaces_or_hyphens() -> None:
    assert normalise_choice("Partially-Correct ") == normalise_choice("partially_correct")
    assert parse_choice("LABEL: A", "LABEL", {"a": 1.0, "b": 0.0}).value == "a"
