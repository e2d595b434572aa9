"""Group rewarder: the one place where trainer batches become `/v1/groups` requests.

A GRPO batch is `n` prompts × `G` completions. The rewarder sends one request per batch
(split into concurrent chunks when the batch is large, so no single request grows without bound
and the service's workers stay busy) and returns, per group, rewards, advantages and a mask
that is False where no verdict could be reached (`status: "error"`): a trainer must leave those
samples out of the loss instead of learning from a fabricated 0.

This module is plain Python (no torch): the service and light clients may import it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from referee.models import (
    AdvantageConfig,
    GroupResult,
    GroupSpec,
    GroupsResponse,
    JSONObject,
    Verdict,
    VerdictStatus,
    VerifierComponent,
)
from referee.scoring.advantages import group_advantages as _service_advantages

VerifierSpec = str | list[VerifierComponent]


@runtime_checkable
class GroupScorer(Protocol):
    """Anything that scores groups: `referee.client.AsyncClient`, or an in-process scorer."""

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None
    ) -> GroupsResponse: ...


@dataclass(frozen=True)
class GroupRewards:
    """Per-group results, in the order of the groups given. `mask[i][j]` is True iff scored."""

    rewards: list[list[float | None]]
    advantages: list[list[float | None]]
    mask: list[list[bool]]
    zero_variance: list[bool]
    verdicts: list[list[Verdict]] = field(default_factory=list)

    @classmethod
    def from_results(cls, results: Sequence[GroupResult]) -> GroupRewards:
        return cls(
            rewards=[list(r.rewards) for r in results],
            advantages=[list(r.advantages) for r in results],
            mask=[[v.status is VerdictStatus.ok for v in r.verdicts] for r in results],
            zero_variance=[r.zero_variance for r in results],
            verdicts=[list(r.verdicts) for r in results],
        )

    def flat_rewards(self) -> list[float | None]:
        return [r for group in self.rewards for r in group]

    def flat_advantages(self) -> list[float | None]:
        return [a for group in self.advantages for a in group]

    def flat_mask(self) -> list[bool]:
        return [m for group in self.mask for m in group]


def group_advantages(
    rewards: Sequence[float | None], config: AdvantageConfig | None = None
) -> tuple[list[float | None], bool]:
    """The service's advantage rule (`referee.scoring.advantages`), computed locally: the
    random-reward control must normalise exactly as the service does."""
    config = config or AdvantageConfig()
    stats = _service_advantages(rewards, config.scale, config.epsilon)
    return stats.advantages, stats.zero_variance


def _chunks(groups: list[GroupSpec], max_groups: int, max_responses: int) -> list[list[GroupSpec]]:
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


class GroupRewarder:
    """Scores batches of groups through a `GroupScorer` (usually `referee.client.AsyncClient`).

    ``GroupRewarder("http://127.0.0.1:8000", verifier="exact")`` builds its own client lazily, one
    per event loop (an httpx async client is bound to the loop it was first used on).
    """

    def __init__(
        self,
        scorer: GroupScorer | str,
        *,
        verifier: VerifierSpec = "exact",
        options: JSONObject | None = None,
        advantage: AdvantageConfig | None = None,
        max_groups_per_request: int = 256,
        max_responses_per_request: int = 2048,
        max_concurrency: int = 4,
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        if max_groups_per_request < 1 or max_responses_per_request < 1 or max_concurrency < 1:
            raise ValueError("request sizes and concurrency must be positive")
        self._scorer = scorer if not isinstance(scorer, str) else None
        self._url = scorer if isinstance(scorer, str) else None
        self._api_key = api_key
        self._timeout = timeout
        self._clients: dict[int, Any] = {}
        self.verifier = verifier
        self.options = dict(options or {})
        self.advantage = advantage or AdvantageConfig()
        self.max_groups_per_request = max_groups_per_request
        self.max_responses_per_request = max_responses_per_request
        self.max_concurrency = max_concurrency

    def _get_scorer(self) -> GroupScorer:
        if self._scorer is not None:
            return self._scorer
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            from referee.client import AsyncClient  # imported lazily: the client pulls in httpx

            client = AsyncClient(self._url or "", api_key=self._api_key, timeout=self._timeout)
            self._clients[loop_id] = client
        return client

    async def aclose(self) -> None:
        """Close the client this loop created (clients of other, finished loops are dropped)."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        self._clients.clear()
        if client is not None:
            await client.aclose()

    def specs(
        self,
        completions: Sequence[Sequence[str]],
        references: Sequence[Any],
        *,
        verifier: VerifierSpec | None = None,
        options: JSONObject | None = None,
    ) -> list[GroupSpec]:
        if len(completions) != len(references):
            raise ValueError(f"{len(completions)} groups of completions but {len(references)} references")
        spec = self.verifier if verifier is None else verifier
        opts = self.options if options is None else options
        return [
            GroupSpec(
                verifier=spec,
                reference=ref,
                responses=list(group),
                options=opts if isinstance(spec, str) else {},
            )
            for group, ref in zip(completions, references, strict=True)
        ]

    async def score(
        self,
        completions: Sequence[Sequence[str]],
        references: Sequence[Any],
        *,
        verifier: VerifierSpec | None = None,
        options: JSONObject | None = None,
    ) -> GroupRewards:
        """`completions[i]` are the G completions of prompt i, judged against `references[i]`."""
        return await self.score_specs(self.specs(completions, references, verifier=verifier, options=options))

    async def score_specs(self, groups: list[GroupSpec]) -> GroupRewards:
        return GroupRewards.from_results(await self.score_results(groups))

    async def score_results(self, groups: list[GroupSpec]) -> list[GroupResult]:
        if not groups:
            return []
        scorer = self._get_scorer()
        chunks = _chunks(groups, self.max_groups_per_request, self.max_responses_per_request)
        semaphore = asyncio.Semaphore(self.max_concurrency)

        async def one(chunk: list[GroupSpec]) -> GroupsResponse:
            async with semaphore:
                return await scorer.score_groups(chunk, self.advantage)

        responses = await asyncio.gather(*(one(chunk) for chunk in chunks))
        results = [result for response in responses for result in response.groups]
        if len(results) != len(groups):
            raise RuntimeError(f"service returned {len(results)} groups for {len(groups)} sent")
        return results


