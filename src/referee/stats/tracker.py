"""Rolling statistics of what the service judges: per prompt, and per verifier and minute.

Both are bounded. Prompt records are kept per caller (owner), least recently seen first, in
an ordered dict each: a caller's new prompts beyond `max_prompts_per_key` evict that caller's
oldest, never another's; beyond `max_prompts` over all callers (the memory bound) the oldest
of the caller holding the most go, so a caller that floods the table evicts its own records
first. A record is a handful of counters and three streaks ("visits in a row"), so a filter
like "solved the last K visits" needs no history of visits. Verifier statistics are one bucket per verifier and minute, kept for
`window_minutes`, with a sparse log-scale latency histogram (quantiles within 5%).

Recording is a few dictionary updates under a lock (the observer is called from the event
loop and from worker-result callbacks alike); reading builds pydantic pages. Persistence is
`stats.store.StatsStore`: it takes the records changed since the last flush (`take_dirty`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from referee.models import (
    Histogram,
    PromptFilter,
    PromptStat,
    PromptStatsPage,
    Verdict,
    VerdictStatus,
    VerifierMinute,
    VerifierStat,
    VerifierStatsPage,
)

# Latency buckets: bucket i > 0 holds (FLOOR * RATIO**(i-1), FLOOR * RATIO**i] ms; reporting the
# upper edge overestimates a quantile by at most RATIO - 1 = 5%.
LATENCY_FLOOR_MS = 0.01
LATENCY_RATIO = 1.05
_LOG_RATIO = math.log(LATENCY_RATIO)
DIFFICULTY_BINS = 10


def latency_bucket(ms: float) -> int:
    if ms <= LATENCY_FLOOR_MS:
        return 0
    return math.ceil(math.log(ms / LATENCY_FLOOR_MS) / _LOG_RATIO - 1e-9)


def bucket_ms(index: int) -> float:
    return LATENCY_FLOOR_MS * LATENCY_RATIO**index


def quantile_ms(histogram: dict[int, int], q: float) -> float | None:
    """The q-quantile of a latency histogram (the upper edge of the bucket it falls in)."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index in sorted(histogram):
        seen += histogram[index]
        if seen >= rank:
            return round(bucket_ms(index), 3)
    raise AssertionError("unreachable: rank <= total")


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

    def visit(
        self, rewards: Sequence[float | None], zero_variance: bool, threshold: float, now: float
    ) -> None:
        scored = [r for r in rewards if r is not None]
        passed = sum(r >= threshold for r in scored)
        self.visits += 1
        self.attempts += len(rewards)
        self.passes += passed
        self.errors += len(rewards) - len(scored)
        self.first_seen = self.first_seen or now
        self.last_seen = now
        if not scored:
            # Only error verdicts: nothing was learned about the prompt, so the streaks stand.
            return
        self.last_pass_rate = passed / len(scored)
        self.solved_streak = self.solved_streak + 1 if passed == len(scored) else 0
        self.unsolved_streak = self.unsolved_streak + 1 if passed == 0 else 0
        self.zero_variance_visits += zero_variance
        self.zero_variance_streak = self.zero_variance_streak + 1 if zero_variance else 0

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

    def matches(self, kind: PromptFilter, last: int) -> bool:
        if kind is PromptFilter.always_solved:
            return self.solved_streak >= last
        if kind is PromptFilter.never_solved:
            return self.unsolved_streak >= last
        if kind is PromptFilter.zero_variance:
            return self.zero_variance_streak >= last
        return True


@dataclass(slots=True)
class MinuteBucket:
    verdicts: int = 0
    errors: int = 0
    passes: int = 0
    score_sum: float = 0.0
    max_ms: float = 0.0
    latency: dict[int, int] = field(default_factory=dict)

    def add(self, verdict: Verdict, threshold: float) -> None:
        self.verdicts += 1
        if verdict.status is VerdictStatus.error or verdict.score is None:
            self.errors += 1
        else:
            self.score_sum += verdict.score
            self.passes += verdict.score >= threshold
        index = latency_bucket(verdict.duration_ms)
        self.latency[index] = self.latency.get(index, 0) + 1
        self.max_ms = max(self.max_ms, verdict.duration_ms)

    def merge(self, other: MinuteBucket) -> None:
        self.verdicts += other.verdicts
        self.errors += other.errors
        self.passes += other.passes
        self.score_sum += other.score_sum
        self.max_ms = max(self.max_ms, other.max_ms)
        for index, count in other.latency.items():
            self.latency[index] = self.latency.get(index, 0) + count

    def view(self, minute: int) -> VerifierMinute:
        scored = self.verdicts - self.errors
        return VerifierMinute(
            minute=minute,
            verdicts=self.verdicts,
            errors=self.errors,
            pass_rate=self.passes / scored if scored else None,
            mean_score=self.score_sum / scored if scored else None,
            p50_ms=quantile_ms(self.latency, 0.5),
            p99_ms=quantile_ms(self.latency, 0.99),
        )


