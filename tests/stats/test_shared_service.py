"""Two services on one PostgreSQL server (`REFEREE_DB_URL`): a verdict scored by replica A is in
replica B's `GET /v1/stats/verifiers`, its HTTP answers in B's health page, and B's dashboard
says whose figures it shows; `scope=replica` keeps B's own view."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("psycopg", reason="needs the `postgres` extra: pip install -e '.[postgres]'")

from referee.service.background import BackgroundServer, free_port
from referee.settings import Settings
from tests.support.postgres_server import postgres_server

FLUSH_S = 0.2


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with postgres_server() as running:
        yield running


def settings(url: str, tmp_path: Path, replica: str) -> Settings:
    return Settings(
        workers=1,
        sandbox=False,
        db_url=url,
        db_path=tmp_path / f"{replica}.db",
        stats_db_path=tmp_path / f"{replica}-stats.db",
        stats_flush_s=FLUSH_S,
        stats_replica_id=replica,
    )


def eventually(read: Any, done: Any, timeout_s: float = 10.0) -> Any:
    """`read()` until `done(value)`; the flush, the publish and the cache take a few FLUSH_S."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(FLUSH_S / 2)


@pytest.mark.slow
def test_a_verdict_scored_on_one_replica_is_in_the_others_statistics(url: str, tmp_path: Path) -> None:
    with (
        BackgroundServer(settings(url, tmp_path, "replica-a")) as a,
        BackgroundServer(settings(url, tmp_path, "replica-b")) as b,
        httpx.Client(timeout=30) as http,
    ):
        for response in ("4", "5"):
            scored = http.post(
                f"{a.url}/v1/score", json={"verifier": "exact", "response": response, "reference": "4"}
            )
            assert scored.status_code == 200, scored.text

        def verifiers() -> dict[str, Any]:
            page = http.get(f"{b.url}/v1/stats/verifiers")
            assert page.status_code == 200, page.text
            return dict(page.json())

        # Both verdicts, once A has published the second (a flush may fall between the two).
        page = eventually(verifiers, lambda p: [v["verdicts"] for v in p["verifiers"]] == [2])
        (exact,) = page["verifiers"]
        assert exact["verifier"] == "exact" and exact["verdicts"] == 2 and exact["pass_rate"] == 0.5
        assert [r["replica"] for r in exact["replicas"]] == ["replica-a"]
        assert page["scope"]["kind"] == "all" and page["scope"]["replica"] == "replica-b"
        assert [r["replica"] for r in page["scope"]["replicas"]] == ["replica-a", "replica-b"]
        # B's own view: it judged nothing.
        own = http.get(f"{b.url}/v1/stats/verifiers", params={"scope": "replica"}).json()
        assert own["verifiers"] == [] and own["scope"]["kind"] == "replica"
        # The HTTP answers of A (two 200s at least) are in B's health page.
        health = eventually(
            lambda: http.get(f"{b.url}/v1/stats/health").json(), lambda h: h["http"]["requests"] >= 2
        )
        assert health["http"]["requests"] >= 2 and health["scope"]["kind"] == "all"
        # The dashboard says whose figures they are, and which replica judged `exact`.
        fragment = http.get(f"{b.url}/ui/fragments/overview").text
        assert "all 2 replicas" in fragment and 'id="replica-table"' in fragment
        assert 'data-replica="replica-a"' in fragment


@pytest.mark.slow
def test_an_unreachable_store_gives_this_replicas_figures_and_says_why(tmp_path: Path) -> None:
    """Never a 500, never the DSN: the page is this replica's, and says so."""
    port = free_port()
    dsn = f"postgresql://stats-user:s3cret@127.0.0.1:{port}/statsdb"
    lone = settings(dsn, tmp_path, "replica-a")
    with BackgroundServer(lone) as a, httpx.Client(timeout=30) as http:
        scored = http.post(f"{a.url}/v1/score", json={"verifier": "exact", "response": "4", "reference": "4"})
        assert scored.status_code == 200, scored.text
        page = http.get(f"{a.url}/v1/stats/verifiers")
        assert page.status_code == 200, page.text
        body = page.json()
        assert [v["verdicts"] for v in body["verifiers"]] == [1]
        assert body["scope"]["kind"] == "replica" and "cannot be read" in body["scope"]["reason"]
        health = http.get(f"{a.url}/v1/stats/health")
        assert health.status_code == 200 and health.json()["scope"]["kind"] == "replica"
        fragment = http.get(f"{a.url}/ui/fragments/overview")
        assert fragment.status_code == 200 and "This replica only" in fragment.text
        assert 'id="stats-scope-reason"' in fragment.text
        for answer in (page.text, health.text, fragment.text):
            for secret in ("s3cret", "stats-user", "statsdb", str(port)):
                assert secret not in answer
