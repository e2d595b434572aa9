"""Prompt ids and zero-variance shares through every adapter, checked against what a real service
recorded (`GET /v1/stats/prompts`): TRL reward functions (called as TRL calls them, and inside a
real `GRPOTrainer`), verl's functions (directly and through verl 0.9.1's own reward loop), the
group rewarder's `solved_prompts`, and the GRPO loop's `skip_solved_after` curriculum.

Each test reads and fills its own API key's namespace on a service of this module, so visit
counts are exact."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.client import Client
from referee.grouping import prompt_fingerprint
from referee.models import GroupSpec, PromptStat, PromptStatsPage
from referee.service.background import BackgroundServer
from referee.trainer_adapter import rewarder as rewarder_module
from referee.trainer_adapter import verl as verl_adapter
from referee.trainer_adapter.prompt_ids import as_prompt_id
from referee.trainer_adapter.rewarder import GroupRewarder
from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward
from tests.conftest import make_settings

KEYS = [f"adapter-stats-{i}" for i in range(16)]
_next_key = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    settings = make_settings(workers=1, api_keys=KEYS, db_path=tmp_path_factory.mktemp("stats") / "r.db")
    with BackgroundServer(settings) as running:
        yield running


@pytest.fixture
def key() -> str:
    """A namespace no other test of this module has used."""
    return KEYS[next(_next_key)]


def stats(server: BackgroundServer, key: str, **query: Any) -> PromptStatsPage:
    with Client(server.url, api_key=key) as client:
        return client.prompt_stats(limit=1000, **query)


def by_id(page: PromptStatsPage) -> dict[str, PromptStat]:
    return {p.prompt_id: p for p in page.prompts}


# --- prompt ids ---------------------------------------------------------------------------------


def test_prompt_id_cells_and_verl_rows() -> None:
    np = pytest.importorskip("numpy", reason="needs the `train` extra: pip install -e '.[train]'")
    assert as_prompt_id(17) == as_prompt_id(np.int64(17)) == as_prompt_id(17.0) == "17"
    assert as_prompt_id(None) is None and as_prompt_id("") is None and as_prompt_id(math.nan) is None
    assert as_prompt_id("x" * 200) == "x" * 200
    assert as_prompt_id("x" * 201) == prompt_fingerprint("x" * 201)
    assert as_prompt_id({"row": 1}) == prompt_fingerprint({"row": 1})

    resolve = verl_adapter.resolve_prompt_id
    assert resolve("openai/gsm8k", {"prompt_id": "q-7", "index": 3}) == "q-7"
    assert resolve("openai/gsm8k", {"split": "train", "index": np.int64(3)}) == "openai/gsm8k:train:3"
    assert resolve("openai/gsm8k", {"split": "test", "index": 3}) == "openai/gsm8k:test:3"
    assert resolve("math_dapo", {"index": 0}) == "math_dapo:0"
    assert resolve("s", {"question": "What is 2+2?"}) == prompt_fingerprint("What is 2+2?")
    assert resolve("s" * 300, {"index": 1}) == prompt_fingerprint("s" * 300 + ":1")
    assert resolve("s", {}) is None and resolve("s", None) is None


# --- TRL ------------------------------------------------------------------------------------------


def test_trl_reward_sends_the_datasets_ids_and_logs_the_services_zero_variance_share(
    server: BackgroundServer, key: str
) -> None:
    """As TRL calls a reward function: every column repeated once per completion. The prompt_id
    column names the groups; the logged zero-variance share is the one the service keeps."""
    reward = RefereeReward(server.url, api_key=key, verifier="exact", reference_column="answer")
    metrics: dict[str, float] = {}
    call: dict[str, Any] = {
        "prompts": ["1+1="] * 4 + ["2+2="] * 4,
        "completions": ["2", "2", "2", "2", "4", "5", "4", "4"],
        "answer": ["2"] * 4 + ["4"] * 4,
        "prompt_id": [17] * 4 + ["row-18"] * 4,
        "trainer_state": None,
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: metrics.__setitem__(name, value),
    }
    try:
        for _ in range(2):
            assert reward(**call) == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    finally:
        reward.close()
    page = stats(server, key)
    records = by_id(page)
    assert set(records) == {"17", "row-18"}
    assert (records["17"].visits, records["17"].attempts, records["17"].solved_streak) == (2, 8, 2)
    assert (records["row-18"].visits, records["row-18"].passes, records["row-18"].solved_streak) == (2, 6, 0)
    assert metrics["referee/zero_variance_share"] == reward.last_zero_variance_share == 0.5
    assert metrics["referee/zero_variance_fraction"] == 0.5  # the name of 0.1, for one release
    assert page.zero_variance_share == 0.5


async def test_trl_ids_default_to_a_digest_of_the_prompt(server: BackgroundServer, key: str) -> None:
    """Without an id column (or with an empty cell) a prompt is named by its digest, chat
    prompts too; an id over 200 characters by its digest; `prompt_ids=False` sends none."""
    chat = [{"role": "user", "content": "Say 7"}]
    long_id = "row/" + "9" * 250
    reward = AsyncRefereeReward(server.url, api_key=key, verifier="exact", reference_column="answer")
    try:
        await reward(prompts=[chat, chat], completions=["7", "8"], answer=["7", "7"])
        await reward(
            prompts=["a", "a", "b"],
            completions=["1", "1", "1"],
            answer=["1"] * 3,
            prompt_id=[None, None, long_id],
        )
    finally:
        await reward.aclose()
    records = by_id(stats(server, key))
    assert set(records) == {prompt_fingerprint(chat), prompt_fingerprint("a"), prompt_fingerprint(long_id)}
    assert records[prompt_fingerprint(chat)].attempts == 2 and records[prompt_fingerprint("a")].attempts == 2
    assert reward.last_zero_variance_share == 1.0

    off = RefereeReward(
        server.url, api_key=key, verifier="exact", reference_column="answer", prompt_ids=False
    )
    named = RefereeReward(server.url, api_key=key, reference_column="answer", prompt_id_column="row")
    try:
        off(prompts=["c"], completions=["1"], answer=["1"])
        assert stats(server, key).tracked == 3
        with pytest.raises(KeyError, match="'row' not found"):
            named(prompts=["c"], completions=["1"], answer=["1"], prompt_id=["c"])
    finally:
        off.close()
        named.close()


def two_step_grpo_trainer(model_dir: Path, tmp_path: Path, dataset: Any, reward_funcs: list[Any]) -> Any:
    """TRL's `GRPOTrainer` on the tiny model: 2 steps of 2 prompts x 4 completions, on CPU."""
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        per_device_train_batch_size=8,
        max_completion_length=3,
        max_steps=2,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=False,
        use_cpu=True,
        disable_dropout=True,
        gradient_checkpointing=False,
    )
    return GRPOTrainer(
        model=str(model_dir),
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
    )


