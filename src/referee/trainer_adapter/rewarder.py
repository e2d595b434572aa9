"""Group rewarder: batches of GRPO groups become `/v1/groups` requests (the GRPO loop uses it;
the TRL and verl adapters group flat samples and send their own request).

A GRPO batch is `n` prompts × `G` completions. The rewarder sends one request per batch
(split into concurrent chunks when the batch is large, so no single request grows without bound
and the service's workers stay busy) and returns, per group, rewards, advantages and a mask
that is False where no verdict could be reached (`status: "error"`): a trainer must leave those
samples out of the loss instead of learning from a fabricated 0.

Groups may name their prompt (`prompt_ids=`): the service then keeps per-prompt statistics,
and `solved_prompts(k)` reads back the prompts solved in each of their last k visits (the
curriculum of the GRPO loop's `skip_solved_after`).

This module is plain Python (no torch); it reaches the service only through `referee.client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from referee.grouping import ChunkPolicy, VerifierSpec, score_in_chunks
from referee.models import (
    AdvantageConfig,
    GroupResult,
    GroupSpec,
    GroupsResponse,
    JSONObject,
    PromptFilter,
    PromptStatsPage,
    Verdict,
    VerdictStatus,
)
from referee.trainer_adapter.prompt_ids import as_prompt_id

# The most prompts one `GET /v1/stats/prompts` page may list (the service's bound on `limit`).
STATS_PAGE = 10_000


@runtime_checkable
class GroupScorer(Protocol):
    """Anything that scores groups: `referee.client.AsyncClient`, or a stand-in in tests."""

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None
    ) -> GroupsResponse: ...


@runtime_checkable
class PromptStatsSource(Protocol):
    """A scorer that can also read the service's per-prompt statistics (`AsyncClient` can)."""

    async def prompt_stats(
        self, filter: PromptFilter | str = "all", last: int = 1, limit: int = 100, offset: int = 0
    ) -> PromptStatsPage: ...


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
        patience_s: float | None = None,
        retries: int | None = None,
    ) -> None:
        """`patience_s`, `retries`: how long (how often) the client built from a URL waits out a
        service that is restarting or unreachable before a step fails (`referee.client`)."""
        self.chunks = ChunkPolicy(max_groups_per_request, max_responses_per_request, max_concurrency)
        self._scorer = scorer if not isinstance(scorer, str) else None
        self._url = scorer if isinstance(scorer, str) else None
        self._api_key = api_key
        self._timeout = timeout
        self._patience_s = patience_s
        self._retries = retries
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

            client = AsyncClient(
                self._url or "",
                api_key=self._api_key,
                timeout=self._timeout,
                patience_s=self._patience_s,
                retries=self._retries,
            )
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
        prompt_ids: Sequence[Any] | None = None,
    ) -> list[GroupSpec]:
        """One GroupSpec per prompt. `prompt_ids[i]` names prompt i for the service's statistics
        (None: not tracked; a number becomes its text, an id over 200 characters its digest)."""
        if len(completions) != len(references):
            raise ValueError(f"{len(completions)} groups of completions but {len(references)} references")
        ids = [None] * len(completions) if prompt_ids is None else [as_prompt_id(p) for p in prompt_ids]
        if len(ids) != len(completions):
            raise ValueError(f"{len(completions)} groups of completions but {len(ids)} prompt ids")
        spec = self.verifier if verifier is None else verifier
        opts = self.options if options is None else options
        return [
            GroupSpec(
                verifier=spec,
                reference=ref,
                responses=list(group),
                options=opts if isinstance(spec, str) else {},
                prompt_id=pid,
            )
            for group, ref, pid in zip(completions, references, ids, strict=True)
        ]

    async def score(
        self,
        completions: Sequence[Sequence[str]],
        references: Sequence[Any],
        *,
        verifier: VerifierSpec | None = None,
        options: JSONObject | None = None,
        prompt_ids: Sequence[Any] | None = None,
    ) -> GroupRewards:
        """`completions[i]` are the G completions of prompt i, judged against `references[i]`;
        `prompt_ids[i]` (optional) names prompt i in the service's per-prompt statistics."""
        specs = self.specs(completions, references, verifier=verifier, options=options, prompt_ids=prompt_ids)
        return await self.score_specs(specs)

    async def score_specs(self, groups: list[GroupSpec]) -> GroupRewards:
        return GroupRewards.from_results(await self.score_results(groups))

    async def score_results(self, groups: list[GroupSpec]) -> list[GroupResult]:
        if not groups:
            return []
        scorer = self._get_scorer()

        async def score(chunk: list[GroupSpec]) -> list[GroupResult]:
            return (await scorer.score_groups(chunk, self.advantage)).groups

        return await score_in_chunks(score, groups, self.chunks)

    async def solved_prompts(self, streak: int) -> set[str]:
        """The ids of this key's prompts every sample of which passed in each of their latest
        `streak` visits (`GET /v1/stats/prompts?filter=always_solved&last=streak`, all pages).

        The service's memory, not the trainer's: it survives a trainer restart and sees the
        visits of every rank. Pages are read most recently seen first while training may go
        on, so a prompt visited between two page reads can be missed or listed twice (a set):
        a curriculum can live with one such miss per call."""
        if not 1 <= streak <= 1000:
            raise ValueError(f"streak must be between 1 and 1000 (the service's bound), not {streak}")
        source = self._get_scorer()
        if not isinstance(source, PromptStatsSource):
            raise TypeError(f"{type(source).__name__} cannot read prompt statistics (no prompt_stats method)")
        solved: set[str] = set()
        offset = 0
        while True:
            page = await source.prompt_stats(PromptFilter.always_solved, streak, STATS_PAGE, offset)
            solved.update(p.prompt_id for p in page.prompts)
            offset += len(page.prompts)
            if not page.prompts or offset >= page.matched:
                return solved
