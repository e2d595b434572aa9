"""Fair turns: a bounded number of slots handed out round-robin over owners (API keys).

The worker pool's own queue is first come, first served: a trainer that sends ten thousand
checks at once would hold every worker until all of them ran, and another trainer's one
request would wait behind the lot. So the pool lets at most `slots` checks through at a time
(enough to keep every worker busy) and hands each freed slot to the next owner in turn: with
two owners waiting, their checks alternate whatever each has queued. Within one owner, first
come first served.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class FairTurns:
    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("slots must be >= 1")
        self.slots = slots
        self.granted = 0
        # Owners with waiting tickets, in turn order (a dict keeps insertion order: an owner
        # that was served goes to the back).
        self._waiting: dict[Hashable, deque[asyncio.Future[None]]] = {}

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._waiting.values())

    def waiting_for(self, owner: Hashable) -> int:
        return len(self._waiting.get(owner, ()))

    @asynccontextmanager
    async def turn(self, owner: Hashable = None) -> AsyncIterator[None]:
        """Hold one slot while the body runs; wait for this owner's turn if none is free."""
        await self._acquire(owner)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, owner: Hashable) -> None:
        if self.granted < self.slots and not self._waiting:
            self.granted += 1
            return
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(owner, deque()).append(ticket)
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():
                self._release()  # granted just as it was cancelled: pass the slot on
            else:
                queue = self._waiting.get(owner)
                if queue is not None and ticket in queue:
                    queue.remove(ticket)
                    if not queue:
                        del self._waiting[owner]
            raise

    def _release(self) -> None:
        self.granted -= 1
        while self._waiting and self.granted < self.slots:
            owner = next(iter(self._waiting))
            queue = self._waiting.pop(owner)
            ticket = queue.popleft()
            if queue:
                self._waiting[owner] = queue  # to the back of the turn order
            if ticket.done():  # cancelled while waiting
                continue
            self.granted += 1
            ticket.set_result(None)
