"""Background jobs of a service (audits): a task each, with the record a client polls.

The records of the last `keep` jobs are kept (a running one is never dropped); a job can be
cancelled (its task, and with it the work it awaits) or, once ended, forgotten; the runtime
cancels the tasks still running when it stops. A record follows its task through `on_cancelled`,
which runs even when the task was cancelled before its work began.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

Record = TypeVar("Record")


class BackgroundJobs(Generic[Record]):
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._records: OrderedDict[str, Record] = OrderedDict()
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def running(self, where: Callable[[Record], bool] = lambda record: True) -> int:
        """Jobs still running (those whose record `where` accepts)."""
        return len(self.running_records(where))

    def running_records(self, where: Callable[[Record], bool] = lambda record: True) -> list[Record]:
        """The records of the jobs still running (those `where` accepts), oldest first."""
        return [r for k, r in self._records.items() if not self._tasks[k].done() and where(r)]

    def is_running(self, job_id: str) -> bool:
        task = self._tasks.get(job_id)
        return task is not None and not task.done()

    def start(
        self,
        job_id: str,
        record: Record,
        work: Coroutine[Any, Any, None],
        *,
        on_cancelled: Callable[[Record], None] | None = None,
    ) -> None:
        """Run `work` as a task; `record` is what `get` returns for `job_id` meanwhile and after.
        `on_cancelled(record)` is called once the task ends cancelled, whether or not `work` had
        begun: a task cancelled before its first step never runs its body (nor its handlers)."""
        self._records[job_id] = record
        task = asyncio.create_task(work, name=f"referee-job-{job_id}")
        if on_cancelled is not None:
            task.add_done_callback(lambda done: on_cancelled(record) if done.cancelled() else None)
        self._tasks[job_id] = task
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

    async def cancel(self, job_id: str) -> bool:
        """Cancel a running job and wait for its task to end; False if it was not running."""
        task = self._tasks.get(job_id)
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return True

    def forget(self, job_id: str) -> bool:
        """Drop an ended job's record; False if unknown or still running."""
        task = self._tasks.get(job_id)
        if task is None or not task.done():
            return False
        del self._records[job_id], self._tasks[job_id]
        return True

    async def cancel_all(self) -> None:
        """Cancel the jobs still running and wait for them to end."""
        running = [task for task in self._tasks.values() if not task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
