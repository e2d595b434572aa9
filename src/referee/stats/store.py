"""Statistics on disk: one SQLite file, written by a periodic flush, read back at start-up.

The tracker keeps the truth in memory; this file only makes it survive a restart. A flush
writes the records changed since the previous one (upserts), deletes evicted prompts and
minutes outside the window, in one transaction. It runs in a thread (`asyncio.to_thread`),
never on the scoring path; a failed flush puts its records back as changed, so the next one
writes them (statistics are lost only if the service stops while the disk keeps failing).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import structlog

from referee.stats.tracker import Dirty, MinuteBucket, PromptRecord, Statistics

log = structlog.get_logger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    owner TEXT NOT NULL, prompt_id TEXT NOT NULL,
    visits INTEGER, attempts INTEGER, passes INTEGER, errors INTEGER,
    zero_variance_visits INTEGER, solved_streak INTEGER, unsolved_streak INTEGER,
    zero_variance_streak INTEGER, last_pass_rate REAL, first_seen REAL, last_seen REAL,
    PRIMARY KEY (owner, prompt_id)
);
CREATE INDEX IF NOT EXISTS prompts_last_seen ON prompts (last_seen);
CREATE INDEX IF NOT EXISTS prompts_owner_last_seen ON prompts (owner, last_seen);
CREATE TABLE IF NOT EXISTS verifier_minutes (
    verifier TEXT NOT NULL, minute INTEGER NOT NULL,
    verdicts INTEGER, errors INTEGER, passes INTEGER, score_sum REAL, max_ms REAL,
    latency TEXT,  -- the sparse histogram: {"bucket": count}
    PRIMARY KEY (verifier, minute)
);
"""
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


class StatsStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # One connection, used by one flush at a time (the lock), from whichever thread runs it.
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def load_into(self, stats: Statistics) -> None:
        """Read back each owner's newest `stats.max_prompts_per_key` prompts (the global bound
        then applies as when they were recorded) and the window's minutes; rows beyond an
        owner's bound are deleted."""
        fields = ", ".join(_PROMPT_FIELDS)
        ranked = (
            f"SELECT owner, prompt_id, {fields}, ROW_NUMBER() OVER "
            "(PARTITION BY owner ORDER BY last_seen DESC) AS recency FROM prompts"
        )
        with self._lock:
            rows = self._db.execute(
                f"SELECT owner, prompt_id, {fields} FROM ({ranked}) WHERE recency <= ? "
                "ORDER BY last_seen ASC",
                (stats.max_prompts_per_key,),
            ).fetchall()
            self._db.execute(
                f"DELETE FROM prompts WHERE (owner, prompt_id) IN "
                f"(SELECT owner, prompt_id FROM ({ranked}) WHERE recency > ?)",
                (stats.max_prompts_per_key,),
            )
            prompts = [((row[0], row[1]), PromptRecord(*row[2:])) for row in rows]
            minutes = [
                ((row[0], row[1]), _bucket(row[2:]))
                for row in self._db.execute(
                    "SELECT verifier, minute, verdicts, errors, passes, score_sum, max_ms, latency "
                    "FROM verifier_minutes"
                )
            ]
        stats.load(prompts, minutes)
        log.info("stats_loaded", path=str(self.path), prompts=len(prompts), minutes=len(minutes))

    def flush(self, stats: Statistics) -> int:
        """Write what changed; returns the number of rows written."""
        dirty = stats.take_dirty()
        try:
            self._write(dirty)
        except Exception:
            stats.restore_dirty(dirty)
            raise
        return len(dirty.prompts) + len(dirty.minutes)

    def _write(self, dirty: Dirty) -> None:
        placeholders = ", ".join("?" * (2 + len(_PROMPT_FIELDS)))
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO prompts VALUES ({placeholders})",
                    [(*key, *(getattr(r, f) for f in _PROMPT_FIELDS)) for key, r in dirty.prompts],
                )
                self._db.executemany("DELETE FROM prompts WHERE owner = ? AND prompt_id = ?", dirty.evicted)
                self._db.executemany(
                    "INSERT OR REPLACE INTO verifier_minutes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (*key, b.verdicts, b.errors, b.passes, b.score_sum, b.max_ms, json.dumps(b.latency))
                        for key, b in dirty.minutes
                    ],
                )
                self._db.execute("DELETE FROM verifier_minutes WHERE minute < ?", (dirty.oldest_minute,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _bucket(row: tuple[int, int, int, float, float, str]) -> MinuteBucket:
    verdicts, errors, passes, score_sum, max_ms, latency = row
    histogram = {int(k): int(v) for k, v in json.loads(latency).items()}
    return MinuteBucket(verdicts, errors, passes, score_sum, max_ms, histogram)
