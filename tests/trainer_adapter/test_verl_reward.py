"""verl compute_score (per sample and batched)."""

from __future__ import annotations

import pytest

from referee.client import Client
from referee.trainer_adapter import connections, verl


def test_verl_compute_score_per_sample(referee_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_URL", referee_url)
    # --- README: verl ---
    from referee.trainer_adapter.verl import compute_score

    # data_source -> verifier: extra_info["verifier"], else the `verifier` kwarg, else
    # verl.DATA_SOURCES (openai/gsm8k -> math, ...), else the data source itself.
    score = compute_score("logic.x", "42", "42", extra_info={"verifier": "exact"})
    # --- end README ---
    assert score == 1.0
    assert compute_score("any", " 42 ", "42", verifier="exact", options={"strip": False}) == 0.0
    assert compute_score("any", "41", "42", extra_info={"verifier": "exact"}, return_dict=True) == {
        "score": 0.0,
        "referee_error": 0.0,
    }
    assert compute_score("numeric", "0.5", 0.5, url=referee_url) == 1.0  # data source names the verifier


def test_verl_data_source_mapping() -> None:
    assert verl.resolve_verifier("openai/gsm8k", None, None, None) == ("math", {})
    assert verl.resolve_verifier("openai/gsm8k", {"verifier": "numeric"}, "exact", None) == ("numeric", {})
    assert verl.resolve_verifier("openai/gsm8k", {}, "exact", {"strip": True}) == ("exact", {"strip": True})
    assert verl.resolve_verifier("logic.n_queens", None, None, None) == ("logic.n_queens", {})


def test_verl_batched_form_makes_one_request(referee_url: str) -> None:
    real = Client(referee_url)
    calls: list[int] = []

    class Counting:
        def score_groups(self, groups, advantage=None, on_invalid="reject"):  # type: ignore[no-untyped-def]
            calls.append(len(groups))
            return real.score_groups(groups, advantage, on_invalid)

    previous = connections.use_client(referee_url, None, Counting())
    try:
        scores = verl.compute_score_batch(
            data_sources=["exact", "exact", "exact", "numeric"],
            solution_strs=["a", "b", "a", "2.0"],
            ground_truths=["a", "a", "a", 2],
            extra_infos=[None, None, None, None],
            url=referee_url,
        )
    finally:
        connections.use_client(referee_url, None, previous)
    assert scores == [1.0, 0.0, 1.0, 1.0]
    assert calls == [2]  # one request; the three "a" answers share a group


def test_verl_error_verdict_scores_error_score(monkeypatch: pytest.MonkeyPatch, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    fake_scorer.error_on = "boom"

    class SyncFake:
        def score_groups(self, groups, advantage=None, on_invalid="reject"):  # type: ignore[no-untyped-def]
            return asyncio.run(fake_scorer.score_groups(groups, advantage))

    previous = connections.use_client("http://fake", None, SyncFake())
    try:
        out = verl.compute_score_batch(
            ["exact"] * 2, ["1", "boom"], ["1", "1"], url="http://fake", error_score=-1.0, return_dict=True
        )
    finally:
        connections.use_client("http://fake", None, previous)
    # One group: its only verdict is 1.0, so it has no reward spread (the error is left out).
    assert out == [
        {"score": 1.0, "referee_error": 0.0, "referee/zero_variance": 1.0},
        {"score": -1.0, "referee_error": 1.0, "referee/zero_variance": 1.0},
    ]
