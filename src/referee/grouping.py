"""Flat sample lists to GRPO groups, and groups to bounded requests.

Trainers hand over flat lists (TRL, verl and OpenRLHF each give one entry per completion);
the service scores *groups*. Grouping matters twice: the service parses a reference once per
group, and group statistics (mean, std, advantages) only mean something over completions of
one prompt. Neutral: the trainer adapters (over HTTP) and the service's OpenRLHF route
(in process) both group here, so the two paths cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.models import GroupResult, GroupSpec, JSONObject, Verdict, VerifierComponent

__all__ = [
    "Sample",
    "VerifierSpec",
    "canonical_key",
    "chunk_groups",
    "group_samples",
    "scatter_rewards",
    "scatter_verdicts",
]

VerifierSpec = str | list[VerifierComponent]


@dataclass(frozen=True)
class Sample:
    """One flat sample. Samples with equal verifier, reference, options and key share a group."""

    response: str
    reference: Any
    verifier: VerifierSpec
    options: JSONObject = field(default_factory=dict)
    key: Hashable = None


def canonical_key(value: Any) -> str:
    """A stable text form of a reference, options or verifier spec, for use as a dict key."""
    if isinstance(value, list) and value and isinstance(value[0], VerifierComponent):
        value = [c.model_dump() for c in value]
    return json.dumps(value, sort_keys=True, default=str)


def group_samples(samples: Sequence[Sample]) -> tuple[list[GroupSpec], list[tuple[int, int]]]:
    """Group flat samples into GroupSpecs; returns the specs and each sample's (group, position)."""
    index: dict[tuple[str, str, str, Hashable], int] = {}
    members: list[list[str]] = []
    heads: list[Sample] = []
    where: list[tuple[int, int]] = []
    for sample in samples:
        key = (
            canonical_key(sample.verifier),
            canonical_key(sample.reference),
            canonical_key(sample.options),
            sample.key,
        )
        g = index.get(key)
        if g is None:
            g = index[key] = len(members)
            members.append([])
            heads.append(sample)
        where.append((g, len(members[g])))
        members[g].append(sample.response)
    specs = [
        GroupSpec(
            verifier=head.verifier,
            reference=head.reference,
            responses=responses,
            options=head.options if isinstance(head.verifier, str) else {},
        )
        for head, responses in zip(heads, members, strict=True)
    ]
    return specs, where


def scatter_verdicts(results: Sequence[GroupResult], where: Sequence[tuple[int, int]]) -> list[Verdict]:
    """Group results back to the flat order `group_samples` was given."""
    return [results[g].verdicts[j] for g, j in where]


def scatter_rewards(results: Sequence[GroupResult], where: Sequence[tuple[int, int]]) -> list[float | None]:
    return [results[g].rewards[j] for g, j in where]


def chunk_groups(groups: list[GroupSpec], max_groups: int, max_responses: int) -> list[list[GroupSpec]]:
    """Split groups into requests of bounded size; a group is never split (its stats need it whole)."""
    chunks: list[list[GroupSpec]] = []
    current: list[GroupSpec] = []
    size = 0
    for group in groups:
        n = len(group.responses)
        if current and (len(current) >= max_groups or size + n > max_responses):
            chunks.append(current)
            current, size = [], 0
        current.append(group)
        size += n
    if current:
        chunks.append(current)
    return chunks
