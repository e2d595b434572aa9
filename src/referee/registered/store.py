"""Persistence of registered verifier types: a small interface and its SQLite implementation.

A registered type is a name with numbered, immutable versions. Each version stores its
canonical document (kind, spec, description, reference schema, examples) and the SHA-256 of
the part that decides verdicts (`digest`), so two versions with the same digest judge alike.
A webhook's signing secret is kept apart (`secret`, encrypted by the catalog) and is never
part of the digest, which anyone with an API key can read.
Disabling (HTTP DELETE) only stamps `disabled_at`: history is never deleted, and version
numbers are never reused.

SQLite in WAL mode with one connection per thread: readers never block the writer, and
`BEGIN IMMEDIATE` serialises writers (other processes included) so "next version number" and
the quota check are race-free. A server database can replace it by implementing
`VerifierStore`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from referee.errors import DomainError, ErrorKind

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verifier_versions (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    digest TEXT NOT NULL,
    document TEXT NOT NULL,
    secret TEXT,
    created_at REAL NOT NULL,
    disabled_at REAL,
    PRIMARY KEY (name, version)
);
CREATE INDEX IF NOT EXISTS verifier_versions_active ON verifier_versions (name, disabled_at);
CREATE TABLE IF NOT EXISTS environments (name TEXT PRIMARY KEY, document TEXT NOT NULL);
"""
_COLUMNS = "name, version, kind, digest, document, secret, created_at, disabled_at"


@dataclass(frozen=True, slots=True)
class StoredVersion:
    name: str
    version: int
    kind: str
    digest: str
    document: dict[str, Any]
    # Webhook signing key: never part of `document`, never returned by the API.
    secret: str | None
    created_at: float
    disabled_at: float | None

    @property
    def active(self) -> bool:
        return self.disabled_at is None

    @property
    def qualified(self) -> str:
        return f"{self.name}@{self.version}"


# How long a client should wait before retrying a write the registry could not take.
REGISTRY_RETRY_AFTER_S = 5.0


class RegistryUnavailable(DomainError):
    """The registry cannot take a write now (locked by another writer beyond the busy timeout,
    disk full, I/O error): a 503 with Retry-After, never a 500; nothing was written. `why` is
    shown to clients and on /readyz, so it never names the database's location."""

    def __init__(self, why: str, *, message: str | None = None) -> None:
        self.why = why
        super().__init__(
            ErrorKind.unavailable,
            "registry_unavailable",
            message or f"the registry cannot be written now ({why}); retry later",
            retry_after_s=REGISTRY_RETRY_AFTER_S,
        )


class RegistryUnreachable(RegistryUnavailable):
    """The registry's database server cannot be reached (stopped, restarting, cut off): nothing
    can be read or written there, but the catalog still serves every version it has loaded, so
    only registrations and names it has not seen wait for the server."""

    def __init__(self) -> None:
        super().__init__(
            "the registry database cannot be reached",
            message=(
                "the registry database cannot be reached: registrations, and registered types "
                "this replica has not loaded, wait until it is back (types already loaded are "
                "still scored); retry later"
            ),
        )


class QuotaExceeded(Exception):
    """Registering one more type name would pass the configured maximum."""


class VerifierStore(Protocol):
    def add(
        self,
        name: str,
        kind: str,
        digest: str,
        document: dict[str, Any],
        secret: str | None,
        *,
        max_names: int,
        same: Callable[[StoredVersion], bool] | None = None,
    ) -> tuple[StoredVersion, bool]:
        """Store the next version of `name`, or return its latest active version unchanged
        (created=False) when that one is the same: `same(latest)`, by default the same digest.
        Raises QuotaExceeded when `name` has no active version and `max_names` names are
        already active."""
        ...

    def reseal(self, transform: Callable[[str], str]) -> int:
        """Replace every stored secret `s` by `transform(s)` in one transaction; the count."""
        ...

    def get(self, name: str, version: int | None = None) -> StoredVersion | None:
        """An active version: the given one, or the latest. None if there is none."""
        ...

    def versions(self, name: str) -> list[StoredVersion]:
        """Every version of `name`, disabled ones included, oldest first."""
        ...

    def latest_active(self) -> list[StoredVersion]:
        """The latest active version of every name that has one, sorted by name."""
        ...

    def disable(self, name: str, version: int | None = None) -> list[int]:
        """Disable one version, or every active version of `name`; return those disabled."""
        ...

    def environment_documents(self) -> list[str]:
        """The registered environments' documents (referee.environments), sorted by name."""
        ...

    def save_environment(self, name: str, document: str) -> None:
        """Store (or replace) the registered environment `name`."""
        ...

    def delete_environment(self, name: str) -> bool:
        """Forget the registered environment `name`; whether there was one."""
        ...

    def generation(self) -> object:
        """A token that changes whenever any writer (any process) has committed a change.
        RegistryUnavailable when the store cannot be read: the catalog serves what it has."""
        ...

    def health(self) -> tuple[bool, str]:
        """(ok, reason): whether writes go through (reads may work while writes do not)."""
        ...

    def close(self) -> None: ...


