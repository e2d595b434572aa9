"""Statistics survive a restart: flushed to SQLite, read back; a failed flush is retried."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from referee.models import Verdict, VerdictStatus
from referee.stats import Statistics, StatsStore


def fill(stats: Statistics) -> None:
    for prompt, rewards in (("p1", [1.0, 0.0]), ("p2", [1.0, 1.0]), ("p2", [1.0, 1.0]), ("p3", [None, 0.0])):
        stats.record_visit(
            "key:abc", prompt, rewards, zero_variance=len({r for r in rewards if r is not None}) == 1
        )
    for score, ms in ((1.0, 3.0), (0.0, 12.0), (None, 250.0)):
        status = VerdictStatus.ok if score is not None else VerdictStatus.error
        stats.observe_verdict(
            Verdict(score=score, status=status, verifier="exact@1", duration_ms=ms), "exact"
        )


def test_a_flush_and_a_load_give_back_the_same_pages(tmp_path: Path) -> None:
    before = Statistics()
    fill(before)
    store = StatsStore(tmp_path / "stats.db")
    assert store.flush(before) == 3 + 1
    assert store.flush(before) == 0  # nothing changed since
    store.close()

    after = Statistics()
    reopened = StatsStore(tmp_path / "stats.db")
    reopened.load_into(after)
    assert after.prompt_page("key:abc") == before.prompt_page("key:abc")
    assert after.verifier_page(60) == before.verifier_page(60)
    # Recording goes on from the loaded records.
    after.record_visit("key:abc", "p2", [1.0, 1.0], zero_variance=True)
    p2 = next(p for p in after.prompt_page("key:abc").prompts if p.prompt_id == "p2")
    assert p2.visits == 3 and p2.solved_streak == 3
    reopened.close()


def test_only_the_newest_prompts_are_loaded_and_evicted_ones_are_deleted(tmp_path: Path) -> None:
    stats = Statistics(max_prompts=2)
    store = StatsStore(tmp_path / "stats.db")
    for prompt in ("a", "b"):
        stats.record_visit("o", prompt, [1.0], zero_variance=True)
    store.flush(stats)
    stats.record_visit("o", "c", [1.0], zero_variance=True)  # evicts "a"
    store.flush(stats)
    rows = sqlite3.connect(tmp_path / "stats.db").execute("SELECT prompt_id FROM prompts").fetchall()
    assert sorted(r[0] for r in rows) == ["b", "c"]
    smaller = Statistics(max_prompts=1)
    store.load_into(smaller)
    assert [p.prompt_id for p in smaller.prompt_page("o").prompts] == ["c"]


def test_a_failed_flush_is_written_by_the_next_one(tmp_path: Path) -> None:
    stats = Statistics()
    fill(stats)
    store = StatsStore(tmp_path / "stats.db")
    # Another connection holds the write lock: the flush fails (database is locked) ...
    blocker = sqlite3.connect(tmp_path / "stats.db", timeout=0)
    blocker.execute("BEGIN IMMEDIATE")
    store._db.execute("PRAGMA busy_timeout = 0")
    with pytest.raises(sqlite3.OperationalError):
        store.flush(stats)
    blocker.rollback()
    # ... and what it held is written by the next one.
    assert store.flush(stats) == 3 + 1
    loaded = Statistics()
    store.load_into(loaded)
    assert loaded.prompt_page("key:abc") == stats.prompt_page("key:abc")


def test_a_load_keeps_each_keys_own_prompts(tmp_path: Path) -> None:
    """The per-key picture survives a restart: one key's flood does not crowd out another's
    records when they are read back, and rows beyond a key's bound are deleted."""
    stats = Statistics(max_prompts=1000, max_prompts_per_key=1000)
    store = StatsStore(tmp_path / "stats.db")
    for i in range(5):
        stats.record_visit("key-1", f"k1-{i}", [1.0], zero_variance=True)
    for i in range(50):
        stats.record_visit("key-2", f"k2-{i}", [0.0], zero_variance=True)
    store.flush(stats)
    bounded = Statistics(max_prompts=20, max_prompts_per_key=10)
    store.load_into(bounded)
    assert {p.prompt_id for p in bounded.prompt_page("key-1").prompts} == {f"k1-{i}" for i in range(5)}
    assert {p.prompt_id for p in bounded.prompt_page("key-2").prompts} == {f"k2-{i}" for i in range(40, 50)}
    store.flush(bounded)
    rows = sqlite3.connect(tmp_path / "stats.db").execute(
        "SELECT owner, COUNT(*) FROM prompts GROUP BY owner"
    )
    assert dict(rows.fetchall()) == {"key-1": 5, "key-2": 10}
