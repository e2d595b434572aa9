"""verl 0.9.1's default rule-based reward path: the agent loop streams each trajectory to a reward
worker as soon as it finishes (`AgentLoopWorker._compute_score`, ``enable_agent_reward_loop`` in
`verl/trainer/ppo/ray_trainer.py`), and DAPO's group filter reads what that stream returned.

The trajectories go through verl's own `AgentLoopWorker._compute_score` (the worker itself is not
built: it needs a rollout server; the method uses only the reward handles and, for text, no
processor) into a real `RewardLoopWorker`, as a Ray actor handle would pass them. DAPO's filter
is verl's own `ReplayBuffer._dapo_filtered_keys` (`verl/trainer/ppo/v1/replay_buffer.py`), loaded
from its file with its TransferQueue store (`transfer_queue`, not installed: a GPU cluster's
store) replaced by a dict of the trajectories' `extra_fields`, as the v1 trainers store them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="needs the `train` extra: pip install -e '.[train]'")
verl = pytest.importorskip(
    "verl",
    reason="needs verl: `make` installs it with the `trainers` extra "
    "(pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

# The agent loop imports more than verl's reward path: PIL (the `train` extra) for multi-modal
# rollouts, cachetools (the `trainers` extra) for its router.
pytest.importorskip(
    "verl.experimental.agent_loop",
    reason="needs the `train` and `trainers` extras: pip install -e '.[train,trainers]'",
)

from omegaconf import DictConfig  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopMetrics,
    AgentLoopOutput,
    AgentLoopWorker,
)
from verl.experimental.reward_loop import RewardLoopWorker  # noqa: E402

from tests.support.tokenizers import printable_tokenizer  # noqa: E402
from tests.trainer_adapter.test_verl_loading import groups_requests  # noqa: E402
from tests.trainer_adapter.test_verl_real import RETURN_DICT, reward_config  # noqa: E402
from tests.trainer_adapter.test_verl_turns import IMPORTLIB, QUESTION, chatml_tokenizer, saved, tool_episode  # noqa: E402


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return saved(printable_tokenizer(), tmp_path_factory.mktemp("verl-tokenizer"))


@pytest.fixture(scope="module")
def chatml(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return saved(chatml_tokenizer(), tmp_path_factory.mktemp("verl-chatml-tokenizer"))


async def stream(reward_worker: RewardLoopWorker, output: AgentLoopOutput, sample: dict[str, Any]) -> None:
    """verl's agent loop scoring one finished trajectory: `_compute_score` builds the one-row
    batch and awaits a reward worker's `compute_score`; the result lands in `output`."""
    agent = object.__new__(AgentLoopWorker)
    agent.reward_loop_worker_handles = [
        SimpleNamespace(compute_score=SimpleNamespace(remote=reward_worker.compute_score))
    ]
    agent.processor = None
    agent.mm_processor_kwargs = {}
    await AgentLoopWorker._compute_score(agent, [output], kwargs=sample)


def trajectory(tokenizer: Any, prompt: str, response: str, num_turns: int = 2) -> AgentLoopOutput:
    response_ids = [*tokenizer.encode(response, add_special_tokens=False), tokenizer.eos_token_id]
    return AgentLoopOutput(
        prompt_ids=tokenizer.encode(prompt, add_special_tokens=False),
        response_ids=response_ids,
        response_mask=[1] * len(response_ids),
        num_turns=num_turns,
        metrics=AgentLoopMetrics(),
        extra_fields={"turn_scores": [], "tool_rewards": []},
    )


def sample_fields(uid: str, index: int, prompt: str, truth: str, data_source: str) -> dict[str, Any]:
    """A trajectory's non-tensor fields as the trainer's generation batch carries them (the
    dataset's columns and the group's `uid`), less `agent_name`, which the agent loop takes."""
    return {
        "data_source": data_source,
        "reward_model": {"ground_truth": truth, "style": "rule"},
        "extra_info": {"split": "train", "index": index},
        "raw_prompt": [{"role": "user", "content": prompt}],
        "index": index,
        "uid": uid,
    }


async def test_a_streamed_tool_episode_is_judged_by_its_last_turn(
    referee_url: str, chatml: tuple[Path, Any]
) -> None:
    chatml_dir, tokenizer = chatml
    config = reward_config(
        chatml_dir, referee_url, "compute_score_async", *IMPORTLIB, "reward.reward_manager.name=naive"
    )
    worker = RewardLoopWorker(config)
    prompt, response = tool_episode(tokenizer, "42")
    output = trajectory(tokenizer, prompt, response, num_turns=4)
    await stream(worker, output, sample_fields("u0", 0, QUESTION, "42", "exact"))
    assert output.reward_score == 1.0


# Four prompts of four samples, answers to "7": two groups without spread, two with.
GROUPS = {"g0": ["7"] * 4, "g1": ["1"] * 4, "g2": ["7", "1", "7", "7"], "g3": ["1", "1", "7", "1"]}
ZERO_VARIANCE_UIDS = {"g0", "g1"}


