"""verl 0.9.1's own reward classes, imported and driven against a real Referee service.

verl is installed without its dependencies (`make` installs ``verl==0.9.1 --no-deps`` and the
`trainers` extra: tensordict, ray, hydra-core, aiohttp, ..., what its reward modules import; no
GPU package). Nothing of verl is re-implemented here: the configuration is verl's own
``ppo_trainer.yaml`` composed by Hydra with the overrides a user types, the batches are
`verl.DataProto`s laid out as verl's rollout leaves them (left-padded prompts, right-padded
responses ending in the end-of-sequence token, attention mask over both) and tokenised by a
character tokenizer built locally, and the reward functions are loaded by verl's
`load_reward_manager` / `get_custom_reward_fn` from ``pkg://referee.trainer_adapter.verl`` or
from the adapter's file path.

What verl 0.9.1's trainer runs (`verl/trainer/ppo/ray_trainer.py`): a `RewardLoopManager`
whose Ray actors (`RewardLoopWorker`) score each sample with a reward-loop manager from
`verl/experimental/reward_loop/reward_manager` (`naive`, `dapo`, `gdpo`, `rate_limited`,
`remote`). The classes of `verl/workers/reward_manager` (`NaiveRewardManager`,
`BatchRewardManager`, `PrimeRewardManager`, `DAPORewardManager`) are the interface of earlier
verl trainers, still shipped and driven here too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="needs the `train` extra: pip install -e '.[train]'")
torch = pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
verl = pytest.importorskip(
    "verl",
    reason="needs verl: `make` installs it with the `trainers` extra "
    "(pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.errors import ConfigCompositionException  # noqa: E402
from omegaconf import DictConfig  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.reward_loop import RewardLoopWorker  # noqa: E402
from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402
from verl.workers.reward_manager import (  # noqa: E402
    BatchRewardManager,
    DAPORewardManager,
    NaiveRewardManager,
    PrimeRewardManager,
)

import referee.trainer_adapter.verl as adapter  # noqa: E402
from tests.support.tokenizers import printable_tokenizer  # noqa: E402
from tests.trainer_adapter.test_verl_loading import PKG, custom_fn, groups_requests  # noqa: E402

RETURN_DICT = "+reward.custom_reward_function.reward_kwargs.return_dict=true"


def test_the_installed_verl_is_the_one_mirrored() -> None:
    assert verl.__version__ == "0.9.1"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """verl's reward loop loads the actor's tokenizer from `actor_rollout_ref.model.path`."""
    path = tmp_path_factory.mktemp("verl-tokenizer")
    printable_tokenizer().save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir: Path) -> Any:
    from verl.utils import hf_tokenizer

    return hf_tokenizer(str(tokenizer_dir))  # as RewardLoopWorker loads it


Row = tuple[str, str, str, Any, dict[str, Any]]  # prompt, response, data_source, ground_truth, extra_info


def make_batch(tokenizer: Any, rows: list[Row], response_len: int = 48) -> DataProto:
    """A rollout batch as verl's trainer hands it to the reward code."""
    prompts = [tokenizer.encode(p, add_special_tokens=False) for p, *_ in rows]
    responses = [
        [*tokenizer.encode(r, add_special_tokens=False), tokenizer.eos_token_id] for _, r, *_ in rows
    ]
    prompt_len = max(map(len, prompts))
    assert max(map(len, responses)) <= response_len
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (prompt_len - len(p)) + p for p in prompts])
    response_ids = torch.tensor([r + [pad] * (response_len - len(r)) for r in responses])
    mask = torch.tensor(
        [
            [0] * (prompt_len - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (response_len - len(r))
            for p, r in zip(prompts, responses, strict=True)
        ]
    )
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": mask,
            "position_ids": torch.clamp(torch.cumsum(mask, dim=1) - 1, min=0),
        },
        non_tensors={
            "data_source": np.array([source for _, _, source, _, _ in rows], dtype=object),
            "reward_model": np.array(
                [{"ground_truth": truth, "style": "rule"} for _, _, _, truth, _ in rows], dtype=object
            ),
            "extra_info": np.array([dict(info) for *_, info in rows], dtype=object),
        },
    )