@pytest.mark.slow
def test_real_grpo_trainer_sends_row_ids_and_logs_what_the_service_counted(
    server: BackgroundServer, key: str, tiny_hf_model_dir: Path, tmp_path: Path
) -> None:
    """TRL 1.16's `GRPOTrainer._calculate_rewards` hands every dataset column (here `prompt_id`)
    to the reward function once per completion. Two steps of 2 prompts x 4 completions: four
    visits of four completions each reach the service under the dataset's ids, and the share of
    zero-variance groups logged per step agrees with TRL's own `frac_reward_zero_std` and, over
    the run, with the service's."""
    pytest.importorskip("trl", reason="needs the `train` extra: pip install -e '.[train]'")
    from datasets import Dataset

    pairs = [(a, b) for a in range(10, 14) for b in range(10, 12)]
    ids = [f"add-{a}-{b}" for a, b in pairs]
    dataset = Dataset.from_dict(
        {
            "prompt": [f"{a}+{b}=" for a, b in pairs],
            "answer": [str(a + b)[::-1] for a, b in pairs],
            "prompt_id": ids,
        }
    )
    reward = RefereeReward(
        server.url, api_key=key, verifier="exact", reference_column="answer", name="referee"
    )
    trainer = two_step_grpo_trainer(tiny_hf_model_dir, tmp_path, dataset, [reward])
    trainer.train()
    reward.close()

    page = stats(server, key)
    assert set(by_id(page)) <= set(ids) and page.visits == 4
    assert all(p.attempts == 4 * p.visits for p in page.prompts)
    logs = [entry for entry in trainer.state.log_history if "referee/zero_variance_share" in entry]
    assert len(logs) == 2
    for entry in logs:
        assert entry["referee/zero_variance_share"] == pytest.approx(entry["frac_reward_zero_std"])
        # The name of 0.1, kept for one release.
        assert entry["referee/zero_variance_fraction"] == entry["referee/zero_variance_share"]
    mean = sum(entry["referee/zero_variance_share"] for entry in logs) / 2
    assert page.zero_variance_share == pytest.approx(mean)


