"""Prometheus metrics. Each app gets its own registry so several apps (tests) never collide."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from referee.environments import EpisodeCounters
from referee.judges import JudgeClients
from referee.models import Verdict
from referee.sandbox import SandboxPool
from referee.scoring import Admission, WorkerPool
from referee.sessions import CodeSessions

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
FALLBACK_OUTCOMES = ("equivalent", "not_equivalent", "error")


def fallback_outcome(verdict: Verdict) -> str:
    """How a verdict the math fallback sent to the judge ended (one of FALLBACK_OUTCOMES)."""
    if verdict.status.value != "ok" or verdict.score is None:
        return "error"
    return "equivalent" if verdict.score >= 1.0 else "not_equivalent"


class _PoolCollector(Collector):
    """Reads the pool's state at scrape time instead of mirroring it into gauges."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("referee_pool_workers", "Verifier worker processes", value=self._pool.size)
        yield GaugeMetricFamily(
            "referee_pool_pending", "Verdicts queued or running", value=self._pool.pending
        )
        yield GaugeMetricFamily(
            "referee_pool_saturation",
            "Pending verdicts per worker (above 1 means requests queue)",
            value=self._pool.pending / max(1, self._pool.size),
        )
        yield GaugeMetricFamily(
            "referee_pool_timeouts",
            "Checks that used up their CPU-time budget (score 0)",
            value=self._pool.timeouts,
        )
        yield GaugeMetricFamily(
            "referee_pool_starved",
            "Checks kept from a CPU past their wall-clock backstop (no verdict: node overloaded)",
            value=self._pool.starved,
        )
        yield GaugeMetricFamily(
            "referee_pool_crashes", "Worker processes that died", value=self._pool.crashes
        )


class _LaneCollector(Collector):
    """Admission per execution lane (cpu / sandbox / io), read at scrape time."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lanes = self._admission.snapshot()
        for metric, key, doc in (
            ("referee_lane_in_flight", "in_flight", "Units admitted and not done (verdicts; programs)"),
            ("referee_lane_rate", "rate_per_s", "Measured throughput while busy, units per second"),
            ("referee_lane_wait_seconds", "wait_s", "Expected queueing delay of new work"),
            ("referee_lane_refused", "refused", "Requests refused with 503 (queue wait over the bound)"),
        ):
            family = GaugeMetricFamily(metric, doc, labels=["lane"])
            for lane, figures in lanes.items():
                family.add_metric([lane], figures[key])
            yield family


class _JudgeCollector(Collector):
    """The judge endpoints' calls, tokens and verdict cache, read at scrape time from the
    counters `JudgeClients` keeps (the `judges` package knows nothing of Prometheus)."""

    def __init__(self, judges: JudgeClients) -> None:
        self._judges = judges

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        cache = self._judges.cache
        yield CounterMetricFamily(
            "referee_judge_cache_hits", "Judge outcomes found in the verdict cache", value=cache.hits
        )
        yield CounterMetricFamily(
            "referee_judge_cache_misses", "Judge outcomes looked up and not cached", value=cache.misses
        )
        # The ratio itself, so a dashboard need not divide two rates (and 0, not NaN, before
        # the first lookup: an idle replica is not an alert).
        yield GaugeMetricFamily(
            "referee_judge_cache_hit_ratio",
            "Verdict cache hits / lookups since the service started (0 before any lookup)",
            value=cache.hit_rate() or 0.0,
        )
        for name, doc, label, counts in (
            (
                "referee_judge_calls",
                "Chat-completion calls by endpoint and outcome (ok, or why no reply came back)",
                "outcome",
                self._judges.calls,
            ),
            (
                "referee_judge_tokens",
                "Tokens the judge endpoints reported using, by kind (prompt, completion)",
                "kind",
                self._judges.tokens,
            ),
        ):
            family = CounterMetricFamily(name, doc, labels=["endpoint", label])
            for labels, count in sorted(counts.items()):
                family.add_metric(list(labels), count)
            yield family


class _SessionCollector(Collector):
    """Code sessions (/v1/sessions), read at scrape time from `CodeSessions.counters`."""

    def __init__(self, sessions: CodeSessions) -> None:
        self._sessions = sessions

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        c = self._sessions.counters
        yield GaugeMetricFamily(
            "referee_sessions_open", "Code sessions open", value=self._sessions.open_count
        )
        yield CounterMetricFamily("referee_sessions_opened", "Code sessions opened", value=c.opened)
        ended = CounterMetricFamily(
            "referee_sessions_ended",
            "Code sessions ended, by why: closed (DELETE), expired (idle TTL or lifetime), "
            "lost (container lost), stopped (with the service)",
            labels=["reason"],
        )
        for reason in ("closed", "expired", "lost", "stopped"):
            ended.add_metric([reason], getattr(c, reason))
        yield ended
        for name, doc, label, counts in (
            (
                "referee_sessions_refused",
                "Session opens refused: quota (429), full or unavailable (503)",
                "reason",
                c.refused,
            ),
            (
                "referee_session_calls",
                "Calls run in code sessions, by outcome status (lost: container lost)",
                "status",
                c.calls,
            ),
        ):
            family = CounterMetricFamily(name, doc, labels=[label])
            for value, count in sorted(counts.items()):
                family.add_metric([value], count)
            yield family
        yield CounterMetricFamily(
            "referee_session_restarts",
            "Calls that cost their session's kernel state (timeout, memory, killed)",
            value=c.restarts,
        )


class _EpisodeCollector(Collector):
    """Environment episodes (/v1/environments), read at scrape time from the episode table's
    counters. Turns and tool calls are summed over finished episodes: divided by
    `referee_episodes_finished`, they are the averages per episode."""

    def __init__(self, counters: EpisodeCounters) -> None:
        self._counters = counters

    def collect(self) -> Iterator[CounterMetricFamily]:
        c = self._counters
        started = CounterMetricFamily(
            "referee_episodes_started", "Episodes started, by environment", labels=["environment"]
        )
        for name, count in sorted(c.by_environment.items()):
            started.add_metric([name], count)
        yield started
        for name, doc, value in (
            ("referee_episodes_finished", "Episodes finished (answered, solved or out of turns)", c.finished),
            ("referee_episodes_expired", "Episodes closed by their idle TTL", c.expired),
            ("referee_episodes_deleted", "Episodes deleted (DELETE) before they expired", c.deleted),
            (
                "referee_episode_turns",
                "Turns of finished episodes (over episodes_finished: per episode)",
                c.turns,
            ),
            ("referee_episode_tool_calls", "Tool calls of finished episodes (likewise)", c.tool_calls),
            (
                "referee_episode_tool_errors",
                "Tool calls that failed (error, timeout, bad tool)",
                c.tool_errors,
            ),
        ):
            yield CounterMetricFamily(name, doc, value=value)


class _CompileCacheCollector(Collector):
    """The sandbox pool's compile cache (sandbox/compile_cache.py), read at scrape time."""

    def __init__(self, sandbox: SandboxPool) -> None:
        self._cache = sandbox.compile_cache

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        stats = self._cache.stats
        for name, doc, value in (
            ("hits", "Submissions whose compile came from the compile cache", stats["hits"]),
            ("misses", "Submissions compiled in their container (not in the compile cache)", stats["misses"]),
            ("evictions", "Compiled programs the compile cache's bound pushed out", stats["evicted"]),
        ):
            yield CounterMetricFamily(f"referee_sandbox_compile_cache_{name}", doc, value=value)
        yield GaugeMetricFamily(
            "referee_sandbox_compile_cache_bytes", "Bytes the compile cache holds", value=self._cache.bytes
        )


