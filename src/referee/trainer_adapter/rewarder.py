"""Group rewarder: batches of GRPO groups become `/v1/groups` requests (the GRPO loop uses it;
the TRL and verl adapters group flat samples and send their own request).

A GRPO batch is `n` prompts × `G` completions. The rewarder sends one request per batch
(split into concurrent chunks when the batch is large, so no single request grows without bound
and the service's workers stay busy) and returns, per group, rewards, advantages and a mask
that is False where no verdict could be reached (`status: "error"`): a trainer must leave those
samples out of the loss instead of learning from a fabricated 0.

This module is plain Python (no torch); it reaches the service only through `referee.client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from referee.advantages import group_advantages as _service_advantages
from referee.grouping import ChunkPolicy, VerifierSpec, score_in_chunks
from referee.models import (
    AdvantageConfig,
    GroupResult,
    GroupSpec,
    GroupsResponse,
    JSONObject,
    Verdict,
    VerdictStatus,
)


@runtime_checkable
class GroupScorer(Protocol):
    """Anything that scores groups: `referee.client.AsyncClient`, or a stand-in in tests."""

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
    """The service's advantage rule (`referee.advantages`), computed locally: the
    random-reward control must normalise exactly as the service does."""
    config = config or AdvantageConfig()
    stats = _service_advantages(rewards, config.scale, config.epsilon)
    return stats.advantages, stats.zero_variance


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
        self.chunks = ChunkPolicy(max_groups_per_request, max_responses_per_request, max_concurrency)
        self._scorer = scorer if not isinstance(scorer, str) else None
        self._url = scorer if isinstance(scorer, str) else None
        self._api_key = api_key
        self._timeout = timeout
        self._clients: dict[int, Any] = {}
        self.verifier = verifier
        self.options = dict(options or {})
        self.advantage = advantage or AdvantageConfig()

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

        async def score(chunk: list[GroupSpec]) -> list[GroupResult]:
            return (await scorer.score_groups(chunk, self.advantage)).groups

        return await score_in_chunks(score, groups, self.chunks)
