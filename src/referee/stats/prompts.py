"""One prompt's record: counters, three streaks ("visits in a row"), and a short history.

A filter like "solved the last K visits" needs no history (the streaks say it). The history
is for a person looking at one prompt: its latest `RECENT_VISITS` visits' times and pass
rates and its latest `RECENT_REASONS` verdict reasons, cut to `REASON_CHARS`. Times and
numbers are packed in bytes (12 a visit or reason), the reasons joined in one UTF-8 string:
Python floats and strings in tuples took twice the memory. Measured with tracemalloc: a
record is ≈ 0.53 KB after one visit, ≈ 0.64 KB with 8 visits' history, ≈ 1.05 KB with three
reasons of 100 characters besides (0.43 KB before it had a history); the record bounds of
`tracker.Statistics` bound them all.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from referee.models import PromptDetail, PromptFilter, PromptReason, PromptStat, PromptVisit
from referee.stats.buckets import is_zero_variance

RECENT_VISITS = 8
RECENT_REASONS = 3
REASON_CHARS = 100
# Reasons are kept as one UTF-8 string of bytes, separated by a character no reason keeps.
_SEPARATOR = "\x1f"
# One entry of a history: its Unix time and a number (a pass rate, a reward), NaN for none.
_ENTRY = struct.Struct("<df")


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
    # The latest visits (time, pass rate), packed `_ENTRY`s, oldest first.
    recent: bytes = b""
    # The latest verdict reasons, oldest first (joined by _SEPARATOR, UTF-8), and their
    # (time, reward) packed like the visits.
    reasons: bytes = b""
    reason_marks: bytes = b""

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
        self.recent = (self.recent + _pack(now, rate))[-_ENTRY.size * RECENT_VISITS :]
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
        kept = [(r, why) for r, why in zip(rewards, reasons, strict=False) if why][-RECENT_REASONS:]
        if kept:
            said = [why for _, _, why in self.recent_reasons()] + [why for _, why in kept]
            self.reasons = _join(said[-RECENT_REASONS:])
            marks = b"".join(_pack(now, r) for r, _ in kept)
            self.reason_marks = (self.reason_marks + marks)[-_ENTRY.size * RECENT_REASONS :]

    def recent_visits(self) -> list[tuple[float, float | None]]:
        return _unpack(self.recent)

    def recent_reasons(self) -> list[tuple[float, float | None, str]]:
        said = self.reasons.decode().split(_SEPARATOR) if self.reasons else []
        return [(t, r, why) for (t, r), why in zip(_unpack(self.reason_marks), said, strict=True)]

    def set_history(
        self, visits: Iterable[tuple[float, float | None]], reasons: Iterable[tuple[float, float | None, str]]
    ) -> None:
        """The history read back from the store."""
        self.recent = b"".join(_pack(t, r) for t, r in visits)[-_ENTRY.size * RECENT_VISITS :]
        kept = list(reasons)[-RECENT_REASONS:]
        self.reasons = _join([why for _, _, why in kept])
        self.reason_marks = b"".join(_pack(t, r) for t, r, _ in kept)

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
        return PromptDetail(
            **self.stat(prompt_id).model_dump(),
            recent_visits=[PromptVisit(time=t, pass_rate=r) for t, r in self.recent_visits()],
            recent_reasons=[
                PromptReason(time=t, reward=r, reason=why) for t, r, why in self.recent_reasons()
            ],
        )

    def matches(self, kind: PromptFilter, last: int) -> bool:
        if kind is PromptFilter.always_solved:
            return self.solved_streak >= last
        if kind is PromptFilter.never_solved:
            return self.unsolved_streak >= last
        if kind is PromptFilter.zero_variance:
            return self.zero_variance_streak >= last
        return True


def _pack(time: float, number: float | None) -> bytes:
    return _ENTRY.pack(time, math.nan if number is None else number)


def _unpack(packed: bytes) -> list[tuple[float, float | None]]:
    return [(t, None if math.isnan(n) else n) for t, n in _ENTRY.iter_unpack(packed)]


def _join(reasons: Sequence[str]) -> bytes:
    return _SEPARATOR.join(why.replace(_SEPARATOR, " ")[:REASON_CHARS] for why in reasons).encode()
