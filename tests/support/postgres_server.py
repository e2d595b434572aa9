"""A real PostgreSQL server for the tests: Debian's `postgresql` package, `initdb` into a
temporary directory, a free loopback port, trust authentication (loopback only), stopped after.
Run as the `postgres` user when the tests run as root (initdb refuses root)."""

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


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yields the server's URL (database `referee`)."""
    root = Path(tempfile.mkdtemp(prefix="referee-pg-"))
    data, sockets = root / "data", root / "run"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(sockets, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    run(_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    run(
        _bin("pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
        "-o", f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c fsync=off", "start",
    )  # fmt: skip
    try:
        url = f"postgresql://postgres@127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(f"{url}/postgres", autocommit=True) as conn:
                    conn.execute("CREATE DATABASE referee")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield f"{url}/referee"
    finally:
        run(_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
