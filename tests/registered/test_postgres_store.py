"""The registered-types store in PostgreSQL against a real server (tests/support/postgres_server.py):
the `VerifierStore` semantics of the SQLite store, concurrent registrations of one name from
several processes (consecutive versions, never two `@3`), the quota across writers, and the
bound within which another replica sees a new type."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

pytest.importorskip("psycopg", reason="needs the `postgres` extra: pip install -e '.[postgres]'")

from referee.registered.postgres import PostgresStore
from referee.registered.store import QuotaExceeded, RegistryUnavailable
from referee.service.background import BackgroundServer
from referee.settings import Settings
from tests.support.postgres_server import postgres_server


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture
def url(server: str) -> Iterator[str]:
    yield server
    store = PostgresStore(server)
    conn = store._connect()
    conn.execute("TRUNCATE verifier_versions, environments")
    store.close()


def test_versions_digest_disable_and_reseal(url: str) -> None:
    store = PostgresStore(url)
    first, created = store.add("kw", "python", "d1", {"spec": 1}, None, max_names=10)
    assert created and first.qualified == "kw@1"
    again, created = store.add("kw", "python", "d1", {"spec": 1}, None, max_names=10)
    assert not created and again.version == 1
    second, _ = store.add("kw", "webhook", "d2", {"spec": 2}, "sealed", max_names=10)
    assert second.version == 2 and store.get("kw") == second and store.get("kw", 1) == first
    assert [v.version for v in store.versions("kw")] == [1, 2]
    assert store.disable("kw", 2) == [2]
    assert store.get("kw") == first and store.get("kw", 2) is None
    third, _ = store.add("kw", "python", "d3", {"spec": 3}, None, max_names=10)
    assert third.version == 3  # numbers are never reused
    assert store.reseal(lambda s: s.upper()) == 1
    assert store.versions("kw")[1].secret == "SEALED"
    store.add("abc", "python", "d", {}, None, max_names=10)
    assert [(v.name, v.version) for v in store.latest_active()] == [("abc", 1), ("kw", 3)]
    assert store.disable("kw") == [1, 3]
    assert store.get("kw") is None
    assert store.health() == (True, "ok")
    store.close()


def test_quota_counts_every_writer(url: str) -> None:
    a, b = PostgresStore(url), PostgresStore(url)
    a.add("one", "python", "d", {}, None, max_names=2)
    b.add("two", "python", "d", {}, None, max_names=2)
    with pytest.raises(QuotaExceeded):
        a.add("three", "python", "d", {}, None, max_names=2)
    a.add("one", "python", "d-new", {}, None, max_names=2)  # a new version of an active name is fine
    a.close()
    b.close()


def _register_many(url: str, worker: int, count: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = PostgresStore(url)
    versions = [
        store.add("shared", "python", f"digest-{worker}-{i}", {"w": worker, "i": i}, None, max_names=10)[
            0
        ].version
        for i in range(count)
    ]
    store.close()
    out.put(versions)


@pytest.mark.slow
def test_concurrent_registrations_get_consecutive_versions(url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_register_many, args=(url, w, 25, out)) for w in range(4)]
    for p in procs:
        p.start()
    got = [v for _ in procs for v in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=60)
    assert sorted(got) == list(range(1, 101))  # 4 × 25 registrations: @1..@100, no duplicate
    store = PostgresStore(url)
    assert [v.version for v in store.versions("shared")] == list(range(1, 101))
    store.close()


def test_another_replica_sees_a_new_type_within_the_bound(url: str) -> None:
    writer, reader = PostgresStore(url, refresh_s=60), PostgresStore(url, refresh_s=0.5)
    before, own = reader.generation(), writer.generation()
    writer.add("fresh", "python", "d", {}, None, max_names=10)
    assert writer.generation() != own  # its own write: seen at once, whatever refresh_s
    start = time.monotonic()
    while reader.generation() == before:
        assert time.monotonic() - start < 0.5 + 1.0, "the change was not seen within refresh_s"
        time.sleep(0.02)
    assert [v.name for v in reader.latest_active()] == ["fresh"]
    writer.close()
    reader.close()


def test_an_unreachable_server_is_a_503_not_a_500() -> None:
    from referee.service.background import free_port

    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/referee", connect_timeout_s=2)
    with pytest.raises(RegistryUnavailable):
        store.add("x", "python", "d", {}, None, max_names=10)
    assert store.health()[0] is False
    with pytest.raises(RegistryUnavailable):
        store.get("x")
    store.close()  # and its reconnection thread


def _r1_math(weight: float) -> dict[str, Any]:
    return {
        "name": "r1.math",
        "kind": "declarative",
        "spec": {
            "type": "multi",
            "weights": {"correct": weight, "fmt": round(1 - weight, 2)},
            "components": {
                "correct": {"type": "verifier", "name": "math", "reference": "{{reference.answer}}"},
                "fmt": {"type": "verifier", "name": "format.think_answer", "reference": None},
            },
        },
        "reference_schema": {"type": "object", "required": ["answer"]},
        "examples": [
            {
                "response": "<think>2+2</think><answer>\\boxed{4}</answer>",
                "reference": {"answer": "4"},
                "expected_score": 1.0,
            },
            {"response": "\\boxed{4}", "reference": {"answer": "4"}, "expected_score": weight},
        ],
    }


def test_two_services_share_the_registry(url: str) -> None:
    """Register through one service, score through the other; concurrent registrations of one
    name through both get consecutive versions (`REFEREE_DB_URL` selects the server store)."""
    settings = Settings(workers=1, sandbox=False, db_url=url, db_refresh_s=0.5)
    with BackgroundServer(settings) as a, BackgroundServer(settings) as b:
        created = httpx.post(f"{a.url}/v1/verifiers", json=_r1_math(0.9), timeout=60)
        assert created.status_code in (200, 201), created.text
        deadline = time.monotonic() + 0.5 + 2.0
        while True:
            scored = httpx.post(
                f"{b.url}/v1/score",
                json={"verifier": "r1.math", "response": "\\boxed{2}", "reference": {"answer": "2"}},
                timeout=60,
            )
            if scored.status_code == 200:
                break
            assert scored.status_code == 404 and time.monotonic() < deadline, scored.text
            time.sleep(0.05)
        assert scored.json()["score"] == 0.9 and scored.json()["verifier"] == "r1.math@1"

        def register(server: BackgroundServer, weight: float) -> int:
            response = httpx.post(f"{server.url}/v1/verifiers", json=_r1_math(weight), timeout=60)
            assert response.status_code in (200, 201), response.text
            return int(response.json()["verifier"].rpartition("@")[2])

        with ThreadPoolExecutor(8) as pool:
            weights = [0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
            versions = list(pool.map(register, [a, b] * 3, weights))
        assert sorted(versions) == [2, 3, 4, 5, 6, 7]


def test_two_services_share_registered_environments(url: str) -> None:
    """An environment registered through one replica is served by the other within the store's
    refresh bound, survives both replicas' restart, and is refused by both once deleted."""
    from tests.service.test_environments_api import REGISTRATION

    settings = Settings(workers=1, sandbox=False, db_url=url, db_refresh_s=0.5)

    def episode(server: BackgroundServer) -> httpx.Response:
        return httpx.post(f"{server.url}/v1/environments/sudoku.coach/episodes", json={"seed": 3}, timeout=60)

    def until(server: BackgroundServer, status: int) -> None:
        deadline = time.monotonic() + 0.5 + 2.0
        while (answer := episode(server)).status_code != status:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.05)

    with BackgroundServer(settings) as a, BackgroundServer(settings) as b:
        assert episode(b).status_code == 404
        created = httpx.post(f"{a.url}/v1/environments", json=REGISTRATION, timeout=60)
        assert created.status_code == 201, created.text
        until(b, 201)
        listed = httpx.get(f"{b.url}/v1/environments", timeout=60).json()
        assert "sudoku.coach" in [e["name"] for e in listed]
    with BackgroundServer(settings) as a, BackgroundServer(settings) as b:
        assert episode(a).status_code == 201  # read back from the database at start
        assert httpx.delete(f"{b.url}/v1/environments/sudoku.coach", timeout=60).status_code == 204
        until(a, 404)
    store = PostgresStore(url)
    assert store.environment_documents() == []
    store.close()
