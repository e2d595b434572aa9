"""The registered-types store in PostgreSQL (psycopg 3), for registries shared by replicas on
several machines (Ray Serve, docs/ray.md); `SQLiteStore` stays the embedded default.

It is `SQLiteStore` over another connection: the same schema, the same statements (its `?`
placeholders become psycopg's `%s`) and the same `VerifierStore` semantics; what differs is the
transaction and the change token. Every write runs in one transaction holding a transaction-scoped
advisory lock, so writers from any replica or machine are serialised: "next version number" and
the quota check are race-free, and the primary key `(name, version)` refuses a second `@3` even
if the lock were bypassed. Each write also bumps the one-row `registry_generation` counter in the
same transaction.

Visibility bound: a daemon thread (the watcher) re-reads the counter every `refresh_s` (1 s by
default) and the catalog compares `generation()` on each resolution of a registered name, so a
type registered through any replica is served by every replica within `refresh_s` plus one
query, and at once by the replica that registered it. The event loop, which resolves names,
never waits on the network for the counter.

Faults. Connections speak UTF-8 whatever the database's encoding (a `SQL_ASCII` database would
otherwise hand back `bytes`), and give up on a silent peer (TCP keepalives, `tcp_user_timeout`)
rather than wait on it for the kernel's quarter of an hour. A server that cannot be reached starts
an outage: from then on every read and write fails at once with `RegistryUnreachable` (503; the
catalog keeps serving the versions it has loaded) while the watcher retries with exponential
backoff, and the first read that works ends the outage, /readyz included, with no write needed.
A connection found dead afterwards (the server restarted between two uses) is replaced and a
read retried once. What clients and /readyz see never names the server (host, port, user,
database); the log says which server it is, without the password.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import structlog

from referee.pg_connect import connect_options, conninfo
from referee.registered.store import _SCHEMA as _SQLITE_SCHEMA
from referee.registered.store import RegistryUnavailable, RegistryUnreachable, SQLiteStore

log = structlog.get_logger(__name__)

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
# SQLSTATEs that mean "no server to talk to": connection exceptions (class 08), and a server
# shutting down, crashed or still starting (57P01-57P03).
_SERVER_GONE = ("08", "57P01", "57P02", "57P03")


def _describe(exc: Exception) -> str:
    """An error as clients and /readyz may see it: its class and the server's own message.
    libpq's client-side text is left out: it names the host and port."""
    state = getattr(exc, "sqlstate", None)
    if state is None:
        return type(exc).__name__
    return f"{type(exc).__name__} ({state}): {exc.diag.message_primary}"[:200]  # type: ignore[attr-defined]


class _Watcher:
    """Reads the shared change counter every `refresh_s` in a daemon thread, so that no request
    (nor the event loop, which resolves names) waits on the network for it.

    When the server cannot be reached, from here or from any other call, an outage begins:
    `check()` then fails at once, so nothing waits on a dead server, and the watcher retries with
    exponential backoff; the first read that works ends the outage."""

    def __init__(
        self,
        read: Callable[[], int],
        refresh_s: float,
        backoff_s: tuple[float, float],
        server: dict[str, Any],
    ) -> None:
        self._read = read
        self._refresh_s = refresh_s
        self._first_s, self._max_s = backoff_s
        self._server = server
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self.counter: int | None = None  # the last value read; None: never read yet
        self.since: float | None = None  # monotonic time the outage began; None: none now

    def start(self) -> None:
        with self._lock:
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(target=self._run, name="registry-watcher", daemon=True)
                self._thread.start()

    def check(self) -> None:
        if self.since is not None:
            raise RegistryUnreachable()

    def begin_outage(self, exc: Exception) -> None:
        with self._lock:
            if self.since is not None:
                return
            self.since = time.monotonic()
        log.warning("registry_database_unreachable", server=self._server, error=str(exc)[:300])
        self.start()

    def _run(self) -> None:
        delay = self._refresh_s
        while not self._closed.wait(delay):
            try:
                self.counter = self._read()
            except Exception:  # unreachable (an outage), or refused: try again later
                delay = (
                    self._refresh_s if self.since is None else min(max(delay * 2, self._first_s), self._max_s)
                )
                continue
            delay = self._refresh_s
            with self._lock:
                began, self.since = self.since, None
            if began is not None:
                log.info(
                    "registry_database_reachable",
                    server=self._server,
                    after_s=round(time.monotonic() - began, 1),
                )

    def close(self) -> None:
        self._closed.set()


class _Connection:
    """A psycopg connection with the face `SQLiteStore` uses: `execute` with `?` placeholders,
    `executemany`, `close`; a database error is `RegistryUnavailable` (`RegistryUnreachable`
    when the server is gone)."""

    def __init__(self, store: PostgresStore, raw: Any) -> None:
        self.store = store
        self.raw = raw

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        query, args = sql.replace("?", "%s"), tuple(params)
        standalone = self.raw.info.transaction_status == self.store.pg.pq.TransactionStatus.IDLE
        try:
            return self.raw.execute(query, args)
        except self.store.pg.Error as exc:
            if not (standalone and self.raw.broken):
                raise self.store.failure(exc, self.raw) from exc
        # The connection died since its last use (the server restarted in between). Outside a
        # transaction the statement is a read (every write runs in one), so it is retried once
        # on a new connection.
        self.raw.close()
        self.raw = self.store.open_connection()
        try:
            return self.raw.execute(query, args)
        except self.store.pg.Error as exc:
            raise self.store.failure(exc, self.raw) from exc

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        try:
            with self.raw.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])
        except self.store.pg.Error as exc:
            raise self.store.failure(exc, self.raw) from exc

    def close(self) -> None:
        self.raw.close()


