"""The runtime owns the service's lifetimes: built from one Settings, started in order,
stopped in reverse; the verifier index is built once and is what the worker processes use."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from referee.models import AdvantageConfig, GroupSpec, VerdictStatus
from referee.runtime import Runtime
from referee.stats import Statistics, StatsStore
from referee.verifiers import Check, Verifier
from tests.conftest import make_settings


class OnlyInThisIndex(Verifier):
    """Registered into a runtime's index after it is built: no configuration names it, so a
    worker process knows it only if it was handed that very index. Its instances hold a lock,
    which cannot be pickled: the index travels as classes, each instantiated in the worker."""

    name = "test.only_in_this_index"
    example: ClassVar[dict[str, Any]] = {"response": "x", "reference": None}

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        return Check(1.0, reason="judged by the runtime's own index")


def _settings(tmp_path: Path, **overrides: object) -> Any:
    return make_settings(workers=1, db_path=tmp_path / "referee.db", **overrides)


async def test_workers_use_the_index_the_runtime_built(tmp_path: Path) -> None:
    runtime = Runtime(_settings(tmp_path))
    runtime.installed.register(OnlyInThisIndex, kind="extra")
    async with runtime:
        group = GroupSpec(verifier="test.only_in_this_index", reference=None, responses=["a", "b"])
        [result] = await runtime.scorer.score_groups([group], AdvantageConfig())
    assert [v.status for v in result.verdicts] == [VerdictStatus.ok] * 2, result.verdicts[0].reason
    assert result.rewards == [1.0, 1.0]
    # The catalog resolves names against the same index.
    assert runtime.catalog.resolve("test.only_in_this_index") is runtime.installed.get(
        "test.only_in_this_index"
    )


async def test_stop_cancels_running_audits_and_flushes_statistics(tmp_path: Path) -> None:
    runtime = Runtime(_settings(tmp_path, stats_flush_s=3600.0))  # only the final flush writes
    seen: list[tuple[str, str]] = []
    runtime.observe(lambda verdict, name: seen.append((name, verdict.status.value)))
    ended = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            ended.set()

    await runtime.start()
    try:
        await runtime.scorer.score_groups(
            [GroupSpec(verifier="exact", reference="4", responses=["4"])], AdvantageConfig()
        )
        runtime.audits.start("job-1", {"status": "running"}, forever())
        await asyncio.sleep(0)
        assert runtime.audits.running() == 1
    finally:
        await runtime.stop()
    assert ended.is_set() and runtime.audits.running() == 0
    assert seen == [("exact", "ok")]  # observers and statistics see every verdict
    stored = Statistics()
    store = StatsStore(runtime.settings.stats_path())
    store.load_into(stored)
    store.close()
    assert [v.verifier for v in stored.verifier_page(60).verifiers] == ["exact"]
    assert not runtime.pool.alive()


async def test_a_failed_start_stops_what_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = Runtime(_settings(tmp_path))

    async def broken_warm_up() -> None:
        raise RuntimeError("warm-up failed")

    monkeypatch.setattr(runtime.pool, "warm_up", broken_warm_up)
    with pytest.raises(RuntimeError, match="warm-up failed"):
        await runtime.start()
    assert not runtime.pool.alive()  # started, then stopped on the way out
    await runtime.stop()  # nothing left to stop


async def test_a_sandbox_the_caller_owns_is_used_not_started(tmp_path: Path) -> None:
    class CallersSandbox:
        """Has no start or close: the runtime must not call them."""

        def health(self) -> tuple[bool, str]:
            return True, "the caller's"

    sandbox: Any = CallersSandbox()
    runtime = Runtime(_settings(tmp_path, sandbox=True), sandbox=sandbox)
    async with runtime:
        assert runtime.scorer.resources.sandbox is sandbox


def test_sections_reach_their_components(tmp_path: Path) -> None:
    runtime = Runtime(_settings(tmp_path, max_groups=3, stats=False, sandbox=False))
    assert runtime.scorer.limits.max_groups == 3 and runtime.pool.size == 1
    assert runtime.stats is None and runtime.resources.sandbox is None
