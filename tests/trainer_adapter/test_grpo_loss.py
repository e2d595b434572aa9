"""The GRPO loss against values computed by hand."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")

from referee.trainer_adapter.grpo.loss import grpo_loss, k3_kl  # noqa: E402


def _logps(ratios: list[list[float]]) -> tuple[torch.Tensor, torch.Tensor]:
    """old_logp = log 0.5 everywhere; logp chosen so that exp(logp - old_logp) == ratio."""
    old = torch.full((len(ratios), len(ratios[0])), math.log(0.5), dtype=torch.float64)
    logp = (old + torch.tensor(ratios, dtype=torch.float64).log()).requires_grad_(True)
    return logp, old


# Sample 0 has advantage +1, sample 1 advantage -1; ratios 1, 1.5, 0.5; sample 1's last token is padding.
RATIOS = [[1.0, 1.5, 0.5], [1.0, 1.5, 0.5]]
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])
ADV = torch.tensor([1.0, -1.0], dtype=torch.float64)
# Per-token losses with epsilon 0.2 (-min(r*A, clip(r)*A)):
#   A=+1: r=1 -> -1, r=1.5 -> -1.2 (clipped), r=0.5 -> -0.5 (unclipped: pessimistic bound)
#   A=-1: r=1 -> +1, r=1.5 -> +1.5 (unclipped: pessimistic bound), [r=0.5 -> padding]
SEQ0, SEQ1 = (-1 - 1.2 - 0.5), (1 + 1.5)


@pytest.mark.parametrize(
    ("aggregation", "expected"),
    [
        ("grpo", (SEQ0 / 3 + SEQ1 / 2) / 2),  # mean per sequence, then over sequences: 0.175
        ("dapo", (SEQ0 + SEQ1) / 5),  # all valid tokens: -0.04
        ("dr_grpo", (SEQ0 + SEQ1) / (2 * 4)),  # B * max_completion_length (4): -0.025
    ],
)
def test_aggregation_modes(aggregation: str, expected: float) -> None:
    logp, old = _logps(RATIOS)
    out = grpo_loss(logp, old, ADV, MASK, epsilon=0.2, aggregation=aggregation, max_completion_length=4)  # type: ignore[arg-type]
    assert out.loss.item() == pytest.approx(expected, abs=1e-12)
    # Only the upper clip is active here (A=+1, r=1.5) and it is 1 of 5 valid tokens.
    assert out.clip_high == pytest.approx(0.2)
    assert out.clip_low == 0.0


def test_dr_grpo_normaliser_does_not_depend_on_lengths() -> None:
    logp, old = _logps([[2.0, 2.0, 2.0]])
    adv = torch.tensor([0.5], dtype=torch.float64)
    short = grpo_loss(logp, old, adv, torch.tensor([[1, 0, 0]]), aggregation="dr_grpo", epsilon=10.0)
    full = grpo_loss(logp, old, adv, torch.tensor([[1, 1, 1]]), aggregation="dr_grpo", epsilon=10.0)
    assert short.loss.item() == pytest.approx(-1.0 / 3)  # -(2 * 0.5) / (1 * 3)
    assert full.loss.item() == pytest.approx(-3.0 / 3)
    per_seq = grpo_loss(logp, old, adv, torch.tensor([[1, 0, 0]]), aggregation="grpo", epsilon=10.0)
    assert per_seq.loss.item() == pytest.approx(-1.0)  # grpo divides by the sequence's own length


def test_clipping_both_sides_and_clip_higher() -> None:
    # Tokens: (A=+1, r=1.25), (A=-1, r=0.5), (A=-1, r=1.5), (A=+1, r=0.5), one token per sample.
    logp, old = _logps([[1.25], [0.5], [1.5], [0.5]])
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    mask = torch.ones(4, 1)
    symmetric = grpo_loss(logp, old, adv, mask, epsilon=0.2, aggregation="dapo")
    # -1.2 (upper clip) + 0.8 (lower clip: -clip(0.5)*-1) + 1.5 (no clip) - 0.5 (no clip)
    assert symmetric.loss.item() == pytest.approx((-1.2 + 0.8 + 1.5 - 0.5) / 4)
    assert (symmetric.clip_low, symmetric.clip_high) == (0.25, 0.25)
    higher = grpo_loss(logp, old, adv, mask, epsilon=0.2, epsilon_high=0.28, aggregation="dapo")
    assert higher.loss.item() == pytest.approx((-1.25 + 0.8 + 1.5 - 0.5) / 4)  # 1.25 < 1.28: not clipped
    assert (higher.clip_low, higher.clip_high) == (0.25, 0.0)

    # A clipped token passes no gradient; the others do.
    symmetric.loss.backward()
    grad = logp.grad.flatten().tolist()  # type: ignore[union-attr]
    assert grad[0] == 0.0 and grad[1] == 0.0
    assert grad[2] == pytest.approx(1.5 / 4) and grad[3] == pytest.approx(-0.5 / 4)


def test_k3_kl_values_and_unbiasedness() -> None:
    logp = torch.tensor([math.log(0.5), math.log(0.25), math.log(0.3)])
    ref = torch.tensor([math.log(0.25), math.log(0.5), math.log(0.3)])
    kl = k3_kl(logp, ref).tolist()
    assert kl[0] == pytest.approx(0.5 + math.log(2) - 1)  # r = q/p = 0.5: r - log r - 1
    assert kl[1] == pytest.approx(2 - math.log(2) - 1)
    assert kl[2] == pytest.approx(0.0, abs=1e-7)
    # E_{x~p}[k3] is exactly KL(p || q) over a full categorical.
    p = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    q = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    expected = float((p * (p / q).log()).sum())
    assert float((p * k3_kl(p.log(), q.log())).sum()) == pytest.approx(expected)


def test_beta_adds_the_kl_penalty() -> None:
    logp, old = _logps([[1.0, 1.0]])
    ref = logp.detach() + torch.tensor([[math.log(0.5), math.log(2.0)]], dtype=torch.float64)
    adv = torch.tensor([0.0], dtype=torch.float64)
    out = grpo_loss(logp, old, adv, torch.ones(1, 2), ref_logp=ref, beta=0.1)
    kl_mean = ((0.5 + math.log(2) - 1) + (2 - math.log(2) - 1)) / 2
    assert out.loss.item() == pytest.approx(0.1 * kl_mean)
    assert out.kl == pytest.approx(kl_mean)
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(logp, old, adv, torch.ones(1, 2), beta=0.1)


@pytest.mark.parametrize("aggregation", ["grpo", "dapo", "dr_grpo"])
def test_samples_without_verdict_are_masked(aggregation: str) -> None:
    logp, old = _logps([[1.5, 1.0], [0.7, 1.1], [1.3, 0.9]])
    adv = torch.tensor([1.0, float("nan"), -0.5], dtype=torch.float64)  # NaN: no verdict
    sample_mask = torch.tensor([True, True, False])  # sample 2: masked explicitly
    mask = torch.ones(3, 2)
    out = grpo_loss(logp, old, adv, mask, sample_mask=sample_mask, aggregation=aggregation)  # type: ignore[arg-type]
    assert math.isfinite(out.loss.item())
    out.loss.backward()
    grad = logp.grad  # type: ignore[union-attr]
    assert torch.all(grad[1:] == 0.0) and torch.any(grad[0] != 0.0)
    # Equal to the loss of the one valid sample alone (dr_grpo keeps its constant B * T normaliser).
    alone_logp, alone_old = _logps([[1.5, 1.0]])
    alone = grpo_loss(alone_logp, alone_old, adv[:1], torch.ones(1, 2), aggregation=aggregation)  # type: ignore[arg-type]
    scale = 1 / 3 if aggregation == "dr_grpo" else 1.0
    assert out.loss.item() == pytest.approx(alone.loss.item() * scale)


def test_unknown_aggregation_rejected() -> None:
    logp, old = _logps([[1.0]])
    with pytest.raises(ValueError, match="aggregation"):
        grpo_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 1), aggregation="mean")  # type: ignore[arg-type]
