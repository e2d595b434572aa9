"""A stand-in for the service on the client side: `FakeScorer` answers `score_groups` in this
process, so adapter and route logic is tested without HTTP, with failures injected at will."""

from __future__ import annotations

import asyncio
import statistics

from referee.advantages import group_advantages
from referee.models import AdvantageConfig, GroupResult, GroupSpec, GroupsResponse, Verdict, VerdictStatus


class FakeScorer:
    """In-process `GroupScorer`: exact match after strip; responses equal to `error_on` get no verdict."""

    def __init__(self, error_on: str | None = None, error_every: int = 0) -> None:
        self.calls: list[list[GroupSpec]] = []
        self.error_on = error_on
        self.error_every = error_every  # every k-th response scored (counting across calls) gets no verdict
        self.seen = 0
        # The judgement of a response against its reference; exact match after strip by default.
        self.judge = lambda response, reference: float(response.strip() == str(reference))
        self.in_flight = 0
        self.max_in_flight = 0

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None, on_invalid: str = "reject"
    ) -> GroupsResponse:
        self.calls.append(list(groups))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)  # let concurrent chunks overlap
        self.in_flight -= 1
        results = []
        for group in groups:
            verdicts = [self._judge(r, group.reference) for r in group.responses]
            rewards = [v.score for v in verdicts]
            config = advantage or AdvantageConfig()
            stats = group_advantages(rewards, config.scale, config.epsilon)
            advantages, zero = stats.advantages, stats.zero_variance
            valid = [r for r in rewards if r is not None]
            results.append(
                GroupResult(
                    verdicts=verdicts,
                    rewards=rewards,
                    advantages=advantages,
                    mean=sum(valid) / len(valid) if valid else None,
                    std=statistics.stdev(valid) if len(valid) > 1 else None,
                    zero_variance=zero,
                )
            )
        return GroupsResponse(groups=results)

    def _judge(self, response: str, reference: object) -> Verdict:
        self.seen += 1
        if response == self.error_on or (self.error_every and self.seen % self.error_every == 0):
            return Verdict(score=None, status=VerdictStatus.error, verifier="fake@1", reason="down")
        return Verdict(score=self.judge(response, reference), status=VerdictStatus.ok, verifier="fake@1")
