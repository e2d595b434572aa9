"""Fair turns over owners, and admission that counts them (issue 14, defect 9)."""

from __future__ import annotations

import asyncio

import pytest

from referee.scoring import LaneOverloaded
from referee.scoring.admission import Admission
from referee.scoring.fair import FairTurns
from tests.timing import FakeClock, wait_until_async

PRIORS = {"cpu": 10.0, "sandbox": 10.0, "io": 10.0}


async def _drain(turns: FairTurns, jobs: list[tuple[str, int]]) -> list[str]:
    """Start `jobs` (owner, index) in order; each holds its slot until the test lets it go.
    Returns the order in which they got their turn."""
    order: list[str] = []
    gates = {job: asyncio.Event() for job in jobs}

    async def job(owner: str, i: int) -> None:
        async with turns.turn(owner):
            order.append(f"{owner}{i}")
            await gates[(owner, i)].wait()

    tasks = [asyncio.create_task(job(o, i)) for o, i in jobs]
    await asyncio.sleep(0)
    while len(order) < len(jobs):
        running = order[-turns.slots :] if turns.slots else []
        for name in running:
            gates[(name[0], int(name[1:]))].set()
        before = len(order)
        await wait_until_async(
            lambda before=before: len(order) > before or len(order) == len(jobs), 5, what="next turn"
        )
    for gate in gates.values():
        gate.set()
    await asyncio.gather(*tasks)
    return order


async def test_owners_take_turns() -> None:
    turns = FairTurns(slots=1)
    # A queues five checks before B queues two: B's come second and fourth, not last.
    order = await _drain(turns, [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 0), ("b", 1)])
    assert order == ["a0", "a1", "b0", "a2", "b1", "a3", "a4"]
    assert turns.granted == 0 and turns.waiting == 0


async def test_a_single_owner_is_first_come_first_served() -> None:
    turns = FairTurns(slots=2)
    order = await _drain(turns, [("a", i) for i in range(6)])
    assert order == [f"a{i}" for i in range(6)]


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    turns = FairTurns(slots=1)
    release = asyncio.Event()
    got: list[str] = []

    async def hold(owner: str) -> None:
        async with turns.turn(owner):
            got.append(owner)
            await release.wait()

    first = asyncio.create_task(hold("a"))
    await wait_until_async(lambda: got == ["a"], 5, what="the first turn")
    waiting = asyncio.create_task(hold("b"))
    later = asyncio.create_task(hold("c"))
    await wait_until_async(lambda: turns.waiting == 2, 5, what="two waiting")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert turns.waiting == 1
    release.set()
    await asyncio.gather(first, later)
    assert got == ["a", "c"] and turns.granted == 0 and turns.waiting == 0


def test_admission_counts_each_owner_by_turns_in_the_cpu_lane() -> None:
    admission = Admission(max_queue_wait_s=5.0, prior_rates=PRIORS, clock=FakeClock())
    admission.admit({"cpu": 1000, "sandbox": 1000}, owner="flood")  # idle lanes admit anything
    # The flooder's next request waits behind its own 1000 checks: 100 s at 10/s.
    with pytest.raises(LaneOverloaded):
        admission.admit({"cpu": 1}, owner="flood")
    # Another owner's checks alternate with the flood in the cpu lane: admitted ...
    admission.admit({"cpu": 10}, owner="other")
    # ... but not in the sandbox lane, served first come first served.
    with pytest.raises(LaneOverloaded):
        admission.admit({"sandbox": 1}, owner="other")
    admission.done("cpu", 10, owner="other")
    admission.done("cpu", 1000, owner="flood")
    assert admission.lanes["cpu"].in_flight == 0 and admission.lanes["cpu"].owned == {}
    admission.admit({"cpu": 1}, owner="flood")


def test_without_owners_the_cpu_lane_is_one_queue() -> None:
    """Open mode: every request has the same (no) owner, and the estimate is the lane's."""
    admission = Admission(max_queue_wait_s=5.0, prior_rates=PRIORS, clock=FakeClock())
    admission.admit({"cpu": 100})
    assert admission.lanes["cpu"].wait_for(None, fair=True) == admission.wait_s("cpu") == 10.0
    with pytest.raises(LaneOverloaded):
        admission.admit({"cpu": 1})
