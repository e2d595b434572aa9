"""A real PostgreSQL server for the tests: Debian's `postgresql` package, `initdb` into a
temporary directory, a free loopback port, trust authentication (loopback only), stopped after.
Run as the `postgres` user when the tests run as root (initdb refuses root).

`postgres_cluster()` also lets a test stop and restart the server (same data, same port: an
outage) and create databases of other encodings; `postgres_server()` yields just the URL."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from referee.service.background import free_port


def _bin(tool: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"))
    if not found:
        raise RuntimeError(
            f"{tool} not found: install Debian's postgresql package (apt-get install postgresql)"
        )
    return found[-1]


class PostgresCluster:
    """One initdb'd data directory served on a fixed loopback port."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data, self.sockets = root / "data", root / "run"
        self.sockets.mkdir()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(self.sockets, "postgres", "postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self.base_url = f"postgresql://postgres@127.0.0.1:{self.port}"
        self.url = f"{self.base_url}/referee"  # the database `referee`, UTF-8
        self.running = False

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as_user, *args], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(
            _bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"
        )

    def start(self) -> None:
        self._run(
            _bin("pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60",
            "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -c fsync=off", "start",
        )  # fmt: skip
        self.running = True

    def stop(self) -> None:
        """An abrupt stop (every connection is cut), as a crashed or restarted server."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self.running = False

    def create_database(self, name: str, *, encoding: str = "UTF8") -> str:
        """A new database (`SQL_ASCII` is what an old `initdb` without a locale leaves); its URL."""
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(f"{self.base_url}/postgres", autocommit=True) as conn:
                    conn.execute(
                        f"CREATE DATABASE {name} ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C' "
                        "TEMPLATE template0"
                    )
                return f"{self.base_url}/{name}"
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A running server with an empty UTF-8 database `referee` (`cluster.url`)."""
    cluster = PostgresCluster(Path(tempfile.mkdtemp(prefix="referee-pg-")))
    cluster.init()
    cluster.start()
    try:
        cluster.create_database("referee")
        yield cluster
    finally:
        if cluster.running:
            cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields the server's URL (database `referee`)."""
    with postgres_cluster() as cluster:
        yield cluster.url
