"""Statistics on disk: one SQLite file, written by a periodic flush, read back at start-up.

The tracker keeps the truth in memory; this file only makes it survive a restart. A flush
writes the records changed since the previous one (upserts), deletes evicted prompts and
minutes outside the window, in one transaction. It runs in a thread (`asyncio.to_thread`),
never on the scoring path; a failed flush puts its records back as changed, so the next one
writes them (statistics are lost only if the service stops while the disk keeps failing).

The schema has a version (`PRAGMA user_version`). A file of an older version is migrated in
place when it is opened, in one transaction, its records kept (`_migrate_to_1`). All reads
and writes of the file are here, so another store (a database shared by replicas) has one
place to copy.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
from pathlib import Path

import structlog

from referee.models import Traffic
from referee.stats.buckets import HttpBucket, MinuteBucket
from referee.stats.prompts import PromptRecord
from referee.stats.tracker import Dirty, Statistics

log = structlog.get_logger(__name__)

SCHEMA_VERSION = 1
_VERIFIER_MINUTES = """
CREATE TABLE IF NOT EXISTS verifier_minutes (
    traffic TEXT NOT NULL, verifier TEXT NOT NULL, version TEXT NOT NULL, minute INTEGER NOT NULL,
    verdicts INTEGER, errors INTEGER, passes INTEGER, score_sum REAL, max_ms REAL,
    latency TEXT,  -- the sparse histogram: {"bucket": count}
    groups INTEGER NOT NULL DEFAULT 0, zero_variance_groups INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (traffic, verifier, version, minute)
)
"""
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS prompts (
    owner TEXT NOT NULL, prompt_id TEXT NOT NULL,
    visits INTEGER, attempts INTEGER, passes INTEGER, errors INTEGER,
    zero_variance_visits INTEGER, solved_streak INTEGER, unsolved_streak INTEGER,
    zero_variance_streak INTEGER, last_pass_rate REAL, first_seen REAL, last_seen REAL,
    recent TEXT NOT NULL DEFAULT '[]',   -- [time, pass rate or null, ...]
    reasons TEXT NOT NULL DEFAULT '[]',  -- [time, reward or null, reason, ...]
    PRIMARY KEY (owner, prompt_id)
);
CREATE INDEX IF NOT EXISTS prompts_last_seen ON prompts (last_seen);
CREATE INDEX IF NOT EXISTS prompts_owner_last_seen ON prompts (owner, last_seen);
CREATE TABLE IF NOT EXISTS http_minutes (
    minute INTEGER PRIMARY KEY,
    requests INTEGER, client_errors INTEGER, server_errors INTEGER, refused INTEGER
);
"""
    + _VERIFIER_MINUTES
)
_PROMPT_FIELDS = (
    "visits",
    "attempts",
    "passes",
    "errors",
    "zero_variance_visits",
    "solved_streak",
    "unsolved_streak",
    "zero_variance_streak",
    "last_pass_rate",
    "first_seen",
    "last_seen",
)
_MINUTE_FIELDS = "verdicts, errors, passes, score_sum, max_ms, latency, groups, zero_variance_groups"


def _migrate_to_1(db: sqlite3.Connection) -> None:
    """Version 0 (before the dashboard's history): prompts gain their recent visits and
    reasons; verifier minutes gain a traffic kind, a version and group counts (their key
    changes, so the table is rebuilt). Minutes of version 0 mixed every traffic and version:
    they are read back as training traffic of an unknown version ("")."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(prompts)")}
    for column in ("recent", "reasons"):
        if column not in columns:
            db.execute(f"ALTER TABLE prompts ADD COLUMN {column} TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE verifier_minutes RENAME TO verifier_minutes_v0")
    db.execute(_VERIFIER_MINUTES)
    db.execute(
        f"INSERT INTO verifier_minutes (traffic, verifier, version, minute, {_MINUTE_FIELDS}) "
        f"SELECT ?, verifier, '', minute, verdicts, errors, passes, score_sum, max_ms, latency, 0, 0 "
        "FROM verifier_minutes_v0",
        (Traffic.training.value,),
    )
    db.execute("DROP TABLE verifier_minutes_v0")


# Tables of this file at any schema version (`verifier_minutes_v0`: a migration under way).
_OWN_TABLES = frozenset({"prompts", "http_minutes", "verifier_minutes", "verifier_minutes_v0"})


def _open(path: Path) -> sqlite3.Connection:
    """The file at `path`, created or migrated to `SCHEMA_VERSION`. StatsFileTaken if it holds
    other tables: another service's registry, say (`referee-stats.db` is also what the
    statistics of a registry `referee.db` beside it are called), which is never written."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables - _OWN_TABLES:
        db.close()
        foreign = ", ".join(sorted(tables - _OWN_TABLES)[:5])
        raise StatsFileTaken(f"{path} is not a statistics file (it holds the tables {foreign})")
    db.execute("PRAGMA journal_mode=WAL")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    existing = "verifier_minutes" in tables
    if version > SCHEMA_VERSION:
        db.close()
        raise RuntimeError(f"{path} has statistics schema {version}, newer than this service's")
    db.execute("BEGIN IMMEDIATE")
    try:
        if existing and version < 1:
            _migrate_to_1(db)
            log.info("stats_schema_migrated", path=str(path), from_version=version, to=SCHEMA_VERSION)
        for statement in filter(str.strip, _SCHEMA.split(";")):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        db.close()
        raise
    return db


class StatsFileTaken(Exception):
    """Another running service holds this statistics file."""


