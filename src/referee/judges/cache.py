"""The verdict cache: parsed judge outcomes kept in memory, least recently used first out.

A GRPO group often holds the same response several times, and a run re-scores the same
(response, reference) pairs; a judge call costs a GPU's time, a cache hit nothing. The key is
built by the verifier from everything that determines the outcome (model, template version,
response, reference, criterion), so a hit is the answer the call would have given, up to the
judge's own sampling noise (temperature 0 and a fixed seed by default).

Thread-safe (one lock around each operation): judge verifiers run in the event loop, but a
lock costs nothing next to a model call, and the metrics are read from the scrape's thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class VerdictCache:
    """A bounded LRU implementing `JudgeCache`; `max_entries` 0 keeps nothing (every get is
    a miss). `None` is "not cached", so it is never stored."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            try:
                value = self._entries[key]
            except KeyError:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: Any) -> None:
        if value is None or self.max_entries == 0:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def hit_rate(self) -> float | None:
        """Hits over lookups; None before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None
