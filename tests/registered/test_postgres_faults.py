"""PostgreSQL faults under the registry (issue 27, item 7), against a real server that the tests
stop and restart (tests/support/postgres_server.py): a `SQL_ASCII` database serves registered
types like a UTF-8 one; while the server is down the versions already loaded are still scored,
registrations and names never loaded are 503 saying the registry is unreachable; the service
recovers by itself once the server is back (/readyz included, without a write); and no error
body or /readyz reason names the server."""

from __future__ import annotations

import faulthandler
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

pytest.importorskip("psycopg", reason="needs the `postgres` extra: pip install -e '.[postgres]'")

from referee.registered.postgres import PostgresStore
from referee.registered.store import RegistryUnavailable, RegistryUnreachable
from referee.service.background import BackgroundServer, free_port
from tests.conftest import make_settings
from tests.registered.conftest import SECRET_KEY
from tests.registered.test_api import r1_math
from tests.support.postgres_server import PostgresCluster, postgres_cluster
from tests.timing import wait_until, within

ANSWER = {"response": "<think>2+2</think><answer>\\boxed{4}</answer>", "reference": {"answer": "4"}}


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    with postgres_cluster() as running:
        yield running


def _score(http: httpx.Client, verifier: str) -> httpx.Response:
    return http.post("/v1/score", json={"verifier": verifier, **ANSWER})


def _exact(http: httpx.Client) -> httpx.Response:
    scored = http.post("/v1/score", json={"verifier": "exact", "response": "4", "reference": "4"})
    assert scored.status_code == 200, scored.text
    return scored


def _registry_check(http: httpx.Client) -> dict[str, Any]:
    ready = http.get("/readyz")
    assert ready.status_code == 200, ready.text  # reported; the registry never makes it unready
    check: dict[str, Any] = ready.json()["checks"]["registry"]
    return check


def _unreachable(response: httpx.Response, cluster: PostgresCluster) -> None:
    """A 503 with Retry-After that says the registry cannot be reached, and not where it is."""
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) >= 1
    body = response.json()
    assert body["error"] == "registry_unavailable" and "cannot be reached" in body["message"], body
    _names_no_server(response.text, cluster)


def _names_no_server(text: str, cluster: PostgresCluster) -> None:
    assert "127.0.0.1" not in text and str(cluster.port) not in text, text