def last_token_rewards(data: DataProto, reward_tensor: torch.Tensor) -> list[float]:
    """The reward at each response's last valid token (its end-of-sequence); zero elsewhere."""
    prompt_len = data.batch["prompts"].shape[1]
    lengths = data.batch["attention_mask"][:, prompt_len:].sum(dim=1)
    out = []
    for i, n in enumerate(lengths.tolist()):
        row = reward_tensor[i]
        assert torch.count_nonzero(torch.cat([row[: n - 1], row[n:]])) == 0
        out.append(float(row[n - 1]))
    return out


def verl_config(tokenizer_dir: Path, *overrides: str) -> DictConfig:
    """verl's own trainer configuration, composed as `python -m verl.trainer.main_ppo ...` does."""
    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[f"actor_rollout_ref.model.path={tokenizer_dir}", *overrides],
        )


def reward_config(
    tokenizer_dir: Path, referee_url: str, name: str, *overrides: str, path: str = PKG
) -> DictConfig:
    """`reward.custom_reward_function` naming one of the adapter's functions, as a user sets it."""
    return verl_config(
        tokenizer_dir,
        f"reward.custom_reward_function.path={path}",
        f"reward.custom_reward_function.name={name}",
        f"+reward.custom_reward_function.reward_kwargs.url={referee_url}",
        *overrides,
    )


def gsm8k_rows(n: int) -> list[Row]:
    """GSM8K as verl's `examples/data_preprocess/gsm8k.py` stores it: data_source openai/gsm8k,
    the number as ground truth; every third answer wrong."""
    rows: list[Row] = []
    for i in range(n):
        answer = i if i % 3 else i + 1
        rows.append(
            (f"Q{i}: {i}+0=?", f"so the total is #### {answer}", "openai/gsm8k", str(i), {"index": i})
        )
    return rows


def gsm8k_expected(n: int) -> list[float]:
    return [1.0 if i % 3 else 0.0 for i in range(n)]


async def run_reward_loop(config: DictConfig, data: DataProto) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
    """One `RewardLoopWorker`, as each Ray actor of `RewardLoopManager` runs it, then the
    manager's own assembly (`RewardLoopManager.compute_rm_score`, verl 0.9.1): the rm_scores
    tensor and reward_extra_info as numpy columns (keys of the first sample)."""
    worker = RewardLoopWorker(config)  # built inside the loop: verl's managers keep get_event_loop()
    outputs = await worker.compute_score_batch(data)
    scores = [out["reward_score"] for out in outputs]
    rm_scores = worker.reward_manager.assemble_rm_scores(data, scores)
    infos = [out.get("reward_extra_info", {}) for out in outputs]
    return rm_scores, {key: np.array([info[key] for info in infos]) for key in infos[0]}


def test_reward_kwargs_need_a_plus_on_verls_command_line(tokenizer_dir: Path) -> None:
    """verl 0.9.1's `reward.custom_reward_function` has no `reward_kwargs` key: Hydra refuses the
    plain override and takes it with a leading `+` (as docs/training.md writes it)."""
    with pytest.raises(ConfigCompositionException, match=r"\+reward\.custom_reward_function\.reward_kwargs"):
        verl_config(tokenizer_dir, "reward.custom_reward_function.reward_kwargs.url=http://x")
    config = verl_config(tokenizer_dir, "+reward.custom_reward_function.reward_kwargs.url=http://x")
    assert config.reward.custom_reward_function.reward_kwargs == {"url": "http://x"}


async def test_reward_loop_naive_awaits_compute_score_async_as_one_request(
    referee_url: str, tokenizer_dir: Path, tokenizer: Any
) -> None:
    config = reward_config(
        tokenizer_dir, referee_url, "compute_score_async", "reward.reward_manager.name=naive"
    )
    data = make_batch(tokenizer, gsm8k_rows(64))
    before = groups_requests(referee_url)
    rm_scores, extra = await run_reward_loop(config, data)
    assert 1 <= groups_requests(referee_url) - before <= 2  # 64 concurrent awaits, one request
    assert last_token_rewards(data, rm_scores) == gsm8k_expected(64)
    assert extra["acc"].tolist() == gsm8k_expected(64)  # a float result: verl logs it as `acc`


