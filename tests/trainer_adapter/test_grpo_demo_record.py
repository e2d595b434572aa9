"""The GRPO demo's figures in the README and docs/training.md are a recorded run's own
(docs/grpo_demo/record.json: each run's `summary.json`), printed by the same `headline` that
`referee train demo` prints, never figures typed by hand. No torch needed: the record is data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.trainer_adapter.grpo.metrics import headline

REPO = Path(__file__).resolve().parents[2]
RECORD = json.loads((REPO / "docs" / "grpo_demo" / "record.json").read_text())
# Whitespace folded: a figure may be wrapped across lines (and the README's over comment lines).
README = " ".join((REPO / "README.md").read_text().replace("\n#", "\n").split())
TRAINING = " ".join((REPO / "docs" / "training.md").read_text().split())


@pytest.mark.parametrize("run", ["verdicts", "random_rewards"])
def test_docs_quote_the_recorded_runs_headline(run: str) -> None:
    summary = RECORD["runs"][run]
    assert summary["steps"] == 200 and str(summary["steps"]) in summary["accuracy_by_step"]
    assert headline(summary) in TRAINING


def test_readme_quotes_the_verdict_runs_accuracy() -> None:
    accuracy = headline(RECORD["runs"]["verdicts"]).split(";")[0]
    assert accuracy in README


def test_the_record_shows_learning_from_verdicts_and_none_from_coin_flips() -> None:
    """What the docs claim of the record: the verified run rises, the control does not."""
    learned = RECORD["runs"]["verdicts"]
    control = RECORD["runs"]["random_rewards"]
    assert learned["initial_accuracy"] == control["initial_accuracy"]  # the same warmed-up model
    assert learned["final_accuracy"] >= learned["initial_accuracy"] + 0.5
    assert control["final_accuracy"] <= control["initial_accuracy"]


def test_headline_formats_a_summary() -> None:
    summary = {"accuracy_by_step": {"0": 0.2, "10": 0.5, "60": 0.875}, "reward_time_share": 0.25}
    assert headline(summary) == (
        "greedy verified accuracy 0.20 -> 0.50 after 10 steps -> 0.88 at step 60; "
        "reward wait 25% of step time"
    )
    assert headline({"accuracy_by_step": {"0": 0.2}, "reward_time_share": 0.5}).startswith(
        "greedy verified accuracy 0.20;"
    )


def test_the_docs_wall_time_is_the_records() -> None:
    learned = RECORD["runs"]["verdicts"]
    figures = (learned["total_seconds"], learned["warmup_seconds"], learned["grpo_seconds"])
    total, warmup, grpo = (f"{value:.0f} s" for value in figures)
    assert f"{total} (warm-up {warmup}, GRPO {grpo})" in TRAINING
