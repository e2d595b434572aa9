"""Statistics that outlive the process: read back at start, flushed every few seconds and
once more at the end; published to the store shared by replicas at the same times, when there
is one (`stats.shared`).

A file that cannot be opened does not stop the service: statistics are then kept in memory
only (and the log says so). A file is held by one running service at a time (a lock beside it):
a second service given the same file takes the next candidate (`Settings.stats_paths`) rather
than overwrite the first one's records. A failing flush is logged, and its records stay marked as changed
for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import structlog

from referee.stats.shared import SharedStats, SharedUnavailable
from referee.stats.store import StatsFileTaken, StatsStore
from referee.stats.tracker import Statistics

log = structlog.get_logger(__name__)


def _open(paths: Sequence[Path], stats: Statistics) -> StatsStore | None:
    """The first of `paths` that no other running service holds, read back into `stats`."""
    for path in paths:
        try:
            store = StatsStore(path)
        except StatsFileTaken as taken:
            log.warning("stats_file_taken", path=str(path), error=str(taken))
            continue
        except Exception as exc:
            log.warning("stats_not_persisted", path=str(path), error=str(exc))
            return None
        try:
            store.load_into(stats)
        except Exception as exc:
            store.close()
            log.warning("stats_not_persisted", path=str(path), error=str(exc))
            return None
        return store
    log.warning("stats_not_persisted", paths=[str(p) for p in paths], error="every file is taken")
    return None


def _flush_once(stats: Statistics, store: StatsStore | None, shared: SharedStats | None) -> None:
    """Write what changed to the file and publish it to the shared store (one thread call).
    Each keeps what it failed to write for the next flush: the file by marking the records
    changed again, the shared store in its own pending rows."""
    dirty = stats.take_dirty()
    if store is not None:
        try:
            store.flush(stats, dirty)
        except Exception as exc:
            log.warning("stats_flush_failed", path=str(store.path), error=str(exc))
    if shared is not None:
        with contextlib.suppress(SharedUnavailable):  # logged once per outage by the publisher
            shared.publish(dirty)


async def _flush(stats: Statistics, store: StatsStore | None, shared: SharedStats | None) -> None:
    """In a thread, never on the event loop."""
    try:
        await asyncio.to_thread(_flush_once, stats, store, shared)
    except Exception as exc:  # a fault of ours: the next flush tries again
        log.warning("stats_flush_failed", error=str(exc))


async def _flush_every(
    stats: Statistics, store: StatsStore | None, shared: SharedStats | None, every_s: float
) -> None:
    while True:
        await asyncio.sleep(every_s)
        await _flush(stats, store, shared)


@asynccontextmanager
async def persisted(
    stats: Statistics, path: Path | Sequence[Path], every_s: float, shared: SharedStats | None = None
) -> AsyncIterator[StatsStore | None]:
    """`stats` read back from the file at `path` (or the first of several that no other running
    service holds), flushed to it every `every_s` while the
    context lasts and once more when it ends, and published to `shared` (the store shared by
    replicas) at the same times; yields the file's store, or None when the file cannot be used
    (statistics then stay in memory, and are still published)."""
    paths = [path] if isinstance(path, Path) else list(path)
    store = await asyncio.to_thread(_open, paths, stats)
    if store is None and shared is None:
        yield None
        return
    flusher = asyncio.create_task(_flush_every(stats, store, shared, every_s), name="referee-stats-flush")
    try:
        yield store
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        await _flush(stats, store, shared)
        if store is not None:
            store.close()
        if shared is not None:
            shared.close()
