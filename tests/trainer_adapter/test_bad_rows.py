"""One bad sample never fails a batch, and references arrive as trainers store them (numbers,
numpy values, JSON text). Through every adapter, against the real service."""

from __future__ import annotations

import json

import httpx
import pytest

# numpy is what trainers hand over (not a dependency of Referee): the `train` extra brings it.
np = pytest.importorskip("numpy", reason="needs the `train` extra: pip install -e '.[train]'")

from referee.trainer_adapter import verl  # noqa: E402
from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward  # noqa: E402

COUNTDOWN = {"numbers": [1, 2, 3], "target": 6}


def test_the_groups_api_reports_invalid_groups_in_place_when_asked(referee_url: str) -> None:
    groups = [
        {"verifier": "exact", "reference": "4", "responses": ["4", "5"]},
        {"verifier": "multiple_choice", "reference": {"no": "answer"}, "responses": ["A"]},
        {"verifier": "no_such_verifier", "reference": "x", "responses": ["x"]},
    ]
    strict = httpx.post(f"{referee_url}/v1/groups", json={"groups": groups})
    assert strict.status_code in (404, 422)  # the default stays strict for direct API users
    r = httpx.post(f"{referee_url}/v1/groups", json={"groups": groups, "on_invalid": "error_verdict"})
    assert r.status_code == 200, r.text
    good, bad_reference, unknown = r.json()["groups"]
    assert good["rewards"] == [1.0, 0.0]
    assert bad_reference["rewards"] == [None] and bad_reference["verdicts"][0]["status"] == "error"
    assert bad_reference["verdicts"][0]["reason"].startswith("invalid input: ")
    assert "reference" in json.dumps(bad_reference["verdicts"][0]["details"])
    assert (
        unknown["verdicts"][0]["status"] == "error" and "no_such_verifier" in unknown["verdicts"][0]["reason"]
    )


def test_numbers_and_json_text_are_references(referee_url: str) -> None:
    groups = [
        {"verifier": "math", "reference": 72, "responses": ["\\boxed{72}", "\\boxed{71}"]},
        {"verifier": "exact", "reference": 0.5, "responses": ["0.5"]},
        {
            "verifier": "logic.countdown",
            "reference": json.dumps(COUNTDOWN),
            "responses": ["<answer>1+2+3</answer>"],
        },
    ]
    r = httpx.post(f"{referee_url}/v1/groups", json={"groups": groups})
    assert r.status_code == 200, r.text
    assert [g["rewards"] for g in r.json()["groups"]] == [[1.0, 0.0], [1.0], [1.0]]


def test_verl_batch_with_bad_rows_and_numpy_references(referee_url: str) -> None:
    sources = ["openai/gsm8k", "openai/gsm8k", "openai/gsm8k", "no_such_source", "logic.countdown"]
    solutions = ["#### 72", "#### 72", "#### 3", "anything", "<answer>1+2+3</answer>"]
    truths = [np.int64(72), None, np.array([3])[0], "x", json.dumps(COUNTDOWN)]
    scores = verl.compute_score_batch(sources, solutions, truths, None, url=referee_url, return_dict=True)
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0, 0.0, 1.0]  # type: ignore[index]
    # The null label and the unknown data source got no verdict, reported, not a crash.
    assert [s["referee_error"] for s in scores] == [0.0, 1.0, 0.0, 1.0, 0.0]  # type: ignore[index]


def test_trl_batch_with_bad_rows(referee_url: str) -> None:
    reward = RefereeReward(referee_url, verifier="math", reference_column="answer")
    prompts = ["p1", "p1", "p2", "p3"]
    completions = ["\\boxed{4}", "\\boxed{5}", "\\boxed{1}", "\\boxed{2}"]
    answers = [4, 4, None, {"not": "a math answer"}]
    assert reward(prompts=prompts, completions=completions, answer=answers) == [1.0, 0.0, None, None]


@pytest.mark.parametrize("column", [[np.float64(0.5)] * 2, np.array([0.5, 0.5])])
async def test_async_trl_numpy_columns(referee_url: str, column: object) -> None:
    reward = AsyncRefereeReward(referee_url, verifier="numeric", reference_column="answer")
    assert await reward(prompts=["p", "p"], completions=["0.5", "0.25"], answer=column) == [1.0, 0.0]
    await reward.aclose()


def test_components_reach_verl_and_openrlhf_logs(referee_url: str) -> None:
    components = [{"name": "format.think_answer", "weight": 0.5}, {"name": "math", "weight": 1.0}]
    good, unformatted = "<think>ok</think><answer>4</answer>", "<answer>4</answer>"
    scores = verl.compute_score_batch(
        ["d", "d"],
        [good, unformatted],
        ["4", "4"],
        [{"verifier": components}] * 2,
        url=referee_url,
        return_dict=True,
    )
    # One group (same reference, no prompt id) whose rewards differ: not zero-variance.
    parts = {"referee_error": 0.0, "referee/math": 1.0, "referee/zero_variance": 0.0}
    assert scores == [
        {"score": 1.5, "referee/format.think_answer": 1.0, **parts},
        {"score": 1.0, "referee/format.think_answer": 0.0, **parts},
    ]
    label = json.dumps({"verifier": components, "reference": "4"})
    r = httpx.post(
        f"{referee_url}/v1/openrlhf/reward",
        json={"query": [good, unformatted], "prompts": ["", ""], "labels": [label, label]},
    )
    logs = r.json()["extra_logs"]
    assert logs["referee/format.think_answer"] == [1.0, 0.0] and logs["referee/math"] == [1.0, 1.0]
    assert r.json()["rewards"] == [1.5, 1.0]


def test_nan_and_infinite_references_are_masked_samples_not_a_failed_batch(referee_url: str) -> None:
    """A NaN or infinite reference (a missing pandas cell, a numpy label) cannot travel as JSON:
    the service would refuse the whole request. That sample alone gets no verdict, saying why;
    the rest of the batch is scored, through every adapter (a batch of only such rows too)."""
    sources = ["openai/gsm8k"] * 3
    solutions = ["#### 72", "#### 72", "#### 3"]
    truths = [np.int64(72), np.float64("nan"), float("inf")]
    scores = verl.compute_score_batch(sources, solutions, truths, None, url=referee_url, return_dict=True)
    assert [s["referee_error"] for s in scores] == [0.0, 1.0, 1.0]  # type: ignore[index]
    assert scores[0]["score"] == 1.0  # type: ignore[index]
    only_bad = verl.compute_score_batch(sources[:1], solutions[:1], [float("nan")], None, url=referee_url)
    assert only_bad == [0.0]
    reward = RefereeReward(url=referee_url, verifier="math")
    try:
        got = reward(
            ["q"] * 3, ["\\boxed{72}", "\\boxed{72}", "\\boxed{1}"], reference=[72, np.nan, float("-inf")]
        )
        assert got == [1.0, None, None]
        assert reward(["q"], ["\\boxed{1}"], reference=[np.nan]) == [None]
    finally:
        reward.close()