@pytest.mark.slow
def test_with_a_second_reward_function_trl_and_referee_count_zero_variance_apart(
    server: BackgroundServer, key: str, tiny_hf_model_dir: Path, tmp_path: Path
) -> None:
    """TRL's `frac_reward_zero_std` is over the weighted sum of every reward function; Referee's
    `referee/zero_variance_share` over its own reward (what docs/training.md says). Referee's
    reward here cannot tell any completion apart (regex `.*`), a second function gives every
    completion a different reward: TRL sees spread everywhere, Referee none."""
    pytest.importorskip("trl", reason="needs the `train` extra: pip install -e '.[train]'")
    from datasets import Dataset

    dataset = Dataset.from_dict({"prompt": [f"{a}+1=" for a in range(10, 18)], "answer": [".*"] * 8})
    reward = RefereeReward(
        server.url, api_key=key, verifier="regex", reference_column="answer", name="referee"
    )
    draws = itertools.count()

    def distinct(completions: list[Any], **kwargs: Any) -> list[float]:
        return [float(next(draws)) for _ in completions]

    trainer = two_step_grpo_trainer(tiny_hf_model_dir, tmp_path, dataset, [reward, distinct])
    trainer.train()
    reward.close()
    logs = [entry for entry in trainer.state.log_history if "frac_reward_zero_std" in entry]
    assert len(logs) == 2
    assert [entry["referee/zero_variance_share"] for entry in logs] == [1.0, 1.0]
    assert [entry["frac_reward_zero_std"] for entry in logs] == [0.0, 0.0]


# --- verl -----------------------------------------------------------------------------------------


def test_verl_functions_send_row_ids(server: BackgroundServer, key: str) -> None:
    """The batched form with ids from each of their sources; the per-sample form's group of one
    is a visit too, and its dict result has no zero-variance key (a lone sample has no spread)."""
    infos: list[dict[str, Any] | None] = [
        {"prompt_id": "mine-1"},
        {"prompt_id": "mine-1"},
        {"split": "train", "index": 5},
        {"question": "What is 2+2?"},
        None,
    ]
    out = verl_adapter.compute_score_batch(
        ["exact"] * 5, ["a", "b", "c", "4", "x"], ["a", "a", "c", "4", "x"], infos,
        url=server.url, api_key=key, return_dict=True,
    )  # fmt: skip
    assert [o["referee/zero_variance"] for o in out] == [0.0, 0.0, 1.0, 1.0, 1.0]  # type: ignore[index]
    single = verl_adapter.compute_score(
        "exact", "a", "a", {"prompt_id": "mine-1"}, url=server.url, api_key=key, return_dict=True
    )
    assert single == {"score": 1.0, "referee_error": 0.0}
    records = by_id(stats(server, key))
    assert set(records) == {"mine-1", "exact:train:5", prompt_fingerprint("What is 2+2?")}
    assert (records["mine-1"].visits, records["mine-1"].attempts, records["mine-1"].passes) == (2, 3, 2)


