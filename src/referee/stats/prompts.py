"""One prompt's record: counters, three streaks ("visits in a row"), and a short history.

A filter like "solved the last K visits" needs no history (the streaks say it). The history
is for a person looking at one prompt: its latest `RECENT_VISITS` visits' times and pass
rates and its latest `RECENT_REASONS` verdict reasons, kept in flat tuples (a few hundred
bytes per record; the record bounds of `tracker.Statistics` bound them all).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from referee.models import PromptDetail, PromptFilter, PromptReason, PromptStat, PromptVisit
from referee.stats.buckets import is_zero_variance

RECENT_VISITS = 8
RECENT_REASONS = 4
REASON_CHARS = 120


@dataclass(slots=True)
class PromptRecord:
    visits: int = 0
    attempts: int = 0
    passes: int = 0
    errors: int = 0
    zero_variance_visits: int = 0
    solved_streak: int = 0
    unsolved_streak: int = 0
    zero_variance_streak: int = 0
    last_pass_rate: float | None = None
    first_seen: float = 0.0
    last_seen: float = 0.0
    # (time, pass rate or NaN) pairs, flattened, oldest first: a tuple of floats is the
    # smallest Python holds them in.
    recent: tuple[float, ...] = ()
    # (time, reward or NaN, reason) triples, flattened, oldest first.
    reasons: tuple[float | str, ...] = ()

    def visit(
        self,
        rewards: Sequence[float | None],
        threshold: float,
        now: float,
        reasons: Sequence[str | None] = (),
    ) -> None:
        scored = [r for r in rewards if r is not None]
        passed = sum(r >= threshold for r in scored)
        self.visits += 1
        self.attempts += len(rewards)
        self.passes += passed
        self.errors += len(rewards) - len(scored)
        self.first_seen = self.first_seen or now
        self.last_seen = now
        # The /v1/groups definition: a visit of error verdicts only has no variance either.
        zero_variance = is_zero_variance(rewards)
        self.zero_variance_visits += zero_variance
        self.zero_variance_streak = self.zero_variance_streak + 1 if zero_variance else 0
        rate = passed / len(scored) if scored else None
        self.recent = (*self.recent, now, math.nan if rate is None else rate)[-2 * RECENT_VISITS :]
        self._keep_reasons(rewards, reasons, now)
        if rate is None:
            # Only error verdicts: nothing was learned about the prompt's difficulty, so the
            # solved / unsolved streaks stand.
            return
        self.last_pass_rate = rate
        self.solved_streak = self.solved_streak + 1 if passed == len(scored) else 0
        self.unsolved_streak = self.unsolved_streak + 1 if passed == 0 else 0

    def _keep_reasons(
        self, rewards: Sequence[float | None], reasons: Sequence[str | None], now: float
    ) -> None:
        kept: list[float | str] = []
        for reward, reason in list(zip(rewards, reasons, strict=False))[-RECENT_REASONS:]:
            if reason:
                kept += [now, math.nan if reward is None else reward, reason[:REASON_CHARS]]
        if kept:
            self.reasons = (*self.reasons, *kept)[-3 * RECENT_REASONS :]

    @property
    def pass_rate(self) -> float | None:
        scored = self.attempts - self.errors
        return self.passes / scored if scored else None

    def stat(self, prompt_id: str) -> PromptStat:
        return PromptStat(
            prompt_id=prompt_id,
            visits=self.visits,
            attempts=self.attempts,
            passes=self.passes,
            errors=self.errors,
            pass_rate=self.pass_rate,
            error_rate=self.errors / self.attempts if self.attempts else 0.0,
            zero_variance_visits=self.zero_variance_visits,
            solved_streak=self.solved_streak,
            unsolved_streak=self.unsolved_streak,
            zero_variance_streak=self.zero_variance_streak,
            last_pass_rate=self.last_pass_rate,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
        )

    def detail(self, prompt_id: str) -> PromptDetail:
        visits = [
            PromptVisit(time=float(t), pass_rate=_number(r))
            for t, r in zip(self.recent[::2], self.recent[1::2], strict=True)
        ]
        reasons = [
            PromptReason(time=float(t), reward=_number(r), reason=str(why))
            for t, r, why in zip(self.reasons[::3], self.reasons[1::3], self.reasons[2::3], strict=True)
        ]
        return PromptDetail(**self.stat(prompt_id).model_dump(), recent_visits=visits, recent_reasons=reasons)

    def matches(self, kind: PromptFilter, last: int) -> bool:
        if kind is PromptFilter.always_solved:
            return self.solved_streak >= last
        if kind is PromptFilter.never_solved:
            return self.unsolved_streak >= last
        if kind is PromptFilter.zero_variance:
            return self.zero_variance_streak >= last
        return True


def _number(value: float | str) -> float | None:
    """A stored pass rate or reward: NaN stands for none."""
    number = float(value)
    return None if math.isnan(number) else number
