"""Rolling statistics of what the service judges: per prompt, and per verifier and minute.

Both are bounded. Prompt records are kept per caller (owner), least recently seen first, in
an ordered dict each: a caller's new prompts beyond `max_prompts_per_key` evict that caller's
oldest, never another's; beyond `max_prompts` over all callers (the memory bound) the oldest
of the caller holding the most go, so a caller that floods the table evicts its own records
first (`stats.prompts.PromptRecord`: counters, streaks, a short history).

Verifier statistics are one bucket (`stats.buckets.MinuteBucket`) per series and minute, kept
for `window_minutes`; a series is (traffic, verifier, version): training traffic apart from
audits and registrations (`stats.traffic`), each `name@version` apart, so a page can sum the
versions of a verifier or list them. At most `max_verifiers` series are tracked. The HTTP
answers of the API get a bucket per minute as well (the health panel's 4xx, 5xx and 503s).

Recording is a few dictionary updates under a lock (the observer is called from the event
loop and from worker-result callbacks alike); reading builds pydantic pages. Persistence is
`stats.store.StatsStore`: it takes the records changed since the last flush (`take_dirty`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from referee.models import (
    Histogram,
    HttpStat,
    PromptDetail,
    PromptFilter,
    PromptStat,
    PromptStatsPage,
    Traffic,
    Verdict,
    VerifierStatsPage,
)
from referee.stats.buckets import HttpBucket, MinuteBucket, copy_bucket, is_zero_variance
from referee.stats.prompts import PromptRecord
from referee.stats.traffic import current_traffic
from referee.stats.views import ReplicaHttp, ReplicaMinute, http_page, verifier_page

DIFFICULTY_BINS = 10

PromptKey = tuple[str, str]  # (owner label, prompt_id)
SeriesKey = tuple[str, str, str]  # (traffic, verifier name, name@version or "")
MinuteKey = tuple[str, str, str, int]  # a series' minute


@dataclass
class Dirty:
    """What changed since the last flush: copies, so that the store writes outside the lock."""

    prompts: list[tuple[PromptKey, PromptRecord]]
    evicted: list[PromptKey]
    minutes: list[tuple[MinuteKey, MinuteBucket]]
    http: list[tuple[int, HttpBucket]]
    oldest_minute: int  # minutes before this one are outside the window


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
        self._series: dict[SeriesKey, dict[int, MinuteBucket]] = {}
        self._http: dict[int, HttpBucket] = {}
        self._dirty_prompts: set[PromptKey] = set()
        self._evicted: set[PromptKey] = set()
        self._dirty_minutes: set[MinuteKey] = set()
        self._dirty_http: set[int] = set()

    def _minute(self) -> int:
        """The start of the current minute (Unix time)."""
        return int(self.clock() // 60) * 60

    def _oldest_minute(self, minutes: int) -> int:
        """The first minute of a window of `minutes` ending with the current one."""
        return self._minute() - 60 * (minutes - 1)

    # ---- recording -----------------------------------------------------------------------

    def _bucket(self, key: SeriesKey, minute: int) -> MinuteBucket | None:
        """The series' bucket of `minute`, made if need be (lock held); None past the bound."""
        minutes = self._series.get(key)
        if minutes is None:
            if len(self._series) >= self.max_verifiers:
                return None  # the bound: a flood of one-off names must not grow memory
            minutes = self._series[key] = {}
        bucket = minutes.get(minute)
        if bucket is None:
            bucket = minutes[minute] = MinuteBucket()
            self._expire(minutes, minute)
        self._dirty_minutes.add((*key, minute))
        return bucket

    def observe_verdict(self, verdict: Verdict, verifier: str) -> None:
        """One verdict of `verifier` (`verdict.verifier` is its `name@version`), counted as the
        traffic its context says (`stats.traffic`)."""
        minute = self._minute()
        key = (current_traffic(), verifier, verdict.verifier)
        with self._lock:
            bucket = self._bucket(key, minute)
            if bucket is not None:
                bucket.add(verdict, self.pass_threshold)

    def observe_group(self, verifier: str, version: str, rewards: Sequence[float | None]) -> None:
        """One scored group judged by `verifier` (`version`: its `name@version`, or "" when
        unknown, as for a component of a weighted group)."""
        zero_variance = is_zero_variance(rewards)
        minute = self._minute()
        with self._lock:
            bucket = self._bucket((current_traffic(), verifier, version), minute)
            if bucket is not None:
                bucket.add_group(zero_variance)

    def observe_http(self, status: int) -> None:
        """One HTTP answer of the API."""
        minute = self._minute()
        with self._lock:
            bucket = self._http.get(minute)
            if bucket is None:
                bucket = self._http[minute] = HttpBucket()
                self._expire(self._http, minute)
            bucket.add(status)
            self._dirty_http.add(minute)

    def _expire(self, minutes: dict[int, MinuteBucket] | dict[int, HttpBucket], now_minute: int) -> None:
        oldest = now_minute - 60 * (self.window_minutes - 1)
        for minute in [m for m in minutes if m < oldest]:
            del minutes[minute]

    def record_visit(
        self,
        owner: str,
        prompt_id: str,
        rewards: Sequence[float | None],
        reasons: Sequence[str | None] = (),
    ) -> None:
        """One scored group of `prompt_id` for `owner` (a caller's label: prompt ids are theirs);
        `reasons`: its verdicts' reasons, one per reward."""
        key = (owner, prompt_id)
        now = self.clock()
        with self._lock:
            record = self._record(key)
            if record is None:
                record = self._insert(key, PromptRecord())
            else:
                self._prompts[owner].move_to_end(prompt_id)
            record.visit(rewards, self.pass_threshold, now, reasons)
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

    def prompt_detail(self, owner: str, prompt_id: str) -> PromptDetail | None:
        """One of `owner`'s prompts with its recent visits and reasons; None if not tracked."""
        with self._lock:
            record = self._record((owner, prompt_id))
            return None if record is None else record.detail(prompt_id)

    def _window(self, minutes: int) -> tuple[int, int]:
        """`minutes` bounded by the window kept, and its first minute."""
        minutes = max(1, min(minutes, self.window_minutes))
        return minutes, self._oldest_minute(minutes)

    def verifier_page(
        self, minutes: int = 60, step_minutes: int = 1, traffic: Traffic = Traffic.training
    ) -> VerifierStatsPage:
        """Each verifier of `traffic` over the last `minutes` (never beyond the window kept),
        its series in steps of `step_minutes`, and its versions."""
        minutes, oldest = self._window(minutes)
        return verifier_page(self.rows(oldest)[0], minutes, step_minutes, traffic)

    def http_page(self, minutes: int = 60, step_minutes: int = 1) -> HttpStat:
        """The API's HTTP answers over the last `minutes`, in steps of `step_minutes`."""
        minutes, oldest = self._window(minutes)
        return http_page(self.rows(oldest)[1], step_minutes)

    def rows(self, oldest: int, replica: str = "") -> tuple[list[ReplicaMinute], list[ReplicaHttp]]:
        """Copies of the verifier and HTTP minutes from `oldest` on, tagged with `replica`
        (copied under the lock, merged into pages outside it)."""
        with self._lock:
            # A series idle since keeps its expired minutes until its next entry.
            minutes = [
                (replica, (*key, m), copy_bucket(b))
                for key, buckets in self._series.items()
                for m, b in buckets.items()
                if m >= oldest
            ]
            http = [(replica, m, replace(b)) for m, b in self._http.items() if m >= oldest]
        return minutes, http

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
                (k, copy_bucket(self._series[k[:3]][k[3]]))
                for k in self._dirty_minutes
                if k[3] in self._series.get(k[:3], {})
            ]
            http = [(m, replace(self._http[m])) for m in self._dirty_http if m in self._http]
            evicted = list(self._evicted)
            self._dirty_prompts.clear()
            self._dirty_minutes.clear()
            self._dirty_http.clear()
            self._evicted.clear()
        oldest = self._oldest_minute(self.window_minutes)
        return Dirty(prompts, evicted, minutes, http, oldest)

    def restore_dirty(self, dirty: Dirty) -> None:
        """A flush failed: mark its records changed again, so the next flush writes them."""
        with self._lock:
            self._dirty_prompts.update(k for k, _ in dirty.prompts)
            self._dirty_minutes.update(k for k, _ in dirty.minutes)
            self._dirty_http.update(m for m, _ in dirty.http)
            self._evicted.update(k for k in dirty.evicted if self._record(k) is None)

    def load(
        self,
        prompts: Iterable[tuple[PromptKey, PromptRecord]],
        minutes: Iterable[tuple[MinuteKey, MinuteBucket]],
        http: Iterable[tuple[int, HttpBucket]] = (),
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
            for (kind, name, version, minute), bucket in minutes:
                if minute < oldest:
                    continue
                series = self._series.get((kind, name, version))
                if series is None:
                    if len(self._series) >= self.max_verifiers:
                        continue
                    series = self._series[(kind, name, version)] = {}
                series.setdefault(minute, MinuteBucket()).merge(bucket)
            for minute, counts in http:
                if minute >= oldest:
                    self._http.setdefault(minute, HttpBucket()).merge(counts)