async def test_verl_reward_loop_groups_a_prompts_samples_and_reports_the_services_share(
    server: BackgroundServer, key: str, tmp_path: Path
) -> None:
    """verl 0.9.1's `RewardLoopWorker` awaits `compute_score_async` once per sample, all at once:
    each prompt's 4 samples (same `extra_info` index) are one group, one visit; the share of
    prompts whose `score` has no spread is the service's zero-variance share (the awaited form
    reports no per-sample flag: verl's streaming reward seldom hands it a whole group)."""
    pytest.importorskip(
        "verl",
        reason="needs verl: `make` installs it with the `trainers` extra (pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
    )
    from tests.support.tokenizers import printable_tokenizer
    from tests.trainer_adapter.test_verl_real import RETURN_DICT, make_batch, reward_config, run_reward_loop

    printable_tokenizer().save_pretrained(tmp_path)
    config = reward_config(
        tmp_path, server.url, "compute_score_async", RETURN_DICT,
        f"+reward.custom_reward_function.reward_kwargs.api_key={key}",
    )  # fmt: skip
    answers = {0: ["7"] * 4, 1: ["1"] * 4, 2: ["7", "1", "7", "7"], 3: ["1", "1", "7", "1"]}
    rows = [
        (f"Q{i}", f"#### {answer}", "openai/gsm8k", "7", {"split": "train", "index": i})
        for i, group in answers.items()
        for answer in group
    ]
    from verl.utils import hf_tokenizer

    data = make_batch(hf_tokenizer(str(tmp_path)), rows)
    _, extra = await run_reward_loop(config, data)
    assert "referee/zero_variance" not in extra
    no_spread = (extra["score"].reshape(4, 4).std(axis=1) == 0).tolist()  # per prompt, in order
    assert no_spread == [True, True, False, False]
    page = stats(server, key)
    records = by_id(page)
    assert set(records) == {f"openai/gsm8k:train:{i}" for i in range(4)}
    assert all((r.visits, r.attempts) == (1, 4) for r in records.values())
    assert records["openai/gsm8k:train:0"].solved_streak == 1
    assert page.zero_variance_share == pytest.approx(sum(no_spread) / len(no_spread)) == 0.5


# --- the group rewarder ---------------------------------------------------------------------------


async def test_rewarder_names_groups_and_pages_through_solved_prompts(
    server: BackgroundServer, key: str, monkeypatch: pytest.MonkeyPatch, fake_scorer: Any
) -> None:
    rewarder = GroupRewarder(server.url, api_key=key, verifier="exact")
    solved = [f"s{i}" for i in range(5)]
    try:
        for _ in range(2):
            scored = await rewarder.score(
                [["1", "1"]] * 5 + [["1", "2"]], ["1"] * 6, prompt_ids=[*solved, "unsolved"]
            )
            assert scored.zero_variance == [True] * 5 + [False]
        monkeypatch.setattr(rewarder_module, "STATS_PAGE", 2)  # three pages of at most two
        assert await rewarder.solved_prompts(2) == set(solved)
        assert await rewarder.solved_prompts(3) == set()
        with pytest.raises(ValueError, match="streak"):
            await rewarder.solved_prompts(0)
        with pytest.raises(ValueError, match="prompt ids"):
            rewarder.specs([["1"]], ["1"], prompt_ids=["a", "b"])
    finally:
        await rewarder.aclose()
    assert by_id(stats(server, key))["unsolved"].visits == 2
    with pytest.raises(TypeError, match="prompt statistics"):
        await GroupRewarder(fake_scorer).solved_prompts(1)


# --- the GRPO loop --------------------------------------------------------------------------------