PromptKey = tuple[str, str]  # (owner label, prompt_id)
MinuteKey = tuple[str, int]  # (verifier name, minute)


@dataclass
class Dirty:
    """What changed since the last flush: copies, so that the store writes outside the lock."""

    prompts: list[tuple[PromptKey, PromptRecord]]
    evicted: list[PromptKey]
    minutes: list[tuple[MinuteKey, MinuteBucket]]
    oldest_minute: int  # minutes before this one are outside the window


def _copy_minute(bucket: MinuteBucket) -> MinuteBucket:
    copy = MinuteBucket()
    copy.merge(bucket)
    return copy


class Statistics:
    def __init__(
        self,
        *,
        max_prompts: int = 100_000,
        max_prompts_per_key: int | None = None,
        window_minutes: int = 1440,
        max_verifiers: int = 1000,
        pass_threshold: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_prompts = max_prompts
        self.max_prompts_per_key = min(max_prompts, max_prompts_per_key or max_prompts)
        self.window_minutes = window_minutes
        self.max_verifiers = max_verifiers
        self.pass_threshold = pass_threshold
        self.clock = clock
        self._lock = threading.Lock()
        # owner -> prompt_id -> record, least recently seen first; `_count` over all owners.
        self._prompts: dict[str, OrderedDict[str, PromptRecord]] = {}
        self._count = 0
        self._verifiers: dict[str, dict[int, MinuteBucket]] = {}
        self._dirty_prompts: set[PromptKey] = set()
        self._evicted: set[PromptKey] = set()
        self._dirty_minutes: set[MinuteKey] = set()

    def _minute(self) -> int:
        """The start of the current minute (Unix time)."""
        return int(self.clock() // 60) * 60

    def _oldest_minute(self, minutes: int) -> int:
        """The first minute of a window of `minutes` ending with the current one."""
        return self._minute() - 60 * (minutes - 1)

    # ---- recording -----------------------------------------------------------------------

    def observe_verdict(self, verdict: Verdict, verifier: str) -> None:
        minute = self._minute()
        with self._lock:
            minutes = self._verifiers.get(verifier)
            if minutes is None:
                if len(self._verifiers) >= self.max_verifiers:
                    return  # the bound: a flood of one-off names must not grow memory
                minutes = self._verifiers[verifier] = {}
            bucket = minutes.get(minute)
            if bucket is None:
                bucket = minutes[minute] = MinuteBucket()
                self._expire(minutes, minute)
            bucket.add(verdict, self.pass_threshold)
            self._dirty_minutes.add((verifier, minute))

    def _expire(self, minutes: dict[int, MinuteBucket], now_minute: int) -> None:
        oldest = now_minute - 60 * (self.window_minutes - 1)
        for minute in [m for m in minutes if m < oldest]:
            del minutes[minute]

    def record_visit(
        self, owner: str, prompt_id: str, rewards: Sequence[float | None], zero_variance: bool
    ) -> None:
        """One scored group of `prompt_id` for `owner` (a caller's label: prompt ids are theirs)."""
        key = (owner, prompt_id)
        now = self.clock()
        with self._lock:
            record = self._record(key)
            if record is None:
                record = self._insert(key, PromptRecord())
            else:
                self._prompts[owner].move_to_end(prompt_id)
            record.visit(rewards, zero_variance, self.pass_threshold, now)
            self._dirty_prompts.add(key)

    def _record(self, key: PromptKey) -> PromptRecord | None:
        owned = self._prompts.get(key[0])
        return None if owned is None else owned.get(key[1])

    def _insert(self, key: PromptKey, record: PromptRecord) -> PromptRecord:
        """Add `key` as its owner's most recent record, then apply the bounds (lock held)."""
        owner, prompt_id = key
        owned = self._prompts.setdefault(owner, OrderedDict())
        owned[prompt_id] = record
        self._count += 1
        self._evicted.discard(key)
        while len(owned) > self.max_prompts_per_key:
            self._evict_oldest(owner)
        while self._count > self.max_prompts:
            self._evict_oldest(self._largest_owner(owner))
        return record

    def _largest_owner(self, adding: str) -> str:
        """Who pays for the global bound: the owner holding the most; on a tie the one adding
        (a caller reaching an equal share evicts its own records, not another's), unless its
        only record is the one being added."""

        def weight(owner: str) -> tuple[int, bool, bool]:
            held = len(self._prompts[owner])
            return held, owner == adding and held > 1, owner != adding

        return max(self._prompts, key=weight)

    def _evict_oldest(self, owner: str) -> None:
        owned = self._prompts[owner]
        prompt_id, _ = owned.popitem(last=False)
        if not owned:
            del self._prompts[owner]
        self._count -= 1
        key = (owner, prompt_id)
        self._dirty_prompts.discard(key)
        self._evicted.add(key)

    # ---- reading -------------------------------------------------------------------------

    def prompt_page(
        self,
        owner: str,
        kind: PromptFilter = PromptFilter.all,
        last: int = 1,
        limit: int = 100,
        offset: int = 0,
    ) -> PromptStatsPage:
        edges = [i / DIFFICULTY_BINS for i in range(DIFFICULTY_BINS + 1)]
        counts = [0] * DIFFICULTY_BINS
        tracked = visits = flat = matched = 0
        page: list[PromptStat] = []
        with self._lock:
            # Most recently seen first: the ordered dict's end.
            for prompt_id, record in reversed(self._prompts.get(owner, {}).items()):
                tracked += 1
                visits += record.visits
                flat += record.zero_variance_visits
                rate = record.pass_rate
                if rate is not None:
                    counts[min(int(rate * DIFFICULTY_BINS), DIFFICULTY_BINS - 1)] += 1
                if record.matches(kind, last):
                    if offset <= matched < offset + limit:
                        page.append(record.stat(prompt_id))
                    matched += 1
        return PromptStatsPage(
            prompts=page,
            matched=matched,
            tracked=tracked,
            visits=visits,
            zero_variance_share=flat / visits if visits else None,
            pass_rate_histogram=Histogram(edges=edges, counts=counts),
            pass_threshold=self.pass_threshold,
            max_prompts=self.max_prompts,
            max_prompts_per_key=self.max_prompts_per_key,
        )

    def verifier_page(self, minutes: int = 60) -> VerifierStatsPage:
        # Never beyond the window kept (a verifier idle since keeps its expired minutes until
        # its next verdict).
        minutes = min(minutes, self.window_minutes)
        oldest = self._oldest_minute(minutes)
        stats = []
        with self._lock:
            window = {
                name: sorted((m, b) for m, b in buckets.items() if m >= oldest)
                for name, buckets in self._verifiers.items()
            }
            for name, rows in sorted(window.items()):
                if not rows:
                    continue
                total = MinuteBucket()
                for _, bucket in rows:
                    total.merge(bucket)
                summary = total.view(oldest)
                stats.append(
                    VerifierStat(
                        verifier=name,
                        verdicts=total.verdicts,
                        errors=total.errors,
                        error_rate=total.errors / total.verdicts,
                        pass_rate=summary.pass_rate,
                        mean_score=summary.mean_score,
                        p50_ms=summary.p50_ms,
                        p99_ms=summary.p99_ms,
                        max_ms=round(total.max_ms, 3),
                        series=[bucket.view(minute) for minute, bucket in rows],
                    )
                )
        return VerifierStatsPage(minutes=minutes, verifiers=stats)

    def prompt_count(self, owner: str | None = None) -> int:
        """Records kept, over all owners or for `owner`."""
        if owner is None:
            return self._count
        return len(self._prompts.get(owner, ()))

    # ---- persistence (stats.store) -------------------------------------------------------

    def take_dirty(self) -> Dirty:
        with self._lock:
            prompts = [
                (k, replace(record)) for k in self._dirty_prompts if (record := self._record(k)) is not None
            ]
            minutes = [
                (k, _copy_minute(self._verifiers[k[0]][k[1]]))
                for k in self._dirty_minutes
                if k[1] in self._verifiers.get(k[0], {})
            ]
            evicted = list(self._evicted)
            self._dirty_prompts.clear()
            self._dirty_minutes.clear()
            self._evicted.clear()
        oldest = self._oldest_minute(self.window_minutes)
        return Dirty(prompts, evicted, minutes, oldest)

    def restore_dirty(self, dirty: Dirty) -> None:
        """A flush failed: mark its records changed again, so the next flush writes them."""
        with self._lock:
            self._dirty_prompts.update(k for k, _ in dirty.prompts)
            self._dirty_minutes.update(k for k, _ in dirty.minutes)
            self._evicted.update(k for k in dirty.evicted if self._record(k) is None)

    def load(
        self,
        prompts: Iterable[tuple[PromptKey, PromptRecord]],
        minutes: Iterable[tuple[MinuteKey, MinuteBucket]],
    ) -> None:
        """Records read back at start-up; `prompts` least recently seen first. The bounds apply
        as when they were recorded (records beyond them are marked evicted, so the next flush
        deletes them)."""
        oldest = self._oldest_minute(self.window_minutes)
        with self._lock:
            for key, record in prompts:
                if (owned := self._prompts.get(key[0])) is not None and key[1] in owned:
                    owned[key[1]] = record
                    owned.move_to_end(key[1])
                else:
                    self._insert(key, record)
            for (name, minute), bucket in minutes:
                if minute < oldest:
                    continue
                buckets = self._verifiers.get(name)
                if buckets is None:
                    if len(self._verifiers) >= self.max_verifiers:
                        continue
                    buckets = self._verifiers[name] = {}
                buckets.setdefault(minute, MinuteBucket()).merge(bucket)