def _claim(path: Path) -> int:
    """An exclusive lock on `path`'s `.lock` file, held until the descriptor is closed (the
    kernel releases it if the process dies): two services flushing one file would overwrite
    each other's records."""
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StatsFileTaken(f"{path} is used by another running service") from None
    return fd


class StatsStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._claim = _claim(path)
        # One connection, used by one flush at a time (the lock), from whichever thread runs it.
        try:
            self._db = _open(path)
        except BaseException:
            os.close(self._claim)
            raise
        self._lock = threading.Lock()

    def load_into(self, stats: Statistics) -> None:
        """Read back each owner's newest `stats.max_prompts_per_key` prompts (the global bound
        then applies as when they were recorded) and the window's minutes; rows beyond an
        owner's bound are deleted."""
        fields = ", ".join(_PROMPT_FIELDS)
        ranked = (
            f"SELECT owner, prompt_id, {fields}, recent, reasons, ROW_NUMBER() OVER "
            "(PARTITION BY owner ORDER BY last_seen DESC) AS recency FROM prompts"
        )
        with self._lock:
            rows = self._db.execute(
                f"SELECT owner, prompt_id, {fields}, recent, reasons FROM ({ranked}) WHERE recency <= ? "
                "ORDER BY last_seen ASC",
                (stats.max_prompts_per_key,),
            ).fetchall()
            self._db.execute(
                f"DELETE FROM prompts WHERE (owner, prompt_id) IN "
                f"(SELECT owner, prompt_id FROM ({ranked}) WHERE recency > ?)",
                (stats.max_prompts_per_key,),
            )
            prompts = [((row[0], row[1]), _record(row[2:])) for row in rows]
            minutes = [
                ((row[0], row[1], row[2], row[3]), _bucket(row[4:]))
                for row in self._db.execute(
                    f"SELECT traffic, verifier, version, minute, {_MINUTE_FIELDS} FROM verifier_minutes"
                )
            ]
            http = [
                (row[0], HttpBucket(*row[1:]))
                for row in self._db.execute(
                    "SELECT minute, requests, client_errors, server_errors, refused FROM http_minutes"
                )
            ]
        stats.load(prompts, minutes, http)
        log.info("stats_loaded", path=str(self.path), prompts=len(prompts), minutes=len(minutes))

    def flush(self, stats: Statistics, dirty: Dirty | None = None) -> int:
        """Write what changed (`dirty`, if already taken from `stats`); returns the number of
        rows written. On failure the records are marked changed again in `stats`."""
        dirty = stats.take_dirty() if dirty is None else dirty
        try:
            self._write(dirty)
        except Exception:
            stats.restore_dirty(dirty)
            raise
        return len(dirty.prompts) + len(dirty.minutes) + len(dirty.http)

    def _write(self, dirty: Dirty) -> None:
        prompt_columns = ("owner", "prompt_id", *_PROMPT_FIELDS, "recent", "reasons")
        placeholders = ", ".join("?" * len(prompt_columns))
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO prompts ({', '.join(prompt_columns)}) VALUES ({placeholders})",
                    [
                        (*key, *(getattr(r, f) for f in _PROMPT_FIELDS), *_history(r))
                        for key, r in dirty.prompts
                    ],
                )
                self._db.executemany("DELETE FROM prompts WHERE owner = ? AND prompt_id = ?", dirty.evicted)
                self._db.executemany(
                    f"INSERT OR REPLACE INTO verifier_minutes (traffic, verifier, version, minute, "
                    f"{_MINUTE_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            *key,
                            *(b.verdicts, b.errors, b.passes, b.score_sum, b.max_ms),
                            json.dumps(b.latency),
                            *(b.groups, b.zero_variance_groups),
                        )
                        for key, b in dirty.minutes
                    ],
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO http_minutes VALUES (?, ?, ?, ?, ?)",
                    [
                        (minute, b.requests, b.client_errors, b.server_errors, b.refused)
                        for minute, b in dirty.http
                    ],
                )
                self._db.execute("DELETE FROM verifier_minutes WHERE minute < ?", (dirty.oldest_minute,))
                self._db.execute("DELETE FROM http_minutes WHERE minute < ?", (dirty.oldest_minute,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()
            os.close(self._claim)


def _history(record: PromptRecord) -> tuple[str, str]:
    """The history as JSON: [time, pass rate, ...] and [time, reward, reason, ...] (null: none)."""
    visits = [v for visit in record.recent_visits() for v in visit]
    reasons = [v for reason in record.recent_reasons() for v in reason]
    return json.dumps(visits), json.dumps(reasons)


def _record(row: tuple[object, ...]) -> PromptRecord:
    counters, (recent, reasons) = row[: len(_PROMPT_FIELDS)], row[len(_PROMPT_FIELDS) :]
    record = PromptRecord(*counters)  # type: ignore[arg-type]
    visits, said = json.loads(str(recent or "[]")), json.loads(str(reasons or "[]"))
    record.set_history(
        zip(visits[::2], visits[1::2], strict=True), zip(said[::3], said[1::3], said[2::3], strict=True)
    )
    return record


def _bucket(row: tuple[int, int, int, float, float, str, int, int]) -> MinuteBucket:
    verdicts, errors, passes, score_sum, max_ms, latency, groups, flat = row
    histogram = {int(k): int(v) for k, v in json.loads(latency).items()}
    return MinuteBucket(verdicts, errors, passes, score_sum, max_ms, histogram, groups, flat)
