"""Statistics shared by replicas through PostgreSQL, against a real server
(tests/support/postgres_server.py): two replicas' figures merged exactly, each replica's own
figures, rows only ever written by their replica, the window, and the fallback to this
replica's figures while the server is down, with recovery."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytest.importorskip("psycopg", reason="needs the `postgres` extra: pip install -e '.[postgres]'")

import psycopg

from referee.models import ScopeKind, Traffic, Verdict, VerdictStatus
from referee.stats import ScopedStats, SharedStats, Statistics
from referee.stats.shared import MAX_WINDOW_MINUTES
from tests.support.postgres_server import PostgresCluster, postgres_cluster

T0 = 1_800_000_000.0  # a minute's start


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    with postgres_cluster() as running:
        yield running


@pytest.fixture
def url(cluster: PostgresCluster) -> Iterator[str]:
    if not cluster.running:
        cluster.start()
    yield cluster.url
    if not cluster.running:
        cluster.start()
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        for table in ("stats_verifier_minutes", "stats_http_minutes", "stats_replicas"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def verdict(score: float | None, ms: float, version: str = "exact@1") -> Verdict:
    status = VerdictStatus.ok if score is not None else VerdictStatus.error
    return Verdict(score=score, status=status, verifier=version, duration_ms=ms)


def judge(stats: Statistics, verdicts: list[tuple[float | None, float]], name: str = "exact") -> None:
    for score, ms in verdicts:
        stats.observe_verdict(verdict(score, ms, f"{name}@1"), name)


def replica(url: str, name: str, clock: Clock, **kwargs: int) -> tuple[Statistics, SharedStats]:
    return Statistics(clock=clock, **kwargs), SharedStats(url, name, clock=clock)


def scoped(stats: Statistics, shared: SharedStats | None, **kwargs: float) -> ScopedStats:
    return ScopedStats(stats, shared, shared.replica if shared else "solo", **kwargs)


A_VERDICTS = [(1.0, 3.0), (0.0, 12.0), (None, 250.0), (1.0, 4.5)]
B_VERDICTS = [(1.0, 0.8), (1.0, 900.0), (0.5, 40.0)]


def test_two_replicas_are_merged_exactly_and_listed_apart(url: str) -> None:
    clock = Clock()
    a_stats, a = replica(url, "replica-a", clock)
    b_stats, b = replica(url, "replica-b", clock)
    together = Statistics(clock=clock)  # one replica that would have judged everything
    judge(a_stats, A_VERDICTS)
    judge(b_stats, B_VERDICTS)
    judge(together, A_VERDICTS + B_VERDICTS)
    clock.now += 60  # the next minute too, on B only
    judge(b_stats, [(0.0, 7.0)], name="regex")
    judge(together, [(0.0, 7.0)], name="regex")
    for stats in (a_stats, b_stats, together, together):
        stats.observe_http(200)
        stats.observe_http(503)
    a_stats.observe_http(404)
    together.observe_http(404)
    assert a.publish(a_stats.take_dirty()) == 1 + 1  # a verifier minute, an HTTP minute
    assert b.publish(b_stats.take_dirty()) == 2 + 1

    async def pages() -> None:
        view = scoped(a_stats, a, cache_s=0)
        snapshot = await view.snapshot(60)
        now = view.now_minute()
        page = snapshot.verifier_page(60, 1, Traffic.training, now_minute=now)
        expected = together.verifier_page(60, 1)
        # Counters, latency histograms and series merge as if one replica had judged it all.
        strip = {"replicas"}
        assert [v.model_dump(exclude=strip) for v in page.verifiers] == [
            v.model_dump(exclude=strip) for v in expected.verifiers
        ]
        exact = page.verifiers[0]
        assert exact.verdicts == 7 and exact.errors == 1 and exact.max_ms == 900.0
        assert exact.p99_ms is not None and exact.p99_ms <= exact.max_ms
        # Per replica: each one's own figures.
        by_replica = {r.replica: r for r in exact.replicas}
        assert set(by_replica) == {"replica-a", "replica-b"}
        own_a = a_stats.verifier_page(60).verifiers[0]
        own_b = b_stats.verifier_page(60).verifiers[0]
        for mine, own in ((by_replica["replica-a"], own_a), (by_replica["replica-b"], own_b)):
            assert (mine.verdicts, mine.errors, mine.pass_rate, mine.mean_score) == (
                own.verdicts,
                own.errors,
                own.pass_rate,
                own.mean_score,
            )
            assert (mine.p50_ms, mine.p99_ms, mine.max_ms) == (own.p50_ms, own.p99_ms, own.max_ms)
        regex = page.verifiers[1]
        assert regex.verifier == "regex" and [r.replica for r in regex.replicas] == ["replica-b"]
        assert page.scope is not None and page.scope.kind is ScopeKind.all
        assert [r.replica for r in page.scope.replicas] == ["replica-a", "replica-b"]
        assert page.scope.replica == "replica-a" and page.scope.reason is None
        http = snapshot.http_page(60, 1, now_minute=now)
        assert http == together.http_page(60)
        assert (http.requests, http.client_errors, http.refused) == (5, 1, 2)
        # This replica's own view stays available.
        own = await view.snapshot(60, ScopeKind.replica)
        mine = own.verifier_page(60, 1, Traffic.training, now_minute=now)
        assert mine.scope is not None and mine.scope.kind is ScopeKind.replica
        assert [v.verdicts for v in mine.verifiers] == [4] and mine.verifiers[0].replicas == []

    asyncio.run(pages())
    a.close()
    b.close()


def test_this_replicas_figures_come_from_memory_never_twice(url: str) -> None:
    clock = Clock()
    a_stats, a = replica(url, "replica-a", clock)
    judge(a_stats, A_VERDICTS)
    a.publish(a_stats.take_dirty())
    judge(a_stats, [(1.0, 1.0)])  # not published yet

    async def read() -> int:
        snapshot = await scoped(a_stats, a, cache_s=0).snapshot(60)
        return snapshot.verifier_page(60, 1, Traffic.training, now_minute=int(T0)).verifiers[0].verdicts

    assert asyncio.run(read()) == 5
    a.close()


def test_a_replica_writes_and_deletes_only_its_own_rows(url: str) -> None:
    clock = Clock()
    a_stats, a = replica(url, "replica-a", clock, window_minutes=2)
    b_stats, b = replica(url, "replica-b", clock)
    judge(a_stats, [(1.0, 1.0)])
    judge(b_stats, [(0.0, 2.0), (0.0, 2.0)])
    a.publish(a_stats.take_dirty())
    b.publish(b_stats.take_dirty())
    judge(a_stats, [(1.0, 1.0)] * 3)  # the same minute and key, again, by A only
    a.publish(a_stats.take_dirty())

    def counts() -> dict[tuple[str, int], int]:
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT replica, minute, verdicts FROM stats_verifier_minutes").fetchall()
        return {(r, int(m)): v for r, m, v in rows}

    assert counts() == {("replica-a", int(T0)): 4, ("replica-b", int(T0)): 2}
    # Five minutes on: A's window (2 minutes) has left T0 behind; B's (a day) has not.
    clock.now += 5 * 60
    judge(a_stats, [(1.0, 1.0)])
    a.publish(a_stats.take_dirty())
    assert counts() == {("replica-a", int(T0) + 300): 1, ("replica-b", int(T0)): 2}
    # Rows older than any replica's window are nobody's: whoever publishes deletes them.
    clock.now += 60 * MAX_WINDOW_MINUTES
    a.publish(a_stats.take_dirty())
    assert counts() == {}
    a.close()
    b.close()


def test_server_down_falls_back_to_this_replica_and_recovers(cluster: PostgresCluster, url: str) -> None:
    clock = Clock()
    a_stats, a = replica(url, "replica-a", clock)
    b_stats, b = replica(url, "replica-b", clock)
    judge(b_stats, B_VERDICTS)
    b.publish(b_stats.take_dirty())
    judge(a_stats, A_VERDICTS)
    a.publish(a_stats.take_dirty())
    view = scoped(a_stats, a, cache_s=0)

    async def page() -> tuple[int, object]:
        snapshot = await view.snapshot(60)
        found = snapshot.verifier_page(60, 1, Traffic.training, now_minute=int(T0))
        return found.verifiers[0].verdicts, found.scope

    assert asyncio.run(page())[0] == 7
    cluster.stop()
    judge(b_stats, [(1.0, 1.0)])
    with pytest.raises(Exception, match="OperationalError"):
        b.publish(b_stats.take_dirty())  # kept pending
    verdicts, scope = asyncio.run(page())
    assert verdicts == 4  # this replica's own figures, not a 500
    assert scope.kind is ScopeKind.replica  # type: ignore[attr-defined]
    reason = scope.reason  # type: ignore[attr-defined]
    assert "cannot be read" in reason and "OperationalError" in reason
    assert "127.0.0.1" not in reason and str(cluster.port) not in reason and "postgres" not in reason
    cluster.start()
    assert b.publish(b_stats.take_dirty()) >= 1  # the pending minute, written now
    verdicts, scope = asyncio.run(page())
    assert verdicts == 4 + 3 + 1 and scope.kind is ScopeKind.all  # type: ignore[attr-defined]
    a.close()
    b.close()


def test_no_shared_store_is_this_replica_with_no_reason() -> None:
    stats = Statistics(clock=Clock())
    judge(stats, A_VERDICTS)

    async def pages() -> None:
        view = scoped(stats, None)
        default = await view.snapshot(60)
        assert default.scope.kind is ScopeKind.replica and default.scope.reason is None
        asked = await view.snapshot(60, ScopeKind.all)
        assert asked.scope.kind is ScopeKind.replica and "REFEREE_DB_URL" in (asked.scope.reason or "")
        page = default.verifier_page(60, 1, Traffic.training, now_minute=int(T0))
        assert page.model_dump(exclude={"scope"}) == stats.verifier_page(60).model_dump(exclude={"scope"})

    asyncio.run(pages())
