"""Flat sample lists into groups: what the adapters and the service's OpenRLHF route share."""

from __future__ import annotations

from referee.grouping import Sample, group_samples
from referee.models import VerifierComponent


def test_group_samples_groups_by_verifier_reference_and_key() -> None:
    components = [VerifierComponent(name="exact", weight=1.0), VerifierComponent(name="regex", weight=0.1)]
    samples = [
        Sample("a", "1", "exact", key="p1"),
        Sample("b", "1", "exact", key="p2"),
        Sample("c", "1", "exact", key="p1"),
        Sample("d", "1", components, key="p1"),
        Sample("e", {"x": 1}, "exact", {"strip": True}, key="p1"),
        Sample("f", {"x": 1}, "exact", {"strip": True}, key="p1"),
    ]
    specs, where = group_samples(samples)
    assert [s.responses for s in specs] == [["a", "c"], ["b"], ["d"], ["e", "f"]]
    assert where == [(0, 0), (1, 0), (0, 1), (2, 0), (3, 0), (3, 1)]
    assert specs[3].options == {"strip": True} and specs[2].options == {}