async def stream_groups(
    referee_url: str, loaded: tuple[Path, Any], *overrides: str
) -> list[tuple[str, int, dict[str, Any]]]:
    """Every trajectory streamed as its agent loop finishes, one after the other; each one's
    (uid, session, extra_fields) as the v1 trainers store it."""
    tokenizer_dir, tokenizer = loaded
    worker = RewardLoopWorker(reward_config(tokenizer_dir, referee_url, "compute_score_async", *overrides))
    out = []
    for index, (uid, answers) in enumerate(GROUPS.items()):
        for session, answer in enumerate(answers):
            output = trajectory(tokenizer, f"Q{index}", f"#### {answer}")
            await stream(worker, output, sample_fields(uid, index, f"Q{index}", "7", "openai/gsm8k"))
            out.append((uid, session, output.extra_fields))
    return out


async def test_streamed_trajectories_carry_no_group_statistic_the_adapter_cannot_know(
    referee_url: str, plain: tuple[Path, Any]
) -> None:
    """Each trajectory arrives alone: a zero-variance flag computed over what arrived together
    would read 1.0 for all 16 samples against a true share of 0.5. The adapter leaves it out;
    the share is that of uids whose `score` has no spread."""
    before = groups_requests(referee_url)
    streamed = await stream_groups(referee_url, plain, RETURN_DICT)
    assert groups_requests(referee_url) - before == 16  # streaming: one request per trajectory
    infos = [fields["reward_extra_info"] for _, _, fields in streamed]
    assert all(set(info) == {"score", "referee_error"} for info in infos)
    scores: dict[str, list[float]] = defaultdict(list)
    for (uid, _, _), info in zip(streamed, infos, strict=True):
        scores[uid].append(info["score"])
    assert {uid for uid, values in scores.items() if np.std(values) == 0} == ZERO_VARIANCE_UIDS


# --- DAPO's group filter ----------------------------------------------------------------------


@pytest.fixture
def replay_buffer_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """verl's `verl/trainer/ppo/v1/replay_buffer.py`, loaded from its file (its package imports the
    whole v1 trainer) with a `transfer_queue` whose `kv_batch_get` each test sets."""
    store = types.ModuleType("transfer_queue")
    store.KVBatchMeta = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transfer_queue", store)
    path = os.path.join(os.path.dirname(verl.__file__), "trainer", "ppo", "v1", "replay_buffer.py")
    spec = importlib.util.spec_from_file_location("verl_v1_replay_buffer", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dapo_filtered(
    module: types.ModuleType, metric: str, streamed: list[tuple[str, int, dict[str, Any]]]
) -> set[str]:
    """The uids verl's sync DAPO filter evicts (`algorithm.filter_groups.metric=<metric>`) once
    every group has finished, reading each trajectory's stored `extra_fields`."""
    stored = {f"{uid}_{session}_0": fields for uid, session, fields in streamed}

    def kv_batch_get(keys: list[str], partition_id: str, select_fields: list[str]) -> dict[str, list[Any]]:
        assert select_fields == ["extra_fields"]
        return {"extra_fields": [stored[key] for key in keys]}

    module.tq.kv_batch_get = kv_batch_get
    buffer = module.ReplayBuffer(
        "sync", DictConfig({}), None, "drop", DictConfig({}),
        refill_fn=lambda *_: None, filter_groups_metric=metric, train_batch_size=4, gen_batch_size=1,
    )  # fmt: skip
    buffer.partitions["train"] = {key: {"status": "finished"} for key in stored}
    buffer.finished_keys["train"] = {uid for uid, _, _ in streamed}
    uids, _ = buffer._dapo_filtered_keys("train")
    return set(uids)


async def test_dapo_filter_on_score_evicts_exactly_the_zero_variance_groups(
    referee_url: str, plain: tuple[Path, Any], replay_buffer_module: types.ModuleType
) -> None:
    """`filter_groups.metric=score` (`return_dict=True`) or `acc` (a float result): the filter
    keeps a group whose metric varies. `referee/zero_variance` was the same for every sample of
    a group by definition, so DAPO evicted every group; it is no longer a per-sample key, and
    verl refuses a metric the trajectories lack."""
    with_dict = await stream_groups(referee_url, plain, RETURN_DICT)
    assert dapo_filtered(replay_buffer_module, "score", with_dict) == ZERO_VARIANCE_UIDS
    as_float = await stream_groups(referee_url, plain)
    assert dapo_filtered(replay_buffer_module, "acc", as_float) == ZERO_VARIANCE_UIDS
    with pytest.raises(RuntimeError, match="missing DAPO metric 'referee/zero_variance'"):
        dapo_filtered(replay_buffer_module, "referee/zero_variance", with_dict)
