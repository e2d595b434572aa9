"""The registry's SQLite file locked by another writer, or its disk full, under scoring load
(issue 14): registrations get 503 + Retry-After (never a 500, never a half-written type),
scoring -- registered types included -- goes on, /readyz reports the registry degraded while
its writes fail and healthy once one succeeds, and nothing needs a restart."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.registered.conftest import register, registered_settings
from tests.registered.test_api import r1_math
from tests.support.load import ThreadedLoad
from tests.timing import wait_until, within

ANSWER = {"response": "<think>2+2</think><answer>\\boxed{4}</answer>", "reference": {"answer": "4"}}


class ScoringLoad(ThreadedLoad):
    """A client scoring a registered type and a built-in one until stopped."""

    def __init__(self, url: str) -> None:
        super().__init__(url, clients=1, timeout_s=30)
        self.statuses: list[tuple[int, float | None]] = []

    def step(self, http: httpx.Client, i: int) -> None:
        for body in (
            {"verifier": "faults.type", **ANSWER},
            {"verifier": "exact", "response": "4", "reference": "4"},
        ):
            r = http.post("/v1/score", json=body)
            self.statuses.append((r.status_code, r.json().get("score") if r.status_code == 200 else None))


def _registry(http: httpx.Client) -> dict[str, object]:
    checks = http.get("/readyz").json()["checks"]
    return checks["registry"]


def _refused_as_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) >= 1
    assert response.json()["error"] == "registry_unavailable"


def test_a_locked_registry_refuses_registrations_with_503_and_scoring_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "locked.db"
    settings = registered_settings(db, registry_busy_timeout_s=0.5)
    with BackgroundServer(settings) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        assert register(http, r1_math("faults.type")).status_code == 201
        assert _registry(http)["ok"] is True
        with ScoringLoad(server.url) as load:
            other = sqlite3.connect(db, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
            try:
                _refused_as_unavailable(register(http, r1_math("faults.second")))
                registry = _registry(http)
                assert registry["ok"] is False and "locked" in str(registry["reason"])
                assert http.get("/readyz").status_code == 200  # reported, scoring is unaffected
                before = len(load.statuses)
                wait_until(
                    lambda: len(load.statuses) >= before + 10, within(30), what="scoring under the lock"
                )
            finally:
                other.execute("ROLLBACK")
                other.close()
            assert register(http, r1_math("faults.second")).status_code == 201
            assert _registry(http)["ok"] is True
        assert load.statuses and all(s == (200, pytest.approx(1.0)) for s in load.statuses), set(
            load.statuses
        )
        names = {v["name"] for v in http.get("/v1/verifiers").json()["verifiers"]}
        assert {"faults.type", "faults.second"} <= names
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert check.execute("SELECT COUNT(*) FROM verifier_versions").fetchone() == (2,)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (mounting needs root: CI runs the suite as root)."""
    assert os.geteuid() == 0, "this test mounts a small tmpfs, which needs root (CI runs as root)"
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_refuses_registrations_with_503_and_recovers(tiny_disk: Path) -> None:
    db = tiny_disk / "full.db"
    with (
        BackgroundServer(registered_settings(db)) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        assert register(http, r1_math("faults.type")).status_code == 201
        with ScoringLoad(server.url) as load:
            filler = tiny_disk / "filler"
            with open(filler, "wb", buffering=0) as handle:  # every free block of the file system
                try:
                    while True:
                        handle.write(b"\0" * 4096)
                except OSError:
                    pass
            big = r1_math("faults.big")  # no block left for its page in the WAL
            _refused_as_unavailable(register(http, big))
            assert _registry(http)["ok"] is False
            before = len(load.statuses)
            wait_until(lambda: len(load.statuses) >= before + 10, within(30), what="scoring on a full disk")
            filler.unlink()
            assert register(http, big).status_code == 201
            assert _registry(http)["ok"] is True
        assert load.statuses and all(s == (200, pytest.approx(1.0)) for s in load.statuses), set(
            load.statuses
        )
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        names = {n for (n,) in check.execute("SELECT name FROM verifier_versions")}
        assert names == {"faults.type", "faults.big"}
