"""The registered-types store in PostgreSQL (psycopg 3), for registries shared by replicas on
several machines (Ray Serve, docs/ray.md); `SQLiteStore` stays the embedded default.

It is `SQLiteStore` over another connection: the same schema, the same statements (its `?`
placeholders become psycopg's `%s`) and the same `VerifierStore` semantics; what differs is the
transaction and the change token. Every write runs in one transaction holding a transaction-scoped
advisory lock, so writers from any replica or machine are serialised: "next version number" and
the quota check are race-free, and the primary key `(name, version)` refuses a second `@3` even
if the lock were bypassed. Each write also bumps the one-row `registry_generation` counter in the
same transaction.

Visibility bound: a replica re-reads the counter at most every `refresh_s` (1 s by default); the
catalog checks `generation()` on each resolution of a registered name, so a type registered
through any replica is served by every replica within `refresh_s` plus one query, and at once by
the replica that registered it. A server that cannot be reached is `RegistryUnavailable` (503).
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from referee.registered.store import _SCHEMA as _SQLITE_SCHEMA
from referee.registered.store import RegistryUnavailable, SQLiteStore

# SQLite's schema with PostgreSQL's float type, and the shared change counter.
_SCHEMA = (
    _SQLITE_SCHEMA.replace(" REAL", " DOUBLE PRECISION")
    + """
CREATE TABLE IF NOT EXISTS registry_generation (id INTEGER PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO registry_generation (id, value) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
"""
)
# One key for every registry writer (pg_advisory_xact_lock): ASCII "referee!".
_WRITE_LOCK = 0x7265666572656521


class _Connection:
    """A psycopg connection with the face `SQLiteStore` uses: `execute` with `?` placeholders,
    `executemany`, `close`; a database error is `RegistryUnavailable`."""

    def __init__(self, raw: Any, errors: type[Exception]) -> None:
        self.raw = raw
        self._errors = errors

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        try:
            return self.raw.execute(sql.replace("?", "%s"), tuple(params))
        except self._errors as exc:
            raise RegistryUnavailable(f"{type(exc).__name__}: {exc}"[:200]) from exc

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        try:
            with self.raw.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])
        except self._errors as exc:
            raise RegistryUnavailable(f"{type(exc).__name__}: {exc}"[:200]) from exc

    def close(self) -> None:
        self.raw.close()


class PostgresStore(SQLiteStore):
    """`VerifierStore` over PostgreSQL: `PostgresStore("postgresql://user@host:5432/referee")`."""

    def __init__(self, url: str, *, refresh_s: float = 1.0, connect_timeout_s: float = 10.0) -> None:
        try:  # an optional dependency (the `postgres` extra): imported only when used
            self._pg = importlib.import_module("psycopg")
        except ImportError as exc:
            raise ImportError("PostgresStore needs psycopg 3: pip install 'referee[postgres]'") from exc
        self.url = url
        self.refresh_s = refresh_s
        self._connect_timeout = max(1, int(connect_timeout_s))
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[Any] = []
        self._schema_ready = False
        self._writes = 0
        self._write_failure: str | None = None
        self._seen: tuple[int, float] = (-1, 0.0)  # (shared counter, when it was read)

    def _connect(self, *, create: bool = True) -> Any:
        """This thread's connection (made, and the schema created, on first use)."""
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.raw.closed and not conn.raw.broken:
            return conn
        try:
            raw = self._pg.connect(self.url, autocommit=True, connect_timeout=self._connect_timeout)
            if not self._schema_ready:
                with raw.transaction():
                    raw.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
                    raw.execute(_SCHEMA)
                self._schema_ready = True
        except self._pg.Error as exc:
            self._write_failure = f"{type(exc).__name__}: {exc}"[:300]
            raise RegistryUnavailable(f"{type(exc).__name__}: {exc}"[:200]) from exc
        conn = _Connection(raw, self._pg.Error)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def generation(self) -> object:
        """The shared write counter, re-read at most every `refresh_s` (the visibility bound),
        and this store's own writes (seen at once)."""
        counter, read_at = self._seen
        now = time.monotonic()
        if now - read_at >= self.refresh_s:
            with contextlib.suppress(RegistryUnavailable):
                row = self._connect().execute("SELECT value FROM registry_generation WHERE id = 1").fetchone()
                counter = int(row[0]) if row else 0
            self._seen = (counter, now)
        return (counter, self._writes)

    @contextlib.contextmanager
    def _transaction(self, conn: Any) -> Iterator[None]:
        """One write transaction, serialised with every other writer by the advisory lock, and
        bumping the shared generation. A database error is RegistryUnavailable (503), which
        health() reports until a write succeeds."""
        try:
            with conn.raw.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_WRITE_LOCK,))
                yield
                conn.execute("UPDATE registry_generation SET value = value + 1 WHERE id = 1")
        except (self._pg.Error, RegistryUnavailable) as exc:
            cause = exc.__cause__ or exc
            self._write_failure = f"{type(cause).__name__}: {cause}"[:300]
            if isinstance(exc, RegistryUnavailable):
                raise
            raise RegistryUnavailable(str(exc)[:200]) from exc
        self._write_failure = None
        with self._lock:
            self._writes += 1