class PostgresStore(SQLiteStore):
    """`VerifierStore` over PostgreSQL: `PostgresStore("postgresql://user@host:5432/referee")`.
    `reconnect_s`: the first and the longest wait between reconnection attempts in an outage."""

    def __init__(
        self,
        url: str,
        *,
        refresh_s: float = 1.0,
        connect_timeout_s: float = 10.0,
        reconnect_s: tuple[float, float] = (0.25, 5.0),
    ) -> None:
        try:  # an optional dependency (the `postgres` extra): imported only when used
            self.pg = importlib.import_module("psycopg")
        except ImportError as exc:
            raise ImportError("PostgresStore needs psycopg 3: pip install 'referee[postgres]'") from exc
        self.url = url
        self.refresh_s = refresh_s
        timeout_s = max(1, int(connect_timeout_s))
        given = conninfo(url, self.pg.conninfo.conninfo_to_dict)
        # A peer that stops answering (its host gone, a partition) fails a statement within
        # `timeout_s` (unacknowledged data) or ~25 s (keepalives on an idle connection); the URL's
        # own settings win.
        self._connect_options = connect_options(given, timeout_s)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[Any] = []
        self._schema_ready = False
        self._writes = 0
        self._write_failure: str | None = None
        server = {k: v for k, v in given.items() if k in ("host", "hostaddr", "port", "dbname", "user")}
        self._watcher = _Watcher(self._read_counter, refresh_s, reconnect_s, server)

    def __repr__(self) -> str:  # never the DSN: it may carry a password
        return f"PostgresStore(refresh_s={self.refresh_s})"

    # ---- connections and faults ---------------------------------------------------------------

    def failure(self, exc: Exception, raw: Any) -> RegistryUnavailable:
        """The 503 for a database error. One that says the server is gone starts an outage."""
        state = getattr(exc, "sqlstate", None) or ""
        gone = (raw is not None and raw.broken) or (
            isinstance(exc, self.pg.OperationalError) and (not state or state.startswith(_SERVER_GONE))
        )
        if gone:
            self._watcher.begin_outage(exc)
            return RegistryUnreachable()
        return RegistryUnavailable(_describe(exc))

    def open_connection(self) -> Any:
        """A new connection in UTF-8 whatever the database's encoding (a `SQL_ASCII` database
        answers `bytes` otherwise), the schema created on first use."""
        raw = None
        try:
            raw = self.pg.connect(self.url, autocommit=True, client_encoding="utf8", **self._connect_options)
            if not self._schema_ready:
                with raw.transaction():
                    raw.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
                    raw.execute(_SCHEMA)
                self._schema_ready = True
        except self.pg.Error as exc:
            if raw is not None:
                raw.close()
            raise self.failure(exc, None) from exc
        return raw

    def _connect(self, *, create: bool = True) -> Any:
        """This thread's connection; RegistryUnreachable at once while the server is known to
        be down."""
        self._watcher.check()
        return self._thread_connection()

    def _thread_connection(self) -> _Connection:
        """This thread's connection, made on first use and again once it has died."""
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.raw.closed and not conn.raw.broken:
            return conn
        conn = _Connection(self, self.open_connection())
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def health(self) -> tuple[bool, str]:
        since = self._watcher.since
        if since is not None:
            down_s = time.monotonic() - since
            return False, f"the registry database cannot be reached (for {down_s:.0f} s); reconnecting"
        return super().health()

    def close(self) -> None:
        self._watcher.close()
        super().close()

    # ---- reads and writes ---------------------------------------------------------------------

    def _read_counter(self) -> int:
        """The shared write counter, whether or not an outage is on (the watcher's read)."""
        row = (
            self._thread_connection().execute("SELECT value FROM registry_generation WHERE id = 1").fetchone()
        )
        return int(row[0]) if row else 0

    def generation(self) -> object:
        """The shared write counter as the watcher last read it (at most `refresh_s` ago: the
        visibility bound), and this store's own writes (seen at once). RegistryUnreachable
        during an outage: the catalog then serves what it has loaded."""
        self._watcher.check()
        if self._watcher.counter is None:  # the first call reads it; the watcher then keeps it fresh
            self._watcher.counter = self._read_counter()
            self._watcher.start()
        return (self._watcher.counter, self._writes)

    @contextlib.contextmanager
    def _transaction(self, conn: Any) -> Iterator[None]:
        """One write transaction, serialised with every other writer by the advisory lock, and
        bumping the shared generation. A database error is RegistryUnavailable (503), which
        health() reports until a write succeeds, or RegistryUnreachable, which health() reports
        until the server answers again."""
        try:
            # A connection that died since its last use is replaced here, before anything is written.
            conn.execute("SELECT 1")
            with conn.raw.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_WRITE_LOCK,))
                yield
                conn.execute("UPDATE registry_generation SET value = value + 1 WHERE id = 1")
        except (self.pg.Error, RegistryUnavailable) as exc:
            failure = exc if isinstance(exc, RegistryUnavailable) else self.failure(exc, conn.raw)
            if not isinstance(failure, RegistryUnreachable):
                self._write_failure = failure.why
            if failure is exc:
                raise
            raise failure from exc
        self._write_failure = None
        with self._lock:
            self._writes += 1
