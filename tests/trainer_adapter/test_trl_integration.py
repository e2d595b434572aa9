"""A real `trl.GRPOTrainer` on a tiny GPT-2 (from a config, character tokenizer, no downloads)
trained for a few CPU steps with rewards from a real Referee server on loopback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="needs the `train` extra: pip install -e '.[train]'")
pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")

pytestmark = pytest.mark.slow


def test_grpo_trainer_trains_on_referee_rewards(
    referee_url: str, tiny_hf_model_dir: Path, tmp_path: Path
) -> None:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward

    # A GPT2LMHeadModel from a config with a character tokenizer, saved to `tiny_hf_model_dir`
    # (conftest): with beta > 0 TRL loads the reference model from the model's path.
    model_dir = tiny_hf_model_dir
    pairs = [(a, b) for a in range(10, 20) for b in range(10, 14)]
    dataset = Dataset.from_dict(
        {"prompt": [f"{a}+{b}=" for a, b in pairs], "answer": [str(a + b)[::-1] for a, b in pairs]}
    )

    # --- README: TRL ---
    sync_reward = RefereeReward(referee_url, verifier="exact", reference_column="answer", name="referee_sync")
    async_reward = AsyncRefereeReward(
        referee_url, verifier="exact", reference_column="answer", name="referee_async"
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        per_device_train_batch_size=16,  # counts completions: 4 prompts x 4 generations
        max_completion_length=4,
        max_steps=3,
        learning_rate=1e-3,
        beta=0.04,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=False,
        use_cpu=True,
        disable_dropout=True,
        gradient_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=str(model_dir),
        reward_funcs=[sync_reward, async_reward],
        args=args,
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
    )
    # --- end README ---
    calls = {"sync": 0, "async": 0}
    sync_client, async_init = sync_reward._get_client, async_reward._get_client

    def counting_sync():  # type: ignore[no-untyped-def]
        calls["sync"] += 1
        return sync_client()

    def counting_async():  # type: ignore[no-untyped-def]
        calls["async"] += 1
        return async_init()

    sync_reward._get_client = counting_sync  # type: ignore[method-assign]
    async_reward._get_client = counting_async  # type: ignore[method-assign]
    trainer.train()

    logs = [entry for entry in trainer.state.log_history if "rewards/referee_sync/mean" in entry]
    assert len(logs) == 3
    # One HTTP request per reward function per generation batch.
    assert calls["sync"] == calls["async"] >= 1
    for entry in logs:
        sync_mean = entry["rewards/referee_sync/mean"]
        # Both variants ask the same verifier about the same completions.
        assert sync_mean == pytest.approx(entry["rewards/referee_async/mean"])
        assert 0.0 <= sync_mean <= 1.0
        assert math.isfinite(entry["loss"])
        assert entry["referee/error_fraction"] == 0.0


def test_grpo_trainer_with_one_weighted_component_reward(
    referee_url: str, tiny_hf_model_dir: Path, tmp_path: Path
) -> None:
    """The honest-masking setup inside a real GRPOTrainer step: ONE Referee reward function
    carrying format + correctness, whose parts reach TRL's logs next to the reward."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from referee.trainer_adapter.trl import RefereeReward

    pairs = [(a, b) for a in range(10, 20) for b in range(10, 12)]
    dataset = Dataset.from_dict(
        {"prompt": [f"{a}+{b}=" for a, b in pairs], "answer": [str(a + b)[::-1] for a, b in pairs]}
    )
    reward = RefereeReward(
        referee_url,
        verifier=[{"name": "regex", "weight": 0.2}, {"name": "exact", "weight": 1.0}],  # type: ignore[list-item]
        reference_column="answer",
        name="referee",
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        per_device_train_batch_size=8,
        max_completion_length=3,
        max_steps=2,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=False,
        use_cpu=True,
        disable_dropout=True,
        gradient_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=str(tiny_hf_model_dir),
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(tiny_hf_model_dir),
    )
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "rewards/referee/mean" in entry]
    assert len(logs) == 2
    for entry in logs:
        # Component means are logged; the reward is their weighted sum, sample by sample.
        assert {"referee/regex", "referee/exact", "referee/error_fraction"} <= entry.keys()
        assert entry["rewards/referee/mean"] == pytest.approx(
            0.2 * entry["referee/regex"] + entry["referee/exact"]
        )
        assert math.isfinite(entry["loss"])
