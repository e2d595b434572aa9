"""The verdict cache: a bounded LRU that counts its hits and misses."""

from __future__ import annotations

import threading

import pytest

from referee.judges import JudgeCache, VerdictCache


def test_least_recently_used_entries_go_first() -> None:
    cache = VerdictCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)  # over the bound: "b" goes
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, 1, 3)
    assert len(cache) == 2
    cache.put("a", 10)  # replacing refreshes, and does not grow the cache
    cache.put("d", 4)
    assert (cache.get("c"), cache.get("a"), cache.get("d"), len(cache)) == (None, 10, 4, 2)


def test_hits_and_misses_are_counted() -> None:
    cache: JudgeCache = VerdictCache(max_entries=10)
    assert isinstance(cache, VerdictCache) and cache.hit_rate() is None
    cache.put(("model", "v1", "response", "ref", None), {"score": 1.0})
    assert cache.get(("model", "v1", "response", "ref", None)) == {"score": 1.0}
    assert cache.get(("model", "v2", "response", "ref", None)) is None  # another template version
    assert cache.get(("model", "v1", "response", "ref", None)) is not None
    assert (cache.hits, cache.misses, cache.hit_rate()) == (2, 1, pytest.approx(2 / 3))


def test_none_is_never_stored_and_a_zero_bound_keeps_nothing() -> None:
    cache = VerdictCache(max_entries=3)
    cache.put("k", None)
    assert len(cache) == 0 and cache.get("k") is None
    empty = VerdictCache(max_entries=0)
    empty.put("k", 1)
    assert len(empty) == 0 and empty.get("k") is None and empty.misses == 1
    with pytest.raises(ValueError):
        VerdictCache(max_entries=-1)


def test_threads_never_push_it_past_its_bound_or_lose_counts() -> None:
    cache = VerdictCache(max_entries=50)

    def work(offset: int) -> None:
        for i in range(2000):
            cache.put((offset, i % 80), i)
            cache.get((offset, (i * 7) % 80))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 50 and cache.hits + cache.misses == 4 * 2000