class SQLiteStore:
    def __init__(self, path: Path | str, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path).expanduser()
        self._busy_ms = int(busy_timeout_s * 1000)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._writes = 0
        self._write_failure: str | None = None  # why the last write failed, until one succeeds

    def health(self) -> tuple[bool, str]:
        """(ok, reason) for /readyz: not ok from a failed write until the next one succeeds."""
        failure = self._write_failure
        return (False, f"last write failed: {failure}") if failure else (True, "ok")

    # ---- connections -------------------------------------------------------------------------

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        # A service that never registers a type leaves no file behind: reads of a missing
        # database are simply empty.
        if not create and not self.path.exists():
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        conn.execute("PRAGMA journal_mode = WAL")
        # Registrations are rare and must survive a power cut once acknowledged.
        conn.execute("PRAGMA synchronous = FULL")
        conn.executescript(_SCHEMA)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # ---- reads -------------------------------------------------------------------------------

    @staticmethod
    def _row(row: tuple[Any, ...]) -> StoredVersion:
        name, version, kind, digest, document, secret, created_at, disabled_at = row
        return StoredVersion(
            name, version, kind, digest, json.loads(document), secret, created_at, disabled_at
        )

    def get(self, name: str, version: int | None = None) -> StoredVersion | None:
        conn = self._connect(create=False)
        if conn is None:
            return None
        if version is None:
            sql = (
                f"SELECT {_COLUMNS} FROM verifier_versions WHERE name = ? AND disabled_at IS NULL "
                "ORDER BY version DESC LIMIT 1"
            )
            row = conn.execute(sql, (name,)).fetchone()
        else:
            sql = f"SELECT {_COLUMNS} FROM verifier_versions WHERE name = ? AND version = ? AND disabled_at IS NULL"
            row = conn.execute(sql, (name, version)).fetchone()
        return None if row is None else self._row(row)

    def versions(self, name: str) -> list[StoredVersion]:
        conn = self._connect(create=False)
        if conn is None:
            return []
        sql = f"SELECT {_COLUMNS} FROM verifier_versions WHERE name = ? ORDER BY version"
        return [self._row(r) for r in conn.execute(sql, (name,))]

    def latest_active(self) -> list[StoredVersion]:
        conn = self._connect(create=False)
        if conn is None:
            return []
        sql = (
            f"SELECT {_COLUMNS} FROM verifier_versions v WHERE disabled_at IS NULL AND version = "
            "(SELECT MAX(version) FROM verifier_versions w WHERE w.name = v.name AND w.disabled_at IS NULL) "
            "ORDER BY name"
        )
        return [self._row(r) for r in conn.execute(sql)]

    def generation(self) -> object:
        conn = self._connect(create=False)
        if conn is None:
            return (self.path.exists(), self._writes)
        # data_version moves when *another* connection commits (other threads and processes);
        # our own writes are counted separately.
        (data_version,) = conn.execute("PRAGMA data_version").fetchone()
        return (id(conn), data_version, self._writes)

    # ---- writes ------------------------------------------------------------------------------

    def add(
        self,
        name: str,
        kind: str,
        digest: str,
        document: dict[str, Any],
        secret: str | None,
        *,
        max_names: int,
        same: Callable[[StoredVersion], bool] | None = None,
    ) -> tuple[StoredVersion, bool]:
        conn = self._connect_for_write()
        with self._transaction(conn):
            latest = conn.execute(
                f"SELECT {_COLUMNS} FROM verifier_versions WHERE name = ? AND disabled_at IS NULL "
                "ORDER BY version DESC LIMIT 1",
                (name,),
            ).fetchone()
            if latest is not None and (same(self._row(latest)) if same else latest[3] == digest):
                return self._row(latest), False
            if latest is None:
                (active_names,) = conn.execute(
                    "SELECT COUNT(DISTINCT name) FROM verifier_versions WHERE disabled_at IS NULL"
                ).fetchone()
                if active_names >= max_names:
                    raise QuotaExceeded(f"{active_names} registered types are active; limit {max_names}")
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(version), 0) FROM verifier_versions WHERE name = ?", (name,)
            ).fetchone()
            stored = StoredVersion(name, last + 1, kind, digest, document, secret, time.time(), None)
            conn.execute(
                f"INSERT INTO verifier_versions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    stored.version,
                    kind,
                    digest,
                    json.dumps(document, sort_keys=True, separators=(",", ":")),
                    secret,
                    stored.created_at,
                    None,
                ),
            )
        return stored, True

    def _connect_for_write(self) -> sqlite3.Connection:
        """The connection, the file created if need be; RegistryUnavailable (and a health()
        failure) when it cannot be: no room for the file, a read-only directory."""
        try:
            conn = self._connect(create=True)
        except (OSError, sqlite3.Error) as exc:
            self._write_failure = f"{type(exc).__name__}: {exc}"[:300]
            raise RegistryUnavailable(str(exc)[:200]) from exc
        assert conn is not None
        return conn

    @contextlib.contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """One write transaction (serialised with every other writer); counted as a write. A
        database error (locked beyond the busy timeout, disk full, I/O error) is
        RegistryUnavailable, and health() reports it until a write succeeds."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:  # IntegrityError included: the schema's keys are ours
            self._write_failure = f"{type(exc).__name__}: {exc}"[:300]
            raise RegistryUnavailable(str(exc)[:200]) from exc
        self._write_failure = None
        with self._lock:
            self._writes += 1

    def reseal(self, transform: Callable[[str], str]) -> int:
        conn = self._connect(create=False)
        if conn is None:
            return 0
        with self._transaction(conn):
            rows = conn.execute(
                "SELECT name, version, secret FROM verifier_versions WHERE secret IS NOT NULL"
            ).fetchall()
            conn.executemany(
                "UPDATE verifier_versions SET secret = ? WHERE name = ? AND version = ?",
                [(transform(secret), name, version) for name, version, secret in rows],
            )
        return len(rows)

    def disable(self, name: str, version: int | None = None) -> list[int]:
        conn = self._connect(create=False)
        if conn is None:
            return []
        with self._transaction(conn):
            if version is None:
                rows = conn.execute(
                    "SELECT version FROM verifier_versions WHERE name = ? AND disabled_at IS NULL", (name,)
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT version FROM verifier_versions WHERE name = ? AND version = ? AND disabled_at IS NULL",
                    (name, version),
                ).fetchall()
            versions = sorted(v for (v,) in rows)
            conn.executemany(
                "UPDATE verifier_versions SET disabled_at = ? WHERE name = ? AND version = ?",
                [(time.time(), name, v) for v in versions],
            )
        return versions

    # ---- registered environments -------------------------------------------------------------
    # Kept beside the types they are built on, in the same database: replicas sharing a
    # PostgreSQL registry share them too, and a write moves the same generation (how every
    # replica notices one within the store's refresh bound).

    def environment_documents(self) -> list[str]:
        conn = self._connect(create=False)
        if conn is None:
            return []
        return [doc for (doc,) in conn.execute("SELECT document FROM environments ORDER BY name")]

    def save_environment(self, name: str, document: str) -> None:
        conn = self._connect_for_write()
        with self._transaction(conn):
            conn.execute(
                "INSERT INTO environments (name, document) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET document = excluded.document",
                (name, document),
            )

    def delete_environment(self, name: str) -> bool:
        conn = self._connect(create=False)
        if conn is None:
            return False
        with self._transaction(conn):
            found = conn.execute("SELECT 1 FROM environments WHERE name = ?", (name,)).fetchone()
            conn.execute("DELETE FROM environments WHERE name = ?", (name,))
        return found is not None
