"""OpenRLHF 0.11.2 loads `referee/trainer_adapter/openrlhf.py` as its reward file
(`--reward.remote_url <path>.py`) and gets what its HTTP client got from the route, and the
file's calls outlast a restart of the service (issue 27, item 1): OpenRLHF's own HTTP client
tries 5 times, 1 s apart, then the sample has no reward and the step fails.

OpenRLHF's `SingleTurnAgentExecutor` is driven as in tests/service/test_openrlhf_real.py (its
scripted vLLM engine and `rollout`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
pytest.importorskip(
    "openrlhf",
    reason="needs openrlhf: `make` installs it with the `trainers` extra (pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

import referee.trainer_adapter.openrlhf as reward_file
from tests.service.test_openrlhf_real import rollout
from tests.support.service_process import ServiceProcess, score_through_a_restart

FILE = reward_file.__file__
NUMERIC_4 = json.dumps({"verifier": "numeric", "reference": 4})


async def test_openrlhf_loads_the_file_and_gets_the_routes_answer(
    referee_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFEREE_OPENRLHF_URL", f"{referee_url}/v1/openrlhf/reward?verifier=exact")
    samples = [("Q: 2+2? A:", NUMERIC_4, "4"), ("Q: 2+3? A:", NUMERIC_4, "5"), ("Q: say hi A:", "hi", "hi")]
    through_file = await rollout(FILE, samples)
    over_http = await rollout(f"{referee_url}/v1/openrlhf/reward?verifier=exact", samples)
    assert [o["reward"] for o in through_file] == [[1.0], [0.0], [1.0]]
    for key in ("reward", "scores", "extra_logs"):
        assert [o[key] for o in through_file] == [o[key] for o in over_http]


def test_the_route_url_and_patience_are_read_strictly() -> None:
    assert reward_file.route("http://h:1/prefix/v1/openrlhf/reward?verifier=math&on_error=zero") == (
        "http://h:1",
        "/prefix/v1/openrlhf/reward",
        {"verifier": "math", "on_error": "zero"},
    )
    with pytest.raises(ValueError, match="REFEREE_OPENRLHF_URL"):
        reward_file.route("/tmp/reward.py")
    assert reward_file.patience_from("30").patience_s == 30.0
    assert reward_file.patience_from(None).patience_s is None
    with pytest.raises(ValueError, match="REFEREE_PATIENCE_S"):
        reward_file.patience_from("ten minutes")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path) as running:
        yield running


@pytest.mark.slow
def test_openrlhf_rollouts_score_through_a_service_restart(
    service: ServiceProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REFEREE_OPENRLHF_URL", f"{service.url}/v1/openrlhf/reward?on_error=zero")
    caplog.set_level(logging.INFO, logger="referee.client")

    def step(i: int) -> None:
        samples = [(f"Q{i}.{k}: 2+2? A:", NUMERIC_4, "4" if k % 2 == 0 else "5") for k in range(4)]
        outputs = asyncio.run(rollout(FILE, samples))
        assert [o["reward"] for o in outputs] == [[1.0], [0.0], [1.0], [0.0]]

    assert score_through_a_restart(service, step, delay_s=4.0) >= 6
    waiting = [r for r in caplog.records if r.name == "referee.client" and r.levelno == logging.WARNING]
    assert len(waiting) == 1
