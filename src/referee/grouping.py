"""Flat sample lists to GRPO groups, and groups to bounded requests.

Trainers hand over flat lists (TRL, verl and OpenRLHF each give one entry per completion);
the service scores *groups*. Grouping matters twice: the service parses a reference once per
group, and group statistics (mean, std, advantages) only mean something over completions of
one prompt. Neutral: the trainer adapters (over HTTP) and the service's OpenRLHF route
(in process) both group here, so the two paths cannot drift apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.models import GroupResult, GroupSpec, JSONObject, Verdict, VerdictStatus, VerifierComponent

__all__ = [
    "ChunkPolicy",
    "Placement",
    "Sample",
    "VerifierSpec",
    "canonical_key",
    "chunk_groups",
    "component_scores",
    "group_samples",
    "plain",
    "prompt_fingerprint",
    "scatter_rewards",
    "scatter_verdicts",
    "score_in_chunks",
    "unsendable",
]

VerifierSpec = str | list[VerifierComponent]


@dataclass(frozen=True)
class Sample:
    """One flat sample. Samples with equal verifier, reference, options, key and prompt_id
    share a group; `prompt_id` is sent with it (per-prompt statistics)."""

    response: str
    reference: Any
    verifier: VerifierSpec
    options: JSONObject = field(default_factory=dict)
    key: Hashable = None
    prompt_id: str | None = None


def prompt_fingerprint(prompt: Any) -> str:
    """A prompt_id for a prompt without one: a digest of its text (or of its chat messages'
    canonical JSON), so the same prompt gets the same id in every process and every run."""
    text = prompt if isinstance(prompt, str) else canonical_key(plain(prompt))
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def canonical_key(value: Any) -> str:
    """A stable text form of a reference, options or verifier spec, for use as a dict key."""
    if isinstance(value, list) and value and isinstance(value[0], VerifierComponent):
        value = [c.model_dump() for c in value]
    return json.dumps(value, sort_keys=True, default=str)


def plain(value: Any) -> Any:
    """`value` as plain JSON-able Python: numpy scalars and arrays (verl's parquet columns,
    pandas cells) become numbers and lists, through their own `tolist()`; mappings and
    sequences are converted all the way down. No numpy import: duck-typed."""
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__.split(".")[0] == "numpy":
        return plain(tolist())
    return value


# Where a flat sample went: (group, position), or the verdict it got without being sent.
Placement = tuple[int, int] | Verdict


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    return False


def unsendable(what: str) -> Verdict:
    """The masked verdict of a sample that cannot be sent as it is (a client-side mistake)."""
    return Verdict(
        score=None,
        status=VerdictStatus.error,
        verifier="?",
        reason=f"invalid input: {what}",
        details={"invalid": {"sample": what}},
    )


def group_samples(samples: Sequence[Sample]) -> tuple[list[GroupSpec], list[Placement]]:
    """Group flat samples into GroupSpecs; returns the specs and where each sample went.
    References and options are made plain JSON first (`plain`). A sample whose reference or
    options hold NaN or an infinity (a pandas cell, a numpy label) is not sent: JSON cannot
    carry it, and one such value would make the whole request a 422. It gets a masked verdict
    saying why, and the rest of the batch is scored."""
    samples = [
        Sample(s.response, plain(s.reference), s.verifier, plain(s.options), s.key, s.prompt_id)
        for s in samples
    ]
    index: dict[tuple[str, str, str, Hashable, str | None], int] = {}
    members: list[list[str]] = []
    heads: list[Sample] = []
    where: list[Placement] = []
    for sample in samples:
        if _non_finite(sample.reference) or _non_finite(sample.options):
            where.append(
                unsendable("the reference or options contain NaN or Infinity, which JSON cannot carry")
            )
            continue
        key = (
            canonical_key(sample.verifier),
            canonical_key(sample.reference),
            canonical_key(sample.options),
            sample.key,
            sample.prompt_id,
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
            prompt_id=head.prompt_id,
        )
        for head, responses in zip(heads, members, strict=True)
    ]
    return specs, where


def scatter_verdicts(results: Sequence[GroupResult], where: Sequence[Placement]) -> list[Verdict]:
    """Group results back to the flat order `group_samples` was given."""
    return [w if isinstance(w, Verdict) else results[w[0]].verdicts[w[1]] for w in where]


def scatter_rewards(results: Sequence[GroupResult], where: Sequence[Placement]) -> list[float | None]:
    return [None if isinstance(w, Verdict) else results[w[0]].rewards[w[1]] for w in where]


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


@dataclass(frozen=True)
class ChunkPolicy:
    """How a large batch of groups is sent: a trainer's batch (verl's 1024 prompts x 5, TRL's
    300 x 4) exceeds what one request may carry (the service's `max_groups`, 256 by default), so
    it goes as chunks of whole groups, `max_concurrency` at a time, results reassembled in order."""

    max_groups: int = 256
    max_responses: int = 2048
    max_concurrency: int = 4

    def __post_init__(self) -> None:
        if min(self.max_groups, self.max_responses, self.max_concurrency) < 1:
            raise ValueError("request sizes and concurrency must be positive")


async def score_in_chunks(
    score: Callable[[list[GroupSpec]], Awaitable[Sequence[GroupResult]]],
    groups: Sequence[GroupSpec],
    policy: ChunkPolicy,
) -> list[GroupResult]:
    """`score` every chunk of `groups` (at most `policy.max_concurrency` at once); the results of
    all groups in their order. The one chunked path of the client, the rewarder and the adapters."""
    semaphore = asyncio.Semaphore(policy.max_concurrency)

    async def one(chunk: list[GroupSpec]) -> Sequence[GroupResult]:
        async with semaphore:
            return await score(chunk)

    chunks = chunk_groups(list(groups), policy.max_groups, policy.max_responses)
    parts = await asyncio.gather(*(one(chunk) for chunk in chunks))
    results = [result for part in parts for result in part]
    if len(results) != len(groups):
        raise RuntimeError(f"{len(results)} group results for {len(groups)} groups sent")
    return results


def component_scores(verdicts: Sequence[Verdict]) -> dict[str, list[float | None]]:
    """Per weighted component (verifier name), its score for each verdict (None where it has
    none): the parts of a combined reward, for the trainer's logs."""
    columns: dict[str, list[float | None]] = {}
    for i, verdict in enumerate(verdicts):
        for part in verdict.details.get("components", []) if verdict.details else []:
            if not isinstance(part, dict):
                continue
            name = str(part.get("verifier", "?")).split("@")[0]
            column = columns.setdefault(name, [None] * len(verdicts))
            column[i] = part.get("score") if part.get("status") == "ok" else None
    return columns
