"""The GRPO objective: per-token clipped ratio, k3 KL to a reference, three aggregations.

Shapes: `logp`, `old_logp`, `ref_logp`, `completion_mask` are (B, T) over completion tokens;
`advantages` and `sample_mask` are (B,). Per token t of sample i:

    ratio   = exp(logp - old_logp)
    surr    = min(ratio * A_i, clip(ratio, 1 - epsilon, 1 + epsilon_high) * A_i)
    k3      = exp(ref_logp - logp) - (ref_logp - logp) - 1        (Schulman's unbiased, >= 0)
    loss_t  = -surr + beta * k3

Aggregation over tokens (the choice changes how long and short answers are weighted):
- ``grpo``: mean over each sequence's tokens, then mean over sequences (DeepSeekMath);
- ``dr_grpo``: sum over all tokens / (B * max_completion_length), a constant, so no length bias
  (Dr. GRPO; pair it with advantages without std scaling, `AdvantageConfig(scale="none")`);
- ``dapo``: sum over all tokens / number of tokens (token-level mean, DAPO).

Samples without a verdict (`sample_mask` False, or a NaN advantage) contribute nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

Aggregation = Literal["grpo", "dr_grpo", "dapo"]
AGGREGATIONS: tuple[Aggregation, ...] = ("grpo", "dr_grpo", "dapo")


@dataclass(frozen=True)
class LossOutput:
    loss: torch.Tensor
    kl: float  # mean k3 over valid tokens (0 when beta == 0 and no reference is given)
    clip_low: float  # share of valid tokens where the lower clip bound is active (A < 0)
    clip_high: float  # share of valid tokens where the upper clip bound is active (A > 0)

    @property
    def clip_frac(self) -> float:
        return self.clip_low + self.clip_high


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference) from samples of the policy."""
    delta = ref_logp - logp
    return torch.exp(delta) - delta - 1.0


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    ref_logp: torch.Tensor | None = None,
    sample_mask: torch.Tensor | None = None,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    beta: float = 0.0,
    aggregation: Aggregation = "grpo",
    max_completion_length: int | None = None,
) -> LossOutput:
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp")
    eps_high = epsilon if epsilon_high is None else epsilon_high

    valid_sample = torch.isfinite(advantages)
    if sample_mask is not None:
        valid_sample = valid_sample & sample_mask.bool()
    adv = torch.where(valid_sample, advantages, torch.zeros_like(advantages))[:, None]
    mask = completion_mask.to(logp.dtype) * valid_sample[:, None].to(logp.dtype)

    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + eps_high)
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl = k3_kl(logp, ref_logp) if ref_logp is not None else torch.zeros_like(logp)
    if beta > 0:
        per_token = per_token + beta * kl

    masked = per_token * mask
    if aggregation == "grpo":
        per_seq = masked.sum(-1) / mask.sum(-1).clamp(min=1.0)
        n_seq = (mask.sum(-1) > 0).sum().clamp(min=1)
        loss = per_seq.sum() / n_seq
    elif aggregation == "dr_grpo":
        length = max_completion_length if max_completion_length is not None else logp.shape[1]
        loss = masked.sum() / (logp.shape[0] * length)
    else:
        loss = masked.sum() / mask.sum().clamp(min=1.0)

    with torch.no_grad():
        n_tok = mask.sum().clamp(min=1.0)
        low = ((ratio < 1.0 - epsilon) & (adv < 0)).to(mask.dtype) * mask
        high = ((ratio > 1.0 + eps_high) & (adv > 0)).to(mask.dtype) * mask
        stats = (float((kl * mask).sum() / n_tok), float(low.sum() / n_tok), float(high.sum() / n_tok))
    return LossOutput(loss=loss, kl=stats[0], clip_low=stats[1], clip_high=stats[2])
