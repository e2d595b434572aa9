"""Statistics that outlive the process: read back at start, flushed every few seconds and
once more at the end.

A file that cannot be opened does not stop the service: statistics are then kept in memory
only (and the log says so). A failing flush is logged, and its records stay marked as changed
for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import structlog

from referee.stats.store import StatsStore
from referee.stats.tracker import Statistics

log = structlog.get_logger(__name__)


def _open(path: Path, stats: Statistics) -> StatsStore | None:
    try:
        store = StatsStore(path)
        store.load_into(stats)
    except Exception as exc:
        log.warning("stats_not_persisted", path=str(path), error=str(exc))
        return None
    return store


async def _flush(stats: Statistics, store: StatsStore) -> None:
    """Write changed statistics in a thread, never on the event loop."""
    try:
        await asyncio.to_thread(store.flush, stats)
    except Exception as exc:
        log.warning("stats_flush_failed", path=str(store.path), error=str(exc))


async def _flush_every(stats: Statistics, store: StatsStore, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        await _flush(stats, store)


@asynccontextmanager
async def persisted(stats: Statistics, path: Path, every_s: float) -> AsyncIterator[StatsStore | None]:
    """`stats` read back from the file at `path`, flushed to it every `every_s` while the
    context lasts and once more when it ends; yields the store, or None when the file cannot
    be used (statistics then stay in memory)."""
    store = await asyncio.to_thread(_open, path, stats)
    if store is None:
        yield None
        return
    flusher = asyncio.create_task(_flush_every(stats, store, every_s), name="referee-stats-flush")
    try:
        yield store
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        await _flush(stats, store)
        store.close()