class Metrics:
    def __init__(
        self,
        pool: WorkerPool,
        admission: Admission | None = None,
        judges: JudgeClients | None = None,
        sessions: CodeSessions | None = None,
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "referee_http_requests", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.request_latency = Histogram(
            "referee_http_request_seconds",
            "HTTP request latency",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.verdicts = Counter(
            "referee_verdicts",
            "Verdicts by verifier and status",
            ["verifier", "status"],
            registry=self.registry,
        )
        self.verdict_latency = Histogram(
            "referee_verdict_seconds",
            "Time to reach one verdict",
            ["verifier"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        # How often the rules fail to read an answer and the judge is asked instead, and what
        # the judge made of it: a share of `error` here is masked reward a trainer never sees.
        self.judge_fallbacks = Counter(
            "referee_math_judge_fallback",
            "Math answers the rules could not read that went to the judge (options.fallback), "
            "by outcome: equivalent, not_equivalent, error (no verdict: masked)",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in FALLBACK_OUTCOMES:
            self.judge_fallbacks.labels(outcome)
        self.registry.register(_PoolCollector(pool))
        if admission is not None:
            self.registry.register(_LaneCollector(admission))
        if judges is not None:
            self.registry.register(_JudgeCollector(judges))
        if sessions is not None:
            self.registry.register(_SessionCollector(sessions))

    def observe_verdict(self, verdict: Verdict, verifier: str) -> None:
        self.verdicts.labels(verifier, verdict.status.value).inc()
        self.verdict_latency.labels(verifier).observe(verdict.duration_ms / 1000.0)
        if verdict.details.get("fallback") == "judge":  # scoring/fallback.py's mark
            self.judge_fallbacks.labels(fallback_outcome(verdict)).inc()

    def watch_episodes(self, counters: EpisodeCounters) -> None:
        """Also export the environments' episode counters."""
        self.registry.register(_EpisodeCollector(counters))

    def watch_compile_cache(self, sandbox: object) -> None:
        """Also export the sandbox pool's compile cache (when there is a pool: not a stand-in)."""
        if isinstance(sandbox, SandboxPool):
            self.registry.register(_CompileCacheCollector(sandbox))