def test_a_sql_ascii_database_serves_registered_types(cluster: PostgresCluster) -> None:
    url = cluster.create_database("legacy", encoding="SQL_ASCII")
    body = {**r1_math("ascii.type"), "description": "équation, non-ASCII text"}
    with (
        BackgroundServer(make_settings(workers=1, db_url=url)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        created = http.post("/v1/verifiers", json=body)
        assert created.status_code == 201, created.text
        scored = _score(http, "ascii.type")
        assert scored.status_code == 200 and scored.json()["score"] == 1.0, scored.text
        assert _score(http, "ascii.type@1").status_code == 200
        unknown = _score(http, "ascii.missing")
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_verifier", unknown.text
        listed = {v["name"] for v in http.get("/v1/verifiers").json()["verifiers"]}
        assert "ascii.type" in listed
        versions = http.get("/v1/verifiers/ascii.type/versions")
        assert (
            versions.status_code == 200
            and versions.json()["versions"][0]["description"] == body["description"]
        )
    store = PostgresStore(url)
    stored = store.get("ascii.type")
    assert stored is not None and isinstance(stored.name, str) and isinstance(stored.document, dict)
    store.close()


def test_an_outage_keeps_loaded_types_scored_and_recovers_by_itself(cluster: PostgresCluster) -> None:
    settings = make_settings(workers=1, db_url=cluster.url, db_refresh_s=0.2)
    with (
        BackgroundServer(settings) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        # Before: @1 scored (loaded), then @2 registered, which the unpinned name now means.
        assert http.post("/v1/verifiers", json=r1_math("pg.type")).status_code == 201
        assert _score(http, "pg.type@1").json()["score"] == 1.0
        assert http.post("/v1/verifiers", json=r1_math("pg.type", 0.2)).status_code == 201
        assert _score(http, "pg.type").json()["verifier"] == "pg.type@2"
        assert _registry_check(http)["ok"] is True

        cluster.stop()
        # During: what was loaded is scored, the latest and the pinned version alike.
        for name, version in (("pg.type", "pg.type@2"), ("pg.type@1", "pg.type@1"), ("pg.type", "pg.type@2")):
            scored = _score(http, name)
            assert scored.status_code == 200 and scored.json()["verifier"] == version, scored.text
            assert scored.json()["score"] == 1.0
        _unreachable(_score(http, "pg.never"), cluster)  # perhaps registered elsewhere: not a 404
        _unreachable(_score(http, "pg.type@9"), cluster)
        _unreachable(http.post("/v1/verifiers", json=r1_math("pg.other")), cluster)
        assert _exact(http).json()["score"] == 1.0  # built-ins never ask the registry
        registry = _registry_check(http)
        assert registry["ok"] is False and "cannot be reached" in registry["reason"], registry
        _names_no_server(str(registry), cluster)

        cluster.start()
        # After: the registry recovers with no write and no restart; then everything works.
        wait_until(lambda: _registry_check(http)["ok"] is True, 30, 0.05, what="the registry to recover")
        assert _score(http, "pg.type@1").json()["score"] == 1.0
        unknown = _score(http, "pg.never")
        assert unknown.status_code == 404, unknown.text
        assert http.post("/v1/verifiers", json=r1_math("pg.other")).status_code == 201
        assert _score(http, "pg.other").json()["verifier"] == "pg.other@1"


def test_a_server_restarted_between_two_uses_is_reconnected(cluster: PostgresCluster) -> None:
    """Every connection the store held died with the restart: the next read and the next write
    go through on new ones, with no 503 and no outage reported."""
    store = PostgresStore(cluster.url)
    store.add("kept", "python", "d1", {"spec": 1}, None, max_names=10)
    cluster.stop()
    cluster.start()
    assert store.get("kept") is not None
    assert store.add("kept", "python", "d2", {"spec": 2}, None, max_names=10)[0].version == 2
    assert store.health() == (True, "ok")
    store.close()


def test_errors_and_health_never_name_the_server() -> None:
    """An unreachable server (a URL with a password): the 503, /readyz's reason and the log;
    the log says which server (host and port, for the operator) but never the password."""
    port = free_port()
    store = PostgresStore(f"postgresql://dbuser:hunter2@127.0.0.1:{port}/dbname_x", connect_timeout_s=2)
    with capture_logs() as logs:
        with pytest.raises(RegistryUnavailable) as refused:
            store.add("x", "python", "d", {}, None, max_names=10)
    shown = [refused.value.message, store.health()[1], repr(store)]
    with pytest.raises(RegistryUnavailable) as read:
        store.get("x")
    shown.append(read.value.message)
    for text in shown:
        for part in ("127.0.0.1", str(port), "dbuser", "hunter2", "dbname_x"):
            assert part not in text, text
    assert store.health()[0] is False
    logged = str(logs)
    assert str(port) in logged and "hunter2" not in logged, logged
    store.close()


def test_a_service_started_while_the_server_is_down_starts_and_recovers(cluster: PostgresCluster) -> None:
    """Built-in verifiers are served from the start, registered types once the server answers
    (no restart); the secrets it could not reseal at start are left as they were."""
    cluster.stop()
    settings = make_settings(workers=1, db_url=cluster.url, secret_keys=[SECRET_KEY])
    with (
        BackgroundServer(settings) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert _registry_check(http)["ok"] is False
        _unreachable(_score(http, "pg.type"), cluster)
        assert _exact(http).json()["score"] == 1.0
        cluster.start()
        wait_until(lambda: _registry_check(http)["ok"] is True, 30, 0.05, what="the registry to recover")
        assert http.post("/v1/verifiers", json=r1_math("pg.type")).status_code == 201
        assert _score(http, "pg.type").json()["score"] == 1.0


@contextmanager
def _black_hole(port: int) -> Iterator[None]:
    """Every packet to `port` on loopback dropped: a server whose host vanished (no refusal, no
    reset), as in a network partition. Needs root and iptables (CI runs the suite as root)."""
    rule = ["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), "-j", "DROP"]
    if shutil.which("iptables") is None or os.geteuid() != 0:
        pytest.skip("needs root and iptables to drop packets")
    if subprocess.run(["iptables", "-I", *rule], capture_output=True).returncode != 0:
        pytest.skip("iptables refused the rule (no NET_ADMIN capability)")
    try:
        yield
    finally:
        subprocess.run(["iptables", "-D", *rule], check=True)


def test_a_silent_server_never_holds_up_a_resolution(cluster: PostgresCluster) -> None:
    """A server that stops answering (packets dropped): `generation()`, which the catalog calls
    on the event loop for every registered name, answers at once from what the watcher read;
    the watcher notices within the connection timeouts and recovers once packets flow again."""
    store = PostgresStore(cluster.url, refresh_s=0.2, connect_timeout_s=2)
    store.add("kept", "python", "d1", {}, None, max_names=10)
    before = store.generation()

    def generation_quickly() -> object:
        result: list[object] = []
        thread = threading.Thread(target=lambda: result.append(_generation_or_error(store)), daemon=True)
        thread.start()
        thread.join(within(1.0))
        assert result, "generation() waited on a silent server"
        return result[0]

    with _black_hole(cluster.port):
        time.sleep(0.5)  # the watcher's next read is now stuck on the silent server
        assert generation_quickly() == before
        wait_until(lambda: store.health()[0] is False, 30, 0.05, what="the outage to be noticed")
        assert isinstance(generation_quickly(), RegistryUnreachable)
    wait_until(lambda: store.health()[0] is True, 30, 0.05, what="the registry to recover")
    assert store.generation() == before and store.get("kept") is not None
    store.close()


def _generation_or_error(store: PostgresStore) -> object:
    try:
        return store.generation()
    except RegistryUnavailable as exc:
        return exc


def test_a_silent_server_holds_up_only_the_requests_that_read_it(cluster: PostgresCluster) -> None:
    """While a pinned version never loaded is being read from a server that stopped answering
    (until the connection gives up, ~10 s), the event loop goes on: a built-in and a type
    already loaded are answered at once, and the pinned request ends in the usual 503."""
    settings = make_settings(workers=1, db_url=cluster.url, db_refresh_s=0.2)
    with (
        BackgroundServer(settings) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert http.post("/v1/verifiers", json=r1_math("pg.type")).status_code == 201
        assert http.post("/v1/verifiers", json=r1_math("pg.type", 0.2)).status_code == 201
        assert _score(http, "pg.type").json()["verifier"] == "pg.type@2"  # @1 never loaded
        pinned: list[httpx.Response] = []
        with _black_hole(cluster.port):

            def read_pinned() -> None:
                with httpx.Client(base_url=server.url, timeout=60) as own:
                    pinned.append(_score(own, "pg.type@1"))

            reader = threading.Thread(target=read_pinned, daemon=True)
            reader.start()
            time.sleep(0.5)  # the pinned read is now waiting on the silent server
            assert reader.is_alive(), pinned
            asks = {
                "a built-in": lambda: _exact(http),
                "a loaded type": lambda: _score(http, "pg.type"),
                "/readyz": lambda: http.get("/readyz"),
            }
            for what, ask in asks.items():
                started = time.monotonic()
                # If the loop is held up, every thread's stack (the server's loop included)
                # goes to stderr, which the failure report shows: what it waited on.
                faulthandler.dump_traceback_later(within(1.0))
                try:
                    answered = ask()
                finally:
                    faulthandler.cancel_dump_traceback_later()
                took = time.monotonic() - started
                assert answered.status_code == 200, answered.text
                assert took < within(1.0), f"{what} took {took:.1f} s: the event loop waited on the database"
            reader.join(60)
        assert pinned, "the pinned request never ended"
        _unreachable(pinned[0], cluster)
