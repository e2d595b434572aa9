"""Statistics survive a restart: flushed to SQLite, read back; a failed flush is retried."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from referee.models import Traffic, Verdict, VerdictStatus
from referee.registered.store import SQLiteStore
from referee.settings import Settings
from referee.stats import Statistics, StatsStore, counted_as
from referee.stats.buckets import latency_bucket
from referee.stats.persistence import persisted
from referee.stats.store import SCHEMA_VERSION, StatsFileTaken


def fill(stats: Statistics) -> None:
    for prompt, rewards in (("p1", [1.0, 0.0]), ("p2", [1.0, 1.0]), ("p2", [1.0, 1.0]), ("p3", [None, 0.0])):
        stats.record_visit("key:abc", prompt, rewards, [f"reason of {prompt}"] * len(rewards))
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
    after.record_visit("key:abc", "p2", [1.0, 1.0])
    p2 = next(p for p in after.prompt_page("key:abc").prompts if p.prompt_id == "p2")
    assert p2.visits == 3 and p2.solved_streak == 3
    reopened.close()


def test_only_the_newest_prompts_are_loaded_and_evicted_ones_are_deleted(tmp_path: Path) -> None:
    stats = Statistics(max_prompts=2)
    store = StatsStore(tmp_path / "stats.db")
    for prompt in ("a", "b"):
        stats.record_visit("o", prompt, [1.0])
    store.flush(stats)
    stats.record_visit("o", "c", [1.0])  # evicts "a"
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
        stats.record_visit("key-1", f"k1-{i}", [1.0])
    for i in range(50):
        stats.record_visit("key-2", f"k2-{i}", [0.0])
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


# The file as the service before the dashboard's history wrote it (schema version 0).
V0_SCHEMA = """
CREATE TABLE prompts (
    owner TEXT NOT NULL, prompt_id TEXT NOT NULL,
    visits INTEGER, attempts INTEGER, passes INTEGER, errors INTEGER,
    zero_variance_visits INTEGER, solved_streak INTEGER, unsolved_streak INTEGER,
    zero_variance_streak INTEGER, last_pass_rate REAL, first_seen REAL, last_seen REAL,
    PRIMARY KEY (owner, prompt_id)
);
CREATE INDEX prompts_last_seen ON prompts (last_seen);
CREATE TABLE verifier_minutes (
    verifier TEXT NOT NULL, minute INTEGER NOT NULL,
    verdicts INTEGER, errors INTEGER, passes INTEGER, score_sum REAL, max_ms REAL,
    latency TEXT,
    PRIMARY KEY (verifier, minute)
);
"""


def test_a_file_of_the_previous_schema_is_migrated_with_its_records(tmp_path: Path) -> None:
    now = time.time()
    minute = int(now // 60) * 60
    path = tmp_path / "stats.db"
    old = sqlite3.connect(path)
    old.executescript(V0_SCHEMA)
    old.execute(
        "INSERT INTO prompts VALUES ('key:abc', 'p1', 3, 12, 6, 1, 1, 0, 0, 1, 0.5, ?, ?)", (now - 100, now)
    )
    old.execute(
        "INSERT INTO verifier_minutes VALUES ('exact', ?, 4, 1, 2, 2.0, 9.5, ?)",
        (minute, json.dumps({str(latency_bucket(3.0)): 3, str(latency_bucket(9.5)): 1})),
    )
    old.commit()
    old.close()

    stats = Statistics()
    store = StatsStore(path)
    store.load_into(stats)
    (p1,) = stats.prompt_page("key:abc").prompts
    assert (p1.visits, p1.attempts, p1.passes, p1.errors, p1.last_pass_rate) == (3, 12, 6, 1, 0.5)
    (exact,) = stats.verifier_page(60).verifiers
    assert (exact.verdicts, exact.errors, exact.mean_score, exact.max_ms) == (4, 1, pytest.approx(2 / 3), 9.5)
    assert exact.versions == []  # minutes of version 0 name no version
    # Recording and flushing go on in the new schema; a restart reads both back.
    stats.record_visit("key:abc", "p1", [1.0, 0.0], ["right", "wrong"])
    stats.observe_group("exact", "exact@1", [1.0, 0.0])
    stats.observe_http(503)
    store.flush(stats)
    store.close()
    again = Statistics()
    reopened = StatsStore(path)
    reopened.load_into(again)
    assert again.prompt_detail("key:abc", "p1") == stats.prompt_detail("key:abc", "p1")
    assert again.verifier_page(60) == stats.verifier_page(60)
    assert again.http_page(60).refused == 1
    reopened.close()
    version = sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION == 1


def test_a_prompts_history_survives_a_restart(tmp_path: Path) -> None:
    stats = Statistics()
    stats.record_visit("o", "p", [None, None], ["sandbox down", None])
    stats.record_visit("o", "p", [1.0, 0.0], [None, "expected 42"])
    with counted_as(Traffic.audit):
        stats.observe_verdict(Verdict(score=1.0, status=VerdictStatus.ok, verifier="exact@1"), "exact")
    store = StatsStore(tmp_path / "stats.db")
    store.flush(stats)
    loaded = Statistics()
    store.load_into(loaded)
    detail = loaded.prompt_detail("o", "p")
    assert detail == stats.prompt_detail("o", "p")
    assert detail is not None and [v.pass_rate for v in detail.recent_visits] == [None, 0.5]
    assert [(r.reward, r.reason) for r in detail.recent_reasons] == [
        (None, "sandbox down"),
        (0.0, "expected 42"),
    ]
    assert loaded.verifier_page(60).verifiers == []
    assert loaded.verifier_page(60, traffic=Traffic.audit) == stats.verifier_page(60, traffic=Traffic.audit)


def test_a_statistics_file_is_held_by_one_store_at_a_time(tmp_path: Path) -> None:
    """Two services flushing one file would overwrite each other's records: the second store
    on a path is refused while the first is open (a lock the kernel drops with its process)."""
    first = StatsStore(tmp_path / "s.db")
    with pytest.raises(StatsFileTaken, match="used by another running service"):
        StatsStore(tmp_path / "s.db")
    first.close()
    StatsStore(tmp_path / "s.db").close()  # free again once closed


async def test_a_registry_named_like_a_statistics_file_is_never_written_as_one(tmp_path: Path) -> None:
    """`referee-stats.db` is the statistics file of a registry `referee.db`, and may also be
    another service's registry: a file holding other tables is refused like a taken one (the
    service then takes its own file, by its port) and left as it was."""
    registry = SQLiteStore(tmp_path / "referee-stats.db")
    registry.add("kept.type", "declarative", "d1", {"comparator": "exact"}, None, max_names=10)
    registry.close()
    before = (tmp_path / "referee-stats.db").read_bytes()
    with pytest.raises(StatsFileTaken, match="not a statistics file"):
        StatsStore(tmp_path / "referee-stats.db")
    assert (tmp_path / "referee-stats.db").read_bytes() == before
    settings = Settings(registry={"db_path": tmp_path / "referee.db"}, service={"port": 8123})
    async with persisted(Statistics(), settings.stats_paths(), every_s=60) as store:
        assert store is not None and store.path == tmp_path / "referee-stats-8123.db"
    reopened = SQLiteStore(tmp_path / "referee-stats.db")
    assert reopened.get("kept.type") is not None
    reopened.close()