# --- grouping of flat sample lists (TRL, verl, OpenRLHF hand us flat lists) -----------------


@dataclass(frozen=True)
class Sample:
    """One flat sample. Samples with equal verifier, reference, options and key share a group."""

    response: str
    reference: Any
    verifier: VerifierSpec
    options: JSONObject = field(default_factory=dict)
    key: Hashable = None


def _canonical(value: Any) -> str:
    if isinstance(value, list) and value and isinstance(value[0], VerifierComponent):
        value = [c.model_dump() for c in value]
    return json.dumps(value, sort_keys=True, default=str)


def group_samples(samples: Sequence[Sample]) -> tuple[list[GroupSpec], list[tuple[int, int]]]:
    """Group flat samples into GroupSpecs; returns the specs and each sample's (group, position).

    Grouping matters twice: the service parses a reference once per group, and the group
    statistics (mean, std, advantages) are only meaningful over completions of one prompt.
    """
    index: dict[tuple[str, str, str, Hashable], int] = {}
    members: list[list[str]] = []
    heads: list[Sample] = []
    where: list[tuple[int, int]] = []
    for sample in samples:
        key = (
            _canonical(sample.verifier),
            _canonical(sample.reference),
            _canonical(sample.options),
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
    return [results[g].verdicts[j] for g, j in where]


def scatter_rewards(results: Sequence[GroupResult], where: Sequence[tuple[int, int]]) -> list[float | None]:
    return [results[g].rewards[j] for g, j in where]
