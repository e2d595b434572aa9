"""SQLite store: versions, content addressing, history, quotas, concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from referee.registered.store import QuotaExceeded, SQLiteStore


def _add(store: SQLiteStore, name: str, digest: str, max_names: int = 100) -> tuple[int, bool]:
    stored, created = store.add(
        name, "declarative", digest, {"spec": {"d": digest}}, None, max_names=max_names
    )
    return stored.version, created


def test_missing_database_reads_empty_and_is_not_created(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sub" / "r.db")
    assert store.latest_active() == [] and store.get("x") is None and store.versions("x") == []
    assert not (tmp_path / "sub").exists()


def test_versions_digest_history_and_wal(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    assert _add(store, "t", "a") == (1, True)
    assert _add(store, "t", "a") == (1, False)  # same content as the latest: same version
    assert _add(store, "t", "b") == (2, True)
    assert _add(store, "t", "a") == (3, True)  # going back to old content is a new version
    assert store.get("t").version == 3 and store.get("t", 1).digest == "a"
    assert store.disable("t", 3) == [3]
    assert store.get("t").version == 2  # the latest *active* version
    assert store.disable("t") == [1, 2]
    assert store.get("t") is None and store.get("t", 2) is None
    assert [(v.version, v.active) for v in store.versions("t")] == [(1, False), (2, False), (3, False)]
    assert _add(store, "t", "a") == (4, True)  # numbers are never reused
    (mode,) = sqlite3.connect(tmp_path / "r.db").execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_quota_counts_active_names(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    _add(store, "a", "1", max_names=2)
    _add(store, "b", "1", max_names=2)
    assert _add(store, "a", "2", max_names=2) == (2, True)  # a new version of an active name is fine
    with pytest.raises(QuotaExceeded):
        _add(store, "c", "1", max_names=2)
    store.disable("b")
    assert _add(store, "c", "1", max_names=2) == (1, True)


def test_generation_moves_on_writes_from_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    mine, other = SQLiteStore(path), SQLiteStore(path)
    _add(mine, "a", "1")
    before = mine.generation()
    assert mine.generation() == before
    _add(other, "a", "2")
    assert mine.generation() != before
    assert mine.get("a").version == 2


def _writer(path: str, worker: int) -> None:
    store = SQLiteStore(path)
    for i in range(10):
        _add(store, "shared", f"{worker}-{i}")


def test_concurrent_writers_in_processes_and_threads_get_unique_versions(tmp_path: Path) -> None:
    path = str(tmp_path / "r.db")
    _add(SQLiteStore(path), "shared", "seed")  # create the schema once
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w)) for w in range(3)]
    threads = [threading.Thread(target=_writer, args=(path, 10 + w)) for w in range(3)]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    for t in threads:
        t.join(60)
    versions = SQLiteStore(path).versions("shared")
    assert [v.version for v in versions] == list(range(1, 62))
    assert len({v.digest for v in versions}) == 61
