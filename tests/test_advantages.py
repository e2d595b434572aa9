from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.advantages import group_advantages

rewards_st = st.lists(st.one_of(st.none(), st.floats(-10, 10, allow_nan=False)), min_size=1, max_size=32)


@given(rewards_st)
def test_matches_statistics_module(rewards: list[float | None]) -> None:
    stats = group_advantages(rewards, "group", 1e-4)
    valid = [r for r in rewards if r is not None]
    if not valid:
        assert stats.mean is None and all(a is None for a in stats.advantages)
        return
    mean = statistics.fmean(valid)
    std = statistics.stdev(valid) if len(valid) > 1 else 0.0
    assert stats.mean == pytest.approx(mean, abs=1e-9)
    assert stats.std == pytest.approx(std, abs=1e-9)
    for r, a in zip(rewards, stats.advantages, strict=True):
        if r is None:
            assert a is None
        elif stats.zero_variance:
            assert a == 0.0
        else:
            assert a == pytest.approx((r - mean) / (std + 1e-4), rel=1e-6, abs=1e-9)


def test_scale_none_is_centred_only() -> None:
    stats = group_advantages([1.0, 0.0, 0.0, 0.0], "none")
    assert stats.advantages == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_float_noise_is_zero_variance() -> None:
    stats = group_advantages([0.1 + 0.2, 0.3, 0.30000000000000004])
    assert stats.zero_variance and stats.advantages == [0.0, 0.0, 0.0]


def test_single_valid_sample() -> None:
    stats = group_advantages([None, 1.0])
    assert stats.std == 0.0 and stats.zero_variance and stats.advantages == [None, 0.0]
    assert not math.isnan(stats.mean or 0.0)
