"""Statistics shared by replicas through PostgreSQL (the registry's server, `REFEREE_DB_URL`).

Each replica keeps its statistics in memory and in its SQLite file (`stats.store`). With a
shared store it also publishes, on each flush (`stats.persistence`: same cadence, in a thread,
never on the event loop), the verifier minutes and HTTP minutes changed since its last publish,
keyed by its replica id, and its `last_seen`. A replica upserts and deletes its own rows only
(its minutes older than its window), so replicas never write the same row and need no lock;
rows older than the longest window any replica may keep (7 days) are nobody's any more and go
whoever's they were, so replicas that left do not fill the tables. Any replica reads every
replica's minutes of a window (`read`); `stats.scope` merges them (buckets merge exactly:
counters add, latency histograms add, the max is the max) and caches them.

A minute row is a replica's whole bucket of that minute, so writing it again is harmless: a
publish that fails keeps its rows pending, a newer copy of a minute replacing an older one, and
the next publish writes them with whatever changed since.

Faults are handled as by the registry's store (`registered/postgres.py`, which `stats` may not
import): UTF-8 whatever the database's encoding, TCP keepalives and `tcp_user_timeout` so that a
silent server fails a statement within seconds, a dead connection replaced on next use. An
error is `SharedUnavailable`, whose text names the error's class and the server's own message,
never libpq's (it names host and port); the log names the server without its password.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from referee.pg_connect import connect_options, conninfo
from referee.stats.buckets import HttpBucket, MinuteBucket
from referee.stats.tracker import Dirty, MinuteKey
from referee.stats.views import ReplicaHttp, ReplicaMinute

log = structlog.get_logger(__name__)

# No replica keeps more (StatsSettings.window_minutes): older rows are no one's.
MAX_WINDOW_MINUTES = 7 * 1440
# One key for the schema's creation by any replica (pg_advisory_xact_lock): ASCII "ref-stat".
_SCHEMA_LOCK = 0x7265662D73746174
_SCHEMA = """
CREATE TABLE IF NOT EXISTS stats_replicas (
    replica TEXT PRIMARY KEY, last_seen DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS stats_verifier_minutes (
    replica TEXT NOT NULL, traffic TEXT NOT NULL, verifier TEXT NOT NULL, version TEXT NOT NULL,
    minute BIGINT NOT NULL,
    verdicts INTEGER NOT NULL, errors INTEGER NOT NULL, passes INTEGER NOT NULL,
    score_sum DOUBLE PRECISION NOT NULL, max_ms DOUBLE PRECISION NOT NULL,
    latency TEXT NOT NULL,  -- the sparse histogram: {"bucket": count}
    groups INTEGER NOT NULL, zero_variance_groups INTEGER NOT NULL,
    PRIMARY KEY (replica, traffic, verifier, version, minute)
);
CREATE INDEX IF NOT EXISTS stats_verifier_minutes_minute ON stats_verifier_minutes (minute);
CREATE TABLE IF NOT EXISTS stats_http_minutes (
    replica TEXT NOT NULL, minute BIGINT NOT NULL,
    requests INTEGER NOT NULL, client_errors INTEGER NOT NULL, server_errors INTEGER NOT NULL,
    refused INTEGER NOT NULL,
    PRIMARY KEY (replica, minute)
);
"""
_MINUTE_FIELDS = "verdicts, errors, passes, score_sum, max_ms, latency, groups, zero_variance_groups"
_UPSERT_MINUTE = (
    f"INSERT INTO stats_verifier_minutes (replica, traffic, verifier, version, minute, {_MINUTE_FIELDS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (replica, traffic, verifier, version, minute) DO UPDATE SET "
    + ", ".join(f"{f} = EXCLUDED.{f}" for f in _MINUTE_FIELDS.split(", "))
)
_UPSERT_HTTP = (
    "INSERT INTO stats_http_minutes (replica, minute, requests, client_errors, server_errors, refused) "
    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (replica, minute) DO UPDATE SET "
    "requests = EXCLUDED.requests, client_errors = EXCLUDED.client_errors, "
    "server_errors = EXCLUDED.server_errors, refused = EXCLUDED.refused"
)
_VALID_ID = re.compile(r"[^A-Za-z0-9_.-]")


class SharedUnavailable(Exception):
    """The shared store could not be read or written; `why` is safe to show (no DSN)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def default_replica_id(stats_path: Path) -> str:
    """The host name and a hash of the statistics file's path: stable across restarts of one
    container (its host name is kept) and distinct between compose replicas (each has its own
    host name). Replicas sharing a host and a file must be told apart otherwise (the runtime
    prefers the sandbox's instance id, unique per service on a host)."""
    host = _VALID_ID.sub("-", socket.gethostname())[:40].strip("-.") or "host"
    digest = hashlib.sha256(str(stats_path.resolve()).encode()).hexdigest()[:6]
    return f"{host}-{digest}"


def _describe(exc: Exception) -> str:
    """An error as a page may show it: its class and the server's own message, never libpq's
    client-side text (it names the host and port)."""
    state = getattr(exc, "sqlstate", None)
    if state is None:
        return type(exc).__name__
    message = getattr(getattr(exc, "diag", None), "message_primary", None) or ""
    return f"{type(exc).__name__} ({state}): {message}"[:200]


@dataclass
class SharedRows:
    """Every replica's rows from a minute on, and when each replica last published."""

    oldest: int
    minutes: list[ReplicaMinute] = field(default_factory=list)
    http: list[ReplicaHttp] = field(default_factory=list)
    replicas: dict[str, float] = field(default_factory=dict)


class SharedStats:
    """One replica's publisher and reader of the shared tables (`url`: a PostgreSQL DSN). Its
    two connections, one for publishing and one for reading, each serve one call at a time."""

    def __init__(
        self,
        url: str,
        replica: str,
        *,
        connect_timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        try:  # an optional dependency (the `postgres` extra), as for the registry
            self._pg = importlib.import_module("psycopg")
        except ImportError as exc:
            raise ImportError("shared statistics need psycopg 3: pip install 'referee[postgres]'") from exc
        self._url = url
        self.replica = replica
        self.clock = clock
        timeout_s = max(1, int(connect_timeout_s))
        given = conninfo(self._url, self._pg.conninfo.conninfo_to_dict)
        # A silent peer fails a statement within seconds, as for the registry.
        self._options = connect_options(given, timeout_s)
        self.server = {k: v for k, v in given.items() if k in ("host", "hostaddr", "port", "dbname", "user")}
        self._schema_ready = False
        self._locks = {"publish": threading.Lock(), "read": threading.Lock()}
        self._connections: dict[str, Any] = {}
        # Minutes not yet written (a failed publish), newest copy of each.
        self._pending_minutes: dict[MinuteKey, MinuteBucket] = {}
        self._pending_http: dict[int, HttpBucket] = {}
        self.failing = False  # the latest publish failed (logged once per outage)

    def __repr__(self) -> str:  # never the DSN: it may carry a password
        return f"SharedStats(replica={self.replica!r})"

    # ---- connections -------------------------------------------------------------------------

    def _connection(self, role: str) -> Any:
        """The role's connection (lock held), made again once it has died; UTF-8 whatever the
        database's encoding, the schema created by the first one."""
        conn = self._connections.get(role)
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        conn = self._pg.connect(self._url, autocommit=True, client_encoding="utf8", **self._options)
        try:
            if not self._schema_ready:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    conn.execute(_SCHEMA)
                self._schema_ready = True
        except BaseException:
            conn.close()
            raise
        self._connections[role] = conn
        return conn

    def _run(self, role: str, work: Callable[[Any], Any]) -> Any:
        """`work(connection)` for `role`; retried once on a new connection if the one it had
        died since its last use (the server restarted in between). SharedUnavailable if not."""
        with self._locks[role]:
            for attempt in (1, 2):
                reused = role in self._connections and not self._connections[role].closed
                conn = None
                try:
                    conn = self._connection(role)
                    return work(conn)
                except self._pg.Error as exc:
                    if conn is not None and conn.broken:
                        conn.close()
                    if attempt == 1 and reused and conn is not None and conn.closed:
                        continue
                    raise SharedUnavailable(_describe(exc)) from exc
        raise AssertionError("unreachable: the second attempt returns or raises")

    def close(self) -> None:
        for role, lock in self._locks.items():
            with lock:
                conn = self._connections.pop(role, None)
                if conn is not None:
                    conn.close()

    # ---- publishing --------------------------------------------------------------------------

    def publish(self, dirty: Dirty) -> int:
        """Write this replica's minutes that changed (`dirty`, and those a failed publish left),
        its `last_seen`, and delete its minutes before `dirty.oldest_minute`; returns the rows
        written. SharedUnavailable if it failed: the rows stay pending for the next call."""
        with self._locks["publish"]:  # the pending rows belong to one publish at a time
            self._pending_minutes.update(dirty.minutes)
            self._pending_http.update(dirty.http)
            oldest = dirty.oldest_minute
            minutes = [(k, b) for k, b in self._pending_minutes.items() if k[3] >= oldest]
            http = [(m, b) for m, b in self._pending_http.items() if m >= oldest]
        try:
            self._run("publish", lambda conn: self._write(conn, minutes, http, oldest))
        except SharedUnavailable as exc:
            if not self.failing:
                log.warning("stats_shared_publish_failed", server=self.server, error=exc.why)
            self.failing = True
            raise
        with self._locks["publish"]:
            for key, bucket in minutes:
                if self._pending_minutes.get(key) is bucket:
                    del self._pending_minutes[key]
            for minute, counts in http:
                if self._pending_http.get(minute) is counts:
                    del self._pending_http[minute]
        if self.failing:
            log.info("stats_shared_publish_recovered", server=self.server)
        self.failing = False
        return len(minutes) + len(http)

    def _write(
        self,
        conn: Any,
        minutes: list[tuple[MinuteKey, MinuteBucket]],
        http: list[tuple[int, HttpBucket]],
        oldest: int,
    ) -> None:
        now = self.clock()
        expired = int(now // 60) * 60 - 60 * MAX_WINDOW_MINUTES
        with conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(
                _UPSERT_MINUTE,
                [
                    (
                        self.replica,
                        *key,
                        *(b.verdicts, b.errors, b.passes, b.score_sum, b.max_ms),
                        json.dumps(b.latency),
                        *(b.groups, b.zero_variance_groups),
                    )
                    for key, b in minutes
                ],
            )
            cursor.executemany(
                _UPSERT_HTTP,
                [(self.replica, m, b.requests, b.client_errors, b.server_errors, b.refused) for m, b in http],
            )
            cursor.execute(
                "INSERT INTO stats_replicas (replica, last_seen) VALUES (%s, %s) "
                "ON CONFLICT (replica) DO UPDATE SET last_seen = EXCLUDED.last_seen",
                (self.replica, now),
            )
            for table in ("stats_verifier_minutes", "stats_http_minutes"):
                cursor.execute(
                    f"DELETE FROM {table} WHERE replica = %s AND minute < %s", (self.replica, oldest)
                )
                cursor.execute(f"DELETE FROM {table} WHERE minute < %s", (expired,))
            cursor.execute("DELETE FROM stats_replicas WHERE last_seen < %s", (expired,))

    # ---- reading -----------------------------------------------------------------------------

    def read(self, oldest: int) -> SharedRows:
        """Every replica's minutes from `oldest` on, and the replicas seen since then."""
        rows: SharedRows = self._run("read", lambda conn: self._read(conn, oldest))
        return rows

    def _read(self, conn: Any, oldest: int) -> SharedRows:
        rows = SharedRows(oldest)
        for replica, traffic, verifier, version, minute, *values in conn.execute(
            f"SELECT replica, traffic, verifier, version, minute, {_MINUTE_FIELDS} "
            "FROM stats_verifier_minutes WHERE minute >= %s",
            (oldest,),
        ):
            verdicts, errors, passes, score_sum, max_ms, latency, groups, flat = values
            histogram = {int(k): int(v) for k, v in json.loads(latency).items()}
            bucket = MinuteBucket(verdicts, errors, passes, score_sum, max_ms, histogram, groups, flat)
            rows.minutes.append((replica, (traffic, verifier, version, int(minute)), bucket))
        for replica, minute, *counts in conn.execute(
            "SELECT replica, minute, requests, client_errors, server_errors, refused "
            "FROM stats_http_minutes WHERE minute >= %s",
            (oldest,),
        ):
            rows.http.append((replica, int(minute), HttpBucket(*counts)))
        rows.replicas = dict(
            conn.execute("SELECT replica, last_seen FROM stats_replicas WHERE last_seen >= %s", (oldest,))
        )
        return rows
