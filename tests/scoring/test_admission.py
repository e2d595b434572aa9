"""Admission per lane, with an injected clock: bounded queueing delay, lanes independent,
throughput measured from completed work (and only from completed work)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from referee.errors import ErrorKind
from referee.models import AdvantageConfig, GroupSpec
from referee.scoring import Admission, BackgroundOwner, BackgroundShare, LaneOverloaded, Scorer
from referee.scoring import worker as worker_module
from referee.settings import Settings
from referee.verifiers import AsyncVerifier, Check, InstalledVerifiers, Resources, load_installed
from tests.scoring.test_engine import FakePool
from tests.timing import wait_until_async


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


PRIORS: dict[Any, float] = {"cpu": 100.0, "sandbox": 10.0, "io": 50.0}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def admission(clock: Clock) -> Admission:
    return Admission(max_queue_wait_s=5.0, prior_rates=PRIORS, clock=clock)


def test_an_idle_lane_admits_any_request(admission: Admission) -> None:
    admission.admit({"sandbox": 10_000})  # 1000 s of work at the prior, but nothing waits ahead
    assert admission.lanes["sandbox"].in_flight == 10_000


def test_a_request_that_would_wait_too_long_is_refused_whole(admission: Admission) -> None:
    admission.admit({"sandbox": 60})  # 6 s ahead at 10 programs/s
    with pytest.raises(LaneOverloaded) as caught:
        admission.admit({"cpu": 5, "sandbox": 16})
    error = caught.value
    assert error.kind is ErrorKind.overloaded and error.code == "overloaded"
    assert error.detail["lane"] == "sandbox" and error.detail["estimated_wait_s"] == 6.0
    assert error.retry_after_s == 1  # ceil(6 - 5)
    # Nothing of the refused request was reserved, in any lane.
    assert admission.lanes["cpu"].in_flight == 0 and admission.lanes["sandbox"].in_flight == 60
    assert admission.refused["sandbox"] == 1


def test_lanes_are_independent(admission: Admission) -> None:
    admission.admit({"sandbox": 500})
    with pytest.raises(LaneOverloaded):
        admission.admit({"sandbox": 1})
    for _ in range(5):  # a saturated sandbox lane does not hold back CPU verdicts
        admission.admit({"cpu": 100})
    assert admission.lanes["cpu"].in_flight == 500


def test_throughput_is_measured_while_busy(admission: Admission, clock: Clock) -> None:
    admission.admit({"sandbox": 40})
    clock.now += 4.0
    admission.done("sandbox", 40)  # 40 programs in 4 busy seconds: 10/s
    state = admission.lanes["sandbox"]
    assert state.rate() == pytest.approx(10.0, rel=0.01)
    clock.now += 20.0  # idle time is not busy time: the rate is not diluted by it
    admission.admit({"sandbox": 20})
    assert state.rate() == pytest.approx(10.0, rel=0.01)
    clock.now += 10.0  # now slower programs: 20 in 10 s; the estimate follows
    admission.done("sandbox", 20)
    assert 3.0 < state.rate() < 6.0
    assert state.in_flight == 0


def test_retry_after_is_bounded_whatever_the_backlog(admission: Admission) -> None:
    admission.admit({"sandbox": 100_000})  # admitted: the lane was idle
    with pytest.raises(LaneOverloaded) as caught:
        admission.admit({"sandbox": 1})
    assert caught.value.detail["estimated_wait_s"] == 10_000.0
    assert caught.value.retry_after_s == 60


def test_failed_work_leaves_the_lane_without_counting_as_throughput(
    admission: Admission, clock: Clock
) -> None:
    admission.admit({"io": 100})
    clock.now += 2.0
    admission.done("io", 100, completed=False)
    state = admission.lanes["io"]
    assert state.in_flight == 0 and state.completed == 0
    assert state.rate() == PRIORS["io"]  # still the prior: nothing was measured


class Held(AsyncVerifier):
    """Stays in flight until the test releases it."""

    name = "test.held"
    lane = "sandbox"
    time_budget_s = 60.0
    example: ClassVar[dict[str, Any]] = {"response": "1", "reference": None}
    gate: ClassVar[asyncio.Event]

    async def check_group(self, responses: Any, prepared: Any, options: Any, resources: Resources) -> Any:
        await self.gate.wait()
        return [Check(1.0) for _ in responses]


@pytest.fixture
def installed() -> Iterator[InstalledVerifiers]:
    installed = load_installed(plugins=False)
    installed.register(Held, kind="extra")
    previous = worker_module.use_installed(installed)  # what a worker would have loaded
    yield installed
    worker_module.use_installed(previous)


async def test_the_engine_refuses_before_any_work_and_releases_when_done(
    clock: Clock, installed: InstalledVerifiers
) -> None:
    Held.gate = asyncio.Event()
    admission = Admission(max_queue_wait_s=1.0, prior_rates=PRIORS, clock=clock)
    pool = FakePool()
    settings = Settings(workers=1, sandbox=False)
    scorer = Scorer(settings.limits, settings.workers, installed, pool, admission=admission)  # type: ignore[arg-type]
    held = GroupSpec(verifier="test.held", reference=None, responses=["1"] * 16)
    first = asyncio.create_task(scorer.score_groups([held, held], AdvantageConfig()))
    # 3.2 s ahead at 10 programs/s
    await wait_until_async(lambda: admission.lanes["sandbox"].in_flight == 32, 5, what="32 admitted")
    with pytest.raises(LaneOverloaded):
        await scorer.score_groups([held], AdvantageConfig())
    # Math is another lane: served while the sandbox lane is full.
    [math] = await scorer.score_groups(
        [GroupSpec(verifier="exact", reference="4", responses=["4", "5"])], AdvantageConfig()
    )
    assert math.rewards == [1.0, 0.0] and len(pool.calls) == 2
    Held.gate.set()
    results = await first
    assert all(r.rewards == [1.0] * 16 for r in results)
    assert admission.lanes["sandbox"].in_flight == 0 and admission.lanes["cpu"].in_flight == 0


# ---- background work (audits): issue 27, defect 5 ----------------------------------------------


def test_background_work_never_counts_against_scoring(admission: Admission, clock: Clock) -> None:
    """Two audits' worth of slow programs in the sandbox lane: before, they filled the lane's
    estimate (128 programs at a measured 1/s) and every other key got 503 while they ran."""
    audit = BackgroundOwner("audit", "a1", key=b"key-1")
    admission.admit({"sandbox": 64}, audit)
    admission.admit({"sandbox": 64}, BackgroundOwner("audit", "a2", key=b"key-1"))
    clock.now += 60.0  # a minute of `while True` programs: one completes (it is not measured)
    admission.done("sandbox", 1, owner=audit)
    admission.admit({"sandbox": 16}, b"key-2")  # a trainer's group: admitted
    state = admission.lanes["sandbox"]
    assert (state.in_flight, state.background) == (16, 127)
    assert state.rate() == PRIORS["sandbox"]  # audits' programs do not make the lane look slow
    assert admission.snapshot()["sandbox"]["background"] == 127
    # Scoring's own bound still holds for scoring.
    admission.admit({"sandbox": 100}, b"key-2")
    with pytest.raises(LaneOverloaded):
        admission.admit({"sandbox": 1}, b"key-3")


async def test_the_background_share_holds_its_slots_and_yields_to_scoring() -> None:
    scoring_waits = False
    share = BackgroundShare.of_slots(9, 0.25, lambda: scoring_waits)
    assert share.limit == 2 and BackgroundShare.of_slots(2, 0.25, lambda: False).limit == 1
    release = asyncio.Event()
    peak = 0

    async def program() -> None:
        nonlocal peak
        async with share.slot():
            peak = max(peak, share.held)
            await release.wait()

    tasks = [asyncio.create_task(program()) for _ in range(5)]
    await wait_until_async(lambda: share.held == 2, 5, what="two slots held")
    scoring_waits = True  # a scoring program waits for a run slot: no new audit program starts
    release.set()
    await wait_until_async(lambda: share.held == 0, 5, what="the holders done")
    await asyncio.sleep(3 * BackgroundShare.POLL_S)
    assert share.held == 0 and sum(t.done() for t in tasks) == 2
    scoring_waits = False
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert peak == 2


async def test_a_cancelled_waiter_takes_no_slot() -> None:
    share = BackgroundShare(1)
    held = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with share.slot():
            held.set()
            await release.wait()

    first = asyncio.create_task(holder())
    await held.wait()
    waiter = asyncio.create_task(holder())
    await asyncio.sleep(2 * BackgroundShare.POLL_S)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    release.set()
    await first
    assert share.held == 0