async def test_reward_loop_file_path_form_sync_function_with_return_dict(
    referee_url: str, tokenizer_dir: Path, tokenizer: Any
) -> None:
    """The file-path form and a plain function (run in the loop's thread pool, one request per
    sample); `return_dict=True` puts `referee_error` into verl's reward_extra_info."""
    config = reward_config(tokenizer_dir, referee_url, "compute_score", RETURN_DICT, path=adapter.__file__)
    rows = gsm8k_rows(6)
    rows[4] = ("Q4", "#### 4", "openai/gsm8k", None, {})  # a null label: no verdict, batch still scored
    data = make_batch(tokenizer, rows)
    rm_scores, extra = await run_reward_loop(config, data)
    expected = gsm8k_expected(6)
    expected[4] = 0.0
    assert last_token_rewards(data, rm_scores) == expected
    assert extra["score"].tolist() == expected
    assert extra["referee_error"].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 0.0]


async def test_reward_loop_dapo_adds_its_overlong_penalty_to_referee_scores(
    referee_url: str, tokenizer_dir: Path, tokenizer: Any
) -> None:
    config = reward_config(
        tokenizer_dir,
        referee_url,
        "compute_score_async",
        RETURN_DICT,
        "reward.reward_manager.name=dapo",
        "+reward.reward_kwargs.max_resp_len=20",
        "+reward.reward_kwargs.overlong_buffer_cfg.enable=true",
        "+reward.reward_kwargs.overlong_buffer_cfg.len=10",
        "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0",
        "+reward.reward_kwargs.overlong_buffer_cfg.log=true",
    )
    assert get_reward_manager_cls("dapo").__name__ == "DAPORewardManager"
    long_answer = "a long and winding answer #### 7"  # 33 tokens with its EOS: 23 past 10
    rows: list[Row] = [
        ("Q", "#### 7", "math_dapo", "7", {}),
        ("Q", long_answer, "math_dapo", "7", {}),
        ("Q", "#### 8", "math_dapo", "7", {}),
    ]
    data = make_batch(tokenizer, rows)
    rm_scores, extra = await run_reward_loop(config, data)
    penalty = -(len(long_answer) + 1 - 10) / 10
    assert last_token_rewards(data, rm_scores) == pytest.approx([1.0, 1.0 + penalty, 0.0])
    assert extra["score"].tolist() == [1.0, 1.0, 0.0]  # Referee's verdicts, before the penalty
    assert extra["overlong_reward"].tolist() == pytest.approx([0.0, penalty, 0.0])


async def test_reward_loop_weighted_components_and_a_bad_row_keep_verls_columns_aligned(
    referee_url: str, tokenizer_dir: Path, tokenizer: Any
) -> None:
    """`RewardLoopManager.compute_rm_score` takes the reward_extra_info keys of the FIRST sample
    and reads them from every sample: every sample must report the same keys, the one whose
    reference is invalid (no verdict) included."""
    config = reward_config(tokenizer_dir, referee_url, "compute_score_async", RETURN_DICT)
    components = [{"name": "format.think_answer", "weight": 0.5}, {"name": "exact", "weight": 1.0}]
    info = {"verifier": components}
    good = "<think>hm</think><answer>42</answer>"
    rows: list[Row] = [
        ("Q", good, "any", "<answer>42</answer>", info),
        ("Q", "42", "any", "<answer>42</answer>", info),
        ("Q", good, "any", {"not": "a string"}, info),  # `exact` refuses an object reference
        ("Q", good, "any", "<answer>41</answer>", info),
    ]
    data = make_batch(tokenizer, rows, response_len=64)
    rm_scores, extra = await run_reward_loop(config, data)
    assert set(extra) == {
        "score",
        "referee_error",
        "referee/format.think_answer",
        "referee/exact",
    }
    assert extra["referee_error"].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert extra["referee/format.think_answer"].tolist()[:2] == [1.0, 0.0]
    assert last_token_rewards(data, rm_scores)[2] == 0.0


# --- the reward managers of verl/workers/reward_manager (earlier trainers' interface) ---------


def test_legacy_naive_manager_calls_compute_score_per_sample(referee_url: str, tokenizer: Any) -> None:
    manager = NaiveRewardManager(
        tokenizer, num_examine=0, compute_score=custom_fn(referee_url, "compute_score")
    )
    data = make_batch(tokenizer, gsm8k_rows(9))
    out = manager(data, return_dict=True)
    assert last_token_rewards(data, out["reward_tensor"]) == gsm8k_expected(9)


