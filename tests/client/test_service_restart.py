"""A real `referee serve` is killed (SIGKILL) mid-run and started again seconds later while the
sync and the async client score: every call completes with the right rewards, and the outage
is logged once per client (issue 27, item 1). Before, a refused connection was retried 3 times
within ~1.75 s, then raised, which ended the training run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.client import AsyncClient, Client
from referee.grouping import ChunkPolicy
from tests.support.service_process import ServiceProcess, score_through_a_restart

pytestmark = pytest.mark.slow

# Long enough for several refused connections at the clients' first backoffs (0.25 s, 0.5 s,
# 1 s, ...; the former client gave up after ~1.75 s), short enough for the suite.
RESTART_DELAY_S = 4.0


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path) as running:
        yield running


def groups_of_step(i: int) -> list[dict[str, object]]:
    """Four groups whose rewards are known: the first response is right, the second wrong."""
    return [{"verifier": "exact", "reference": f"{i}-{g}", "responses": [f"{i}-{g}", "no"]} for g in range(4)]


def test_the_sync_client_scores_through_a_service_restart(
    service: ServiceProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="referee.client")
    # Chunks of one group, sent from 4 threads at once: concurrent requests meet the outage.
    with Client(service.url, chunks=ChunkPolicy(max_groups=1, max_concurrency=4)) as client:

        def step(i: int) -> None:
            result = client.score_groups(groups_of_step(i))
            assert [g.rewards for g in result.groups] == [[1.0, 0.0]] * 4

        steps = score_through_a_restart(service, step, RESTART_DELAY_S)
    assert steps >= 6
    assert _outage_lines(caplog) == (1, 1)


def test_the_async_client_scores_through_a_service_restart(
    service: ServiceProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="referee.client")

    # One event loop for the whole run, as a trainer keeps its loop: steps are submitted to it.
    loop = asyncio.new_event_loop()
    client = AsyncClient(service.url)

    async def one_step(i: int) -> None:
        verdicts = await asyncio.gather(*(client.score("exact", f"{i}-{k}", f"{i}-0") for k in range(4)))
        assert [v.score for v in verdicts] == [1.0, 0.0, 0.0, 0.0]

    try:
        steps = score_through_a_restart(
            service, lambda i: loop.run_until_complete(one_step(i)), RESTART_DELAY_S
        )
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()
    assert steps >= 6
    assert _outage_lines(caplog) == (1, 1)


def _outage_lines(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    """(warnings that the service is unavailable, lines that it answers again) of the client."""
    records = [r for r in caplog.records if r.name == "referee.client"]
    waiting = [r for r in records if r.levelno == logging.WARNING and "waiting up to" in r.getMessage()]
    back = [r for r in records if r.levelno == logging.INFO and "answers again" in r.getMessage()]
    return len(waiting), len(back)
