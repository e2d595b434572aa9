"""`HandleScorer` waits as the HTTP client waits (issue 27, item 1): a lost replica and answers
429/502/503/504 are retried for one `patience_s`, one outage is logged once, and giving up
names the wait. A fake handle stands in for Serve's (the real one: test_ray_serve.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

# referee.deploy imports Ray Serve (the `ray` extra), not only Ray (which `trainers` brings).
pytest.importorskip("ray", reason="needs the `ray` extra: pip install -e '.[ray]'")
pytest.importorskip("ray.serve", reason="needs the `ray` extra: pip install -e '.[ray]'")

from ray.exceptions import RayActorError

from referee.client import RefereeHTTPError, RefereeUnavailable
from referee.deploy.ray_rewarder import HandleScorer
from referee.models import GroupResult, GroupSpec, GroupsResponse, Verdict, VerdictStatus

GROUP = GroupSpec(verifier="exact", reference="a", responses=["a"])
RESULT = GroupResult(
    verdicts=[Verdict(score=1.0, status=VerdictStatus.ok, verifier="exact@1")],
    rewards=[1.0],
    advantages=[0.0],
    mean=1.0,
    std=0.0,
    zero_variance=True,
)
ANSWER = (
    200,
    {"content-type": "application/json"},
    GroupsResponse(groups=[RESULT]).model_dump_json().encode(),
)


def lost() -> Any:
    raise RayActorError()


def status(code: int, error: str) -> Any:
    return (code, {"content-type": "application/json"}, f'{{"error": "{error}", "message": "m"}}'.encode())


class FakeHandle:
    """`handle.groups.remote(body, api_key)`, awaited: plays `steps` (the last one repeats)."""

    def __init__(self, *steps: Any) -> None:
        self.steps = steps
        self.calls = 0
        self.groups = self

    def remote(self, body: bytes, api_key: str | None) -> Any:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1

        async def answer() -> Any:
            return step() if callable(step) else step

        return answer()


async def test_a_lost_replica_and_unavailable_answers_are_waited_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="referee.client")
    handle = FakeHandle(
        lost, status(502, "http_error"), status(503, "replica_lost"), lost, status(504, "x"), ANSWER
    )
    scorer = HandleScorer(handle)  # type: ignore[arg-type]
    got = await scorer.score_groups([GROUP])
    assert got.groups == [RESULT] and handle.calls == 6 and scorer.retries == 5
    levels = [r.levelno for r in caplog.records if r.name == "referee.client"]
    assert levels == [logging.WARNING, logging.INFO]


async def test_patience_exhausted_names_the_wait() -> None:
    scorer = HandleScorer(FakeHandle(lost), patience_s=0.2)  # type: ignore[arg-type]
    with pytest.raises(RefereeUnavailable, match=r"patience_s=0\.2"):
        await scorer.score_groups([GROUP])
    scorer = HandleScorer(FakeHandle(status(503, "no_workers")), patience_s=0.2)  # type: ignore[arg-type]
    with pytest.raises(RefereeHTTPError, match=r"patience_s=0\.2") as info:
        await scorer.score_groups([GROUP])
    assert info.value.status_code == 503


async def test_other_errors_are_raised_at_once() -> None:
    handle = FakeHandle(status(422, "invalid_request"), ANSWER)
    with pytest.raises(RefereeHTTPError) as info:
        await HandleScorer(handle).score_groups([GROUP])  # type: ignore[arg-type]
    assert info.value.status_code == 422 and handle.calls == 1


def test_former_patience_names_still_set_it() -> None:
    assert HandleScorer(FakeHandle(), lost_replica_patience_s=30).patience_s == 30  # type: ignore[arg-type]
    assert HandleScorer(FakeHandle()).patience_s == 900  # type: ignore[arg-type]
