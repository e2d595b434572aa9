"""Background jobs of a service (audits): a task each, with the record a client polls.

The records of the last `keep` jobs are kept (a running one is never dropped); the runtime
cancels the tasks still running when it stops.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

Record = TypeVar("Record")


class BackgroundJobs(Generic[Record]):
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._records: OrderedDict[str, Record] = OrderedDict()
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def running(self) -> int:
        return sum(not task.done() for task in self._tasks.values())

    def start(self, job_id: str, record: Record, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` as a task; `record` is what `get` returns for `job_id` meanwhile and after."""
        self._records[job_id] = record
        self._tasks[job_id] = asyncio.create_task(work, name=f"referee-job-{job_id}")
        while len(self._records) > self.keep:
            oldest = next((k for k in self._records if self._tasks[k].done()), None)
            if oldest is None:
                break
            del self._records[oldest], self._tasks[oldest]

    def get(self, job_id: str) -> Record | None:
        return self._records.get(job_id)

    def records(self) -> list[Record]:
        """Oldest first."""
        return list(self._records.values())

    async def cancel_all(self) -> None:
        """Cancel the jobs still running and wait for them to end."""
        running = [task for task in self._tasks.values() if not task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