def test_legacy_batch_manager_sends_the_batch_in_chunks(referee_url: str, tokenizer: Any) -> None:
    fn = custom_fn(referee_url, "compute_score_batch", return_dict=True)
    manager = BatchRewardManager(tokenizer, num_examine=0, compute_score=fn)
    data = make_batch(tokenizer, gsm8k_rows(300))
    before = groups_requests(referee_url)
    out = manager(data, return_dict=True)
    assert groups_requests(referee_url) - before == 2  # 300 groups: two chunks (256 a request)
    assert last_token_rewards(data, out["reward_tensor"]) == gsm8k_expected(300)
    assert out["reward_extra_info"]["referee_error"] == [0.0] * 300
    assert data.batch["acc"].tolist() == gsm8k_expected(300)


def test_legacy_dapo_manager(referee_url: str, tokenizer: Any) -> None:
    manager = DAPORewardManager(
        tokenizer, num_examine=0, compute_score=custom_fn(referee_url, "compute_score")
    )
    data = make_batch(tokenizer, gsm8k_rows(6))
    assert last_token_rewards(data, manager(data)) == gsm8k_expected(6)


def test_legacy_prime_manager_in_its_process_pool_with_the_file_path_form(
    referee_url: str, tokenizer: Any
) -> None:
    """PRIME runs the function in a pool of forked processes and converts its result to a
    float: the file-loaded module must score there (not silently 0)."""
    manager = PrimeRewardManager(
        tokenizer, num_examine=0, compute_score=custom_fn(referee_url, "compute_score", path=adapter.__file__)
    )
    data = make_batch(tokenizer, gsm8k_rows(6))
    assert last_token_rewards(data, manager(data)) == gsm8k_expected(6)
    assert data.batch["acc"].tolist() == gsm8k_expected(6)


def test_legacy_load_path_through_load_reward_manager_is_the_reward_loop(
    referee_url: str, tokenizer_dir: Path, tokenizer: Any
) -> None:
    """verl 0.9.1's `load_reward_manager` only knows the reward loop's managers: `batch` and
    `prime` (earlier trainers' `reward_model.reward_manager`) are no longer selectable there."""
    config = reward_config(tokenizer_dir, referee_url, "compute_score_async")
    manager = load_reward_manager(config, tokenizer)
    assert type(manager).__module__ == "verl.experimental.reward_loop.reward_manager.naive"
    for legacy in ("batch", "prime"):
        with pytest.raises(ValueError, match="Unknown reward manager"):
            get_reward_manager_cls(legacy)


def test_legacy_prime_manager_scores_zero_with_return_dict(referee_url: str, tokenizer: Any) -> None:
    """Why docs/training.md says to keep `return_dict=False` under PRIME: it reads a dict result
    as `result[0]`, fails, and scores the whole batch 0."""
    fn = custom_fn(referee_url, "compute_score", return_dict=True)
    manager = PrimeRewardManager(tokenizer, num_examine=0, compute_score=fn)
    data = make_batch(tokenizer, gsm8k_rows(3))
    assert last_token_rewards(data, manager(data)) == [0.0, 0.0, 0.0]


@pytest.mark.slow
def test_ray_reward_loop_manager_end_to_end(
    referee_url: str, tokenizer_dir: Path, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verl 0.9.1's trainer path itself: `RewardLoopManager` starts its `RewardLoopWorker`s as
    Ray actors (each imports the adapter by its `pkg://` path and runs its own event loop),
    splits the batch between them and assembles `rm_scores` and the reward_extra_info columns."""
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    config = reward_config(
        tokenizer_dir, referee_url, "compute_score_async", RETURN_DICT, "reward.num_workers=2"
    )
    data = make_batch(tokenizer, gsm8k_rows(40))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        before = groups_requests(referee_url)
        out = RewardLoopManager(config).compute_rm_score(data)
        assert 2 <= groups_requests(referee_url) - before <= 4  # one burst per actor
    finally:
        ray.shutdown()
    assert last_token_rewards(data, out.batch["rm_scores"]) == gsm8k_expected(40)
    assert out.meta_info["reward_extra_keys"] == ["score", "referee_error"]
    assert out.non_tensor_batch["referee_error"].tolist() == [0.0] * 40
