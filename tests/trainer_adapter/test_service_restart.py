"""The adapters inherit the client's patience (issue 27, item 1): a real `referee serve` is
killed (SIGKILL) mid-run and started again seconds later while TRL's reward functions, called
as `GRPOTrainer._calculate_rewards` calls them, and verl's awaited reward function, loaded by
verl's own loader, score a run's steps: every step gets its right rewards, no exception, and
one "waiting" warning. Before, the third refused connection (~1.75 s) ended the run.

The fast tests check that `patience_s` / `retries` reach the client from each adapter's own
way of being configured (constructor keywords, verl's `reward_kwargs`), picklable for TRL."""

from __future__ import annotations

import asyncio
import logging
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.client import RefereeUnavailable
from referee.service.background import free_port
from referee.trainer_adapter.rewarder import GroupRewarder
from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward
from tests.support.service_process import ServiceProcess, score_through_a_restart

RESTART_DELAY_S = 4.0  # see tests/client/test_service_restart.py
PROMPTS_PER_STEP, COMPLETIONS_PER_PROMPT = 4, 3


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path) as running:
        yield running


@pytest.fixture
def trl_async_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """TRL's `async_loop`: one loop in a thread of its own, reward coroutines submitted to it."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="trl-async-loop", daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.close()


def trl_batch(step: int) -> tuple[dict[str, Any], list[float]]:
    """A GRPO step's reward call: G completions per prompt, every dataset column repeated per
    completion, TRL's extras; and the rewards it must get (completion 0 of each prompt is right)."""
    prompts, completions, answers, expected = [], [], [], []
    for p in range(PROMPTS_PER_STEP):
        answer = f"{step}+{p}"
        for g in range(COMPLETIONS_PER_PROMPT):
            prompts.append(f"step {step} prompt {p}: ")
            completions.append(answer if g == 0 else f"wrong {g}")
            answers.append(answer)
            expected.append(1.0 if g == 0 else 0.0)
    kwargs = {
        "prompts": prompts,
        "completions": completions,
        "completion_ids": [[0]] * len(prompts),
        "answer": answers,
        "trainer_state": object(),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }
    return kwargs, expected


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_trl_reward_functions_score_through_a_service_restart(
    kind: str,
    service: ServiceProcess,
    trl_async_loop: asyncio.AbstractEventLoop,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="referee.client")
    settings = {"verifier": "exact", "reference_column": "answer"}
    reward: Any = (RefereeReward if kind == "sync" else AsyncRefereeReward)(service.url, **settings)

    def step(i: int) -> None:
        kwargs, expected = trl_batch(i)
        if kind == "sync":
            rewards = reward(**kwargs)
        else:  # GRPOTrainer: asyncio.run_coroutine_threadsafe(..., self.async_loop).result()
            rewards = asyncio.run_coroutine_threadsafe(reward(**kwargs), trl_async_loop).result()
        assert rewards == expected

    assert score_through_a_restart(service, step, RESTART_DELAY_S) >= 6
    assert _waiting_warnings(caplog) == 1


@pytest.mark.slow
def test_verl_awaited_reward_function_scores_through_a_service_restart(
    service: ServiceProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """verl's reward loop: one awaited call per sample, all of a step at once, on its loop."""
    pytest.importorskip("verl", reason="needs verl (the `trainers` extra, see docs/training.md)")
    from tests.trainer_adapter.test_verl_loading import custom_fn

    caplog.set_level(logging.INFO, logger="referee.client")
    fn = custom_fn(service.url, "compute_score_async", patience_s=120)
    loop = asyncio.new_event_loop()

    async def one_step(i: int) -> list[Any]:
        return await asyncio.gather(
            *(
                fn(
                    data_source="logic",
                    solution_str=f"{i}-{k % 2}",
                    ground_truth=f"{i}-0",
                    extra_info={"verifier": "exact"},
                )
                for k in range(8)
            )
        )

    def step(i: int) -> None:
        assert loop.run_until_complete(one_step(i)) == [1.0, 0.0] * 4

    try:
        assert score_through_a_restart(service, step, RESTART_DELAY_S) >= 6
    finally:
        loop.close()
    assert _waiting_warnings(caplog) == 1


@pytest.mark.parametrize("kind", [RefereeReward, AsyncRefereeReward])
def test_trl_rewards_take_patience_and_retries_through_pickling(kind: type[Any]) -> None:
    reward = pickle.loads(pickle.dumps(kind("http://referee", patience_s=42, retries=5)))

    async def client() -> Any:
        return reward._get_client()

    made = reward._get_client() if kind is RefereeReward else asyncio.run(client())
    assert (made._retry.patience_s, made._retry.retries) == (42, 5)


async def test_group_rewarder_takes_patience() -> None:
    rewarder = GroupRewarder("http://referee", patience_s=7, retries=1)
    client: Any = rewarder._get_scorer()
    assert (client._retry.patience_s, client._retry.retries) == (7, 1)
    await rewarder.aclose()


def test_verl_reward_kwargs_set_the_patience() -> None:
    """`+reward.custom_reward_function.reward_kwargs.patience_s=0.3` reaches the client: with
    nothing listening, the call gives up after 0.3 s and says so."""
    pytest.importorskip("verl", reason="needs verl (the `trainers` extra, see docs/training.md)")
    from tests.trainer_adapter.test_verl_loading import custom_fn

    fn = custom_fn(f"http://127.0.0.1:{free_port()}", "compute_score", patience_s=0.3)
    with pytest.raises(RefereeUnavailable, match=r"patience_s=0\.3"):
        fn(data_source="logic", solution_str="1", ground_truth="1", extra_info={"verifier": "exact"})


def _waiting_warnings(caplog: pytest.LogCaptureFixture) -> int:
    return sum(
        r.name == "referee.client" and r.levelno == logging.WARNING and "waiting up to" in r.getMessage()
        for r in caplog.records
    )
