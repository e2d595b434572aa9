"""Background jobs (src/referee/runtime/jobs.py): a job's record follows its task, even when
the task is cancelled before its work has begun (its body, handlers included, never runs)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from referee.runtime.jobs import BackgroundJobs


@dataclass
class Record:
    status: str = "running"


def mark_cancelled(record: Record) -> None:
    record.status = "cancelled"


async def work(record: Record, release: asyncio.Event) -> None:
    try:
        await release.wait()
        record.status = "done"
    except asyncio.CancelledError:
        record.status = "cancelled by its body"
        raise


async def test_a_job_cancelled_before_it_starts_is_recorded_cancelled() -> None:
    jobs: BackgroundJobs[Record] = BackgroundJobs(keep=10)
    record = Record()
    jobs.start("early", record, work(record, asyncio.Event()), on_cancelled=mark_cancelled)
    # No await in between: the task has not taken its first step when it is cancelled.
    assert await jobs.cancel("early") is True
    assert record.status == "cancelled"
    assert not jobs.is_running("early") and jobs.running() == 0


async def test_a_job_cancelled_while_running_keeps_what_its_body_recorded() -> None:
    jobs: BackgroundJobs[Record] = BackgroundJobs(keep=10)
    record = Record()
    jobs.start("started", record, work(record, asyncio.Event()), on_cancelled=lambda r: None)
    await asyncio.sleep(0)  # the body is now waiting
    assert await jobs.cancel("started") is True
    assert record.status == "cancelled by its body"


async def test_a_job_that_ends_is_not_marked_cancelled() -> None:
    jobs: BackgroundJobs[Record] = BackgroundJobs(keep=10)
    record, release = Record(), asyncio.Event()
    jobs.start("normal", record, work(record, release), on_cancelled=mark_cancelled)
    release.set()
    await asyncio.sleep(0.01)
    assert record.status == "done" and not jobs.is_running("normal")
    assert await jobs.cancel("normal") is False and record.status == "done"


async def test_stopping_the_service_before_a_job_starts_records_it_cancelled() -> None:
    jobs: BackgroundJobs[Record] = BackgroundJobs(keep=10)
    records = [Record(), Record()]
    for i, record in enumerate(records):
        jobs.start(str(i), record, work(record, asyncio.Event()), on_cancelled=mark_cancelled)
    await jobs.cancel_all()
    assert [r.status for r in records] == ["cancelled", "cancelled"]