def _grpo_run(
    server: BackgroundServer, key: str, out: Path, pairs: list[tuple[int, int]] | None, **args: Any
) -> list[dict[str, Any]]:
    pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
    from referee.trainer_adapter.grpo.demo_task import AdditionTask, tiny_policy
    from referee.trainer_adapter.grpo.loop import GRPO, GRPOArgs

    task = AdditionTask()
    if pairs is not None:
        task.train_pairs = pairs
    settings = GRPOArgs(
        out=str(out),
        steps=2,
        prompts_per_step=4,
        group_size=2,
        eval_every=0,
        checkpoint_every=0,
        progress=False,
    )
    for name, value in args.items():
        setattr(settings, name, value)
    rewarder = GroupRewarder(server.url, api_key=key, verifier=task.verifier, options=task.options)
    GRPO(settings, tiny_policy(0), task, rewarder).train()
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _solve(server: BackgroundServer, key: str, prompt_id: str, reference: str, visits: int) -> None:
    with Client(server.url, api_key=key) as client:
        for _ in range(visits):
            group = GroupSpec(
                verifier="exact", reference=reference, responses=[reference] * 2, prompt_id=prompt_id
            )
            client.score_groups([group])


def test_grpo_loop_skips_a_prompt_the_service_reports_solved(
    server: BackgroundServer, key: str, tmp_path: Path
) -> None:
    """Two training prompts, one solved twice in a row: with skip_solved_after=2 every draw of it
    is put back, so it gets no new visit and the other one gets all of them."""
    _solve(server, key, "addition:10+10", "02", visits=2)
    records = _grpo_run(server, key, tmp_path, [(10, 10), (11, 11)], skip_solved_after=2)
    visits = {pid: p.visits for pid, p in by_id(stats(server, key)).items()}
    assert visits == {"addition:10+10": 2, "addition:11+11": 2 * 4}
    assert [r["solved_known"] for r in records] == [1, 1]
    assert sum(r["skipped_solved"] for r in records) > 0
    assert all(r["groups_used"] == 4 for r in records)


def test_grpo_loop_with_every_prompt_solved_fills_the_batch_after_bounded_redraws(
    server: BackgroundServer, key: str, tmp_path: Path
) -> None:
    _solve(server, key, "addition:10+10", "02", visits=1)
    records = _grpo_run(server, key, tmp_path, [(10, 10)], steps=1, skip_solved_after=1, max_skip_redraws=3)
    assert records[0]["skipped_solved"] == 4 * 3 and records[0]["groups_used"] == 4
    assert by_id(stats(server, key))["addition:10+10"].visits == 1 + 4


def test_grpo_loop_names_training_groups_not_evaluation(
    server: BackgroundServer, key: str, tmp_path: Path
) -> None:
    records = _grpo_run(server, key, tmp_path, None, steps=1, eval_every=1)
    page = stats(server, key)
    assert page.visits == 4 and all(p.prompt_id.startswith("addition:") for p in page.prompts)
    assert "accuracy" in records[0] and "skipped_solved" not in records[1]


def test_demo_command_passes_skip_solved_after(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="needs the `train` extra: pip install -e '.[train]'")
    from typer.testing import CliRunner

    from referee.trainer_adapter.cli import app
    from referee.trainer_adapter.grpo import demo

    seen: dict[str, Any] = {}

    def fake_run_demo(**kwargs: Any) -> dict[str, Any]:
        seen.update(kwargs)
        # What GRPO.summary() returns, as far as the command reads it.
        return {"accuracy_by_step": {"0": 0.0, "10": 0.5}, "reward_time_share": 0.0, "png": "x"}

    monkeypatch.setattr(demo, "run_demo", fake_run_demo)
    args = ["demo", "--url", "http://x", "--out", str(tmp_path), "--skip-solved-after", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert seen["skip_solved_after"] == 3
    assert CliRunner().invoke(app, [*args[:-1], "0"]).exit_code != 0
