"""Group-relative advantages (GRPO) from per-sample rewards.

Convention: the standard deviation is the *sample* standard deviation (ddof=1), the one TRL,
verl and OpenRLHF compute with `torch.std`, so switching a trainer's reward computation to
Referee does not change the scale of its advantages. A group with one valid sample has std 0.
Samples without a verdict (reward None) are left out of mean and std and get advantage None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class GroupStats:
    advantages: list[float | None]
    mean: float | None
    std: float | None
    zero_variance: bool


def group_advantages(
    rewards: Sequence[float | None], scale: Literal["group", "none"] = "group", epsilon: float = 1e-4
) -> GroupStats:
    valid = [r for r in rewards if r is not None]
    if not valid:
        return GroupStats([None] * len(rewards), None, None, True)
    mean = math.fsum(valid) / len(valid)
    if len(valid) > 1:
        std = math.sqrt(math.fsum((r - mean) ** 2 for r in valid) / (len(valid) - 1))
    else:
        std = 0.0
    # Rewards that are all equal carry no signal; compare with a tolerance so float noise in
    # weighted sums (0.1 + 0.2 vs 0.3) does not fake a signal.
    zero_variance = std <= 1e-12 * max(1.0, abs(mean))
    advantages: list[float | None] = []
    for r in rewards:
        if r is None:
            advantages.append(None)
        elif zero_variance:
            advantages.append(0.0)
        elif scale == "group":
            advantages.append((r - mean) / (std + epsilon))
        else:
            advantages.append(r - mean)
    return GroupStats(advantages, mean, std, zero_variance)
