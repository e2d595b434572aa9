"""The GRPO loop's mechanics with an in-process scorer: determinism, resume, dynamic sampling,
reference refresh, masking of samples without a verdict."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")

from referee.trainer_adapter.grpo.demo_task import AdditionTask, supervised_warmup, tiny_policy  # noqa: E402
from referee.trainer_adapter.grpo.loop import GRPO, GRPOArgs  # noqa: E402
from referee.trainer_adapter.grpo.policy import Policy  # noqa: E402
from referee.trainer_adapter.rewarder import GroupRewarder  # noqa: E402

TIMING = ("step_time_s", "reward_time_s", "eval_time_s")
ARGS = GRPOArgs(steps=4, prompts_per_step=4, group_size=4, eval_every=2, checkpoint_every=2, progress=False)


def _policy(seed: int = 0, warmup: int = 40) -> Policy:
    policy = tiny_policy(seed)
    if warmup:
        supervised_warmup(policy, AdditionTask(), steps=warmup, batch=32, seed=seed)
    return policy


def _run(out: Path, scorer: Any, policy: Policy | None = None, **kw: Any) -> tuple[GRPO, dict[str, Any]]:
    grpo = GRPO(replace(ARGS, out=str(out), **kw), policy or _policy(), AdditionTask(), GroupRewarder(scorer))
    return grpo, grpo.train()


def _records(out: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


@pytest.mark.slow
def test_same_seed_same_metrics_and_outputs(tmp_path: Path, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    _, summary = _run(tmp_path / "a", fake_scorer)
    _run(tmp_path / "b", type(fake_scorer)())
    first, second = _records(tmp_path / "a"), _records(tmp_path / "b")
    assert first == second
    assert [r["step"] for r in first] == [0, 1, 2, 3, 4]
    assert {"reward", "kl", "clip_frac", "zero_variance_frac", "loss"} <= set(first[1])
    assert "accuracy" in first[0] and "accuracy" in first[2] and "accuracy" not in first[1]
    assert Path(summary["png"]).stat().st_size > 10_000
    assert 0.0 < summary["reward_time_share"] < 1.0
    _run(tmp_path / "c", type(fake_scorer)(), seed=1)
    assert _records(tmp_path / "c") != first


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path: Path, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    straight, _ = _run(tmp_path / "straight", fake_scorer)
    out = tmp_path / "resumed"
    _run(out, type(fake_scorer)(), steps=2)
    # A new process would rebuild the policy from scratch: the checkpoint restores everything.
    resumed, _ = _run(out, type(fake_scorer)(), policy=_policy(warmup=0), resume=True)
    assert _records(out) == _records(tmp_path / "straight")
    for a, b in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_dynamic_sampling_drops_groups_without_signal(tmp_path: Path, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    # An untrained model never answers right: every group has zero variance, nothing to learn from.
    policy = _policy(warmup=0)
    before = [p.detach().clone() for p in policy.model.parameters()]
    _, _ = _run(
        tmp_path / "dyn", fake_scorer, policy=policy, steps=1, dynamic_sampling=True, max_resample_rounds=2
    )
    record = _records(tmp_path / "dyn")[1]
    assert record["zero_variance_frac"] == 1.0
    assert record["sample_rounds"] == 3 and record["groups_used"] == 0
    assert all(torch.equal(a, b) for a, b in zip(before, policy.model.parameters(), strict=True))
    # A reward most groups disagree on: groups with signal are kept until the batch is full.
    scorer = type(fake_scorer)()
    scorer.judge = lambda response, reference: float(response[:1] in "01234")
    _run(tmp_path / "dyn2", scorer, steps=3, dynamic_sampling=True, max_resample_rounds=8)
    for record in _records(tmp_path / "dyn2")[1:]:
        assert record["groups_used"] == ARGS.prompts_per_step


@pytest.mark.parametrize("refresh", [0, 1])
def test_reference_refresh(tmp_path: Path, fake_scorer, refresh: int) -> None:  # type: ignore[no-untyped-def]
    policy = _policy()
    initial = [p.detach().clone() for p in policy.model.parameters()]
    fake_scorer.judge = lambda response, reference: float(response[:1] in "01234")  # signal in most groups
    grpo, _ = _run(tmp_path / "ref", fake_scorer, policy=policy, steps=2, ref_refresh_steps=refresh)
    assert grpo.ref is not None
    ref_params = list(grpo.ref.parameters())
    target = list(policy.model.parameters()) if refresh else initial
    assert all(torch.equal(a, b) for a, b in zip(ref_params, target, strict=True))
    other = initial if refresh else list(policy.model.parameters())
    assert not all(torch.equal(a, b) for a, b in zip(ref_params, other, strict=True))  # the policy moved


def test_samples_without_verdict_are_left_out(tmp_path: Path, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    fake_scorer.error_every = 3
    _run(tmp_path / "mask", fake_scorer, steps=2, eval_every=0)
    for record in _records(tmp_path / "mask")[1:]:
        assert 0.2 < record["no_verdict_frac"] < 0.5
        assert record["loss"] == record["loss"]  # finite, not NaN


def test_hugging_face_model_from_a_local_path(tmp_path: Path, tiny_hf_model_dir: Path, fake_scorer) -> None:  # type: ignore[no-untyped-def]
    from referee.trainer_adapter.grpo.policy import load_hf_policy

    policy = load_hf_policy(tiny_hf_model_dir)
    before = [p.detach().clone() for p in policy.model.parameters()]
    fake_scorer.judge = lambda response, reference: float(response[:1] in "01234")
    _run(tmp_path / "hf", fake_scorer, policy=policy, steps=2, eval_every=0)
    records = _records(tmp_path / "hf")
    assert [r["step"] for r in records] == [1, 2]
    assert all(r["groups_used"] == ARGS.prompts_per_step and r["loss"] == r["loss"] for r in records)
    assert 0 < records[0]["completion_len"] <= ARGS.max_new_tokens
    assert not all(torch.equal(a, b) for a, b in zip(before, policy.model.parameters(), strict=True))
