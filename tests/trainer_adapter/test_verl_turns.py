"""A tool-use episode through verl 0.9.1's reward managers: the last assistant turn is judged.

verl decodes every response with ``skip_special_tokens=True``: ChatML's ``<|im_start|>`` /
``<|im_end|>`` are special tokens, so the episode reaches the reward function as
``<tool_call>...</tool_call>\\nuser\\n<tool_response>...\\nassistant\\n42`` and `exact` '42'
scores 0 on every manager. `referee.trainer_adapter.verl_managers` keeps the markers. The
responses are laid out as verl's tool agent loop leaves them: the prompt rendered by the chat
template up to the assistant header, the response the rest of the conversation (assistant
turn, tool message as the template renders it, assistant turn), ending in the EOS token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="needs the `train` extra: pip install -e '.[train]'")
pytest.importorskip(
    "verl",
    reason="needs verl: `make` installs it with the `trainers` extra "
    "(pyproject.toml, [tool.referee] trainers-no-deps: pip install --no-deps)",
)

from verl import DataProto  # noqa: E402
from verl.workers import reward_manager as legacy  # noqa: E402

from referee.trainer_adapter import verl_managers  # noqa: E402
from referee.trainer_adapter.verl_managers import TurnMarkedTokenizer  # noqa: E402
from tests.support.tokenizers import printable_tokenizer  # noqa: E402
from tests.trainer_adapter.test_verl_loading import custom_fn  # noqa: E402
from tests.trainer_adapter.test_verl_real import (  # noqa: E402
    RETURN_DICT,
    Row,
    last_token_rewards,
    make_batch,
    reward_config,
    run_reward_loop,
)

# Qwen's template, tool messages included (rendered as a user turn holding a <tool_response>).
CHATML_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m.role == 'tool' %}"
    "{{ '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{% else %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
QUESTION = "What is 40+2? Use the tool."
TOOL_CALL = "<tool_call>add(40, 1)</tool_call>"
# Picked by the reward managers of referee.trainer_adapter.verl_managers.
IMPORTLIB = (
    "reward.reward_manager.source=importlib",
    "reward.reward_manager.module.path=pkg://referee.trainer_adapter.verl_managers",
)


def chatml_tokenizer() -> Any:
    """The printable character tokenizer with ChatML's markers as special tokens (its EOS is
    already `<|im_end|>`, its padding `<|endoftext|>`), a newline and Qwen's chat template."""
    tokenizer = printable_tokenizer()
    tokenizer.add_tokens(["\n"])
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def saved(tokenizer: Any, path: Path) -> tuple[Path, Any]:
    """A tokenizer saved where verl's reward worker loads it (the actor's model path), and the
    tokenizer as verl loads it from there."""
    from verl.utils import hf_tokenizer

    tokenizer.save_pretrained(path)
    return path, hf_tokenizer(str(path))


@pytest.fixture(scope="module")
def chatml(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return saved(chatml_tokenizer(), tmp_path_factory.mktemp("verl-chatml-tokenizer"))


def tool_episode(tokenizer: Any, final: str, tool_result: str = "41") -> tuple[str, str]:
    """(prompt, response) of one tool call and a final answer; the response without its closing
    EOS, which `make_batch` appends."""
    messages = [{"role": "user", "content": QUESTION}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    messages += [
        {"role": "assistant", "content": TOOL_CALL},
        {"role": "tool", "content": tool_result},
        {"role": "assistant", "content": final},
    ]
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    assert full.startswith(prompt) and full.endswith("<|im_end|>\n")
    return prompt, full[len(prompt) : -len("<|im_end|>\n")]


def episodes_batch(tokenizer: Any, reference: str = "42") -> DataProto:
    """Two tool episodes (final answers 42 and 41) and a single-turn "42", judged by `exact`;
    `__num_turns__` as verl's tool agent loop counts them (user, assistant, tool, assistant)."""
    rows: list[Row] = []
    for final in ("42", "41"):
        prompt, response = tool_episode(tokenizer, final)
        rows.append((prompt, response, "exact", reference, {}))
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": QUESTION}], add_generation_prompt=True, tokenize=False
    )
    rows.append((prompt, "42", "exact", reference, {}))
    data = make_batch(tokenizer, rows, response_len=160)
    data.non_tensor_batch["__num_turns__"] = np.array([4, 4, 2], dtype=np.int32)
    return data


JUDGED_LAST_TURN = [1.0, 0.0, 1.0]


def test_verls_decoding_drops_the_turn_markers_and_the_adapter_says_so(
    referee_url: str, chatml: tuple[Path, Any]
) -> None:
    """Why: verl's own NaiveRewardManager with the tokenizer as it is judges each episode whole;
    the adapter sees `num_turns` 4 and a text without markers, and warns."""
    _, tokenizer = chatml
    data = episodes_batch(tokenizer)
    response = data.batch["responses"][0][: int(data.batch["attention_mask"][0, -160:].sum())]
    decoded = tokenizer.decode(response, skip_special_tokens=True)
    assert decoded.endswith("\nassistant\n42") and "<|im_start|>" not in decoded
    manager = legacy.NaiveRewardManager(
        tokenizer, num_examine=0, compute_score=custom_fn(referee_url, "compute_score")
    )
    with pytest.warns(RuntimeWarning, match="4-turn episode .* judged whole"):
        assert last_token_rewards(data, manager(data)) == [0.0, 0.0, 1.0]


def test_turn_marked_tokenizer_keeps_markers_only_for_multi_turn_responses(chatml: tuple[Path, Any]) -> None:
    _, tokenizer = chatml
    marked = TurnMarkedTokenizer(tokenizer)
    _, response = tool_episode(tokenizer, "42")
    ids = [
        *tokenizer.encode(response, add_special_tokens=False),
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
    ]
    assert marked.decode(ids, skip_special_tokens=True) == (
        f"<|im_start|>assistant\n{TOOL_CALL}<|im_end|>\n<|im_start|>user\n<tool_response>\n41\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n42<|im_end|>"  # padding still skipped
    )
    single = [
        *tokenizer.encode("42", add_special_tokens=False),
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
    ]
    assert (
        marked.decode(single, skip_special_tokens=True)
        == tokenizer.decode(single, skip_special_tokens=True)
        == "42"
    )
    assert marked.decode(ids) == tokenizer.decode(ids)  # special tokens kept: verl's text as it is
    assert marked.batch_decode([single], skip_special_tokens=True) == ["42"]
    assert marked.eos_token == "<|im_end|>"  # everything else is the tokenizer's
    plain = TurnMarkedTokenizer(printable_tokenizer())  # no template it knows: unchanged
    assert plain.template is None and plain.decode([2, 3], skip_special_tokens=True) == "ab"


def test_turn_marked_tokenizer_with_llama3_headers() -> None:
    from referee.turns import select_turns

    tokenizer = printable_tokenizer()
    tokenizer.add_tokens(["\n"])
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]}
    )
    response = (
        f"{TOOL_CALL}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n41<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n42<|eot_id|><|endoftext|>"
    )
    ids = tokenizer.encode(response, add_special_tokens=False)
    decoded = TurnMarkedTokenizer(tokenizer).decode(ids, skip_special_tokens=True)
    assert (select_turns(decoded), select_turns(decoded, 0)) == ("42", TOOL_CALL)


@pytest.mark.parametrize(
    ("manager", "function"),
    [("naive", "compute_score_async"), ("naive", "compute_score"), ("dapo", "compute_score_async")],
)
async def test_reward_loop_managers_judge_the_last_assistant_turn(
    referee_url: str, chatml: tuple[Path, Any], manager: str, function: str
) -> None:
    """verl 0.9.1's trainer path: `RewardLoopWorker` with the manager class loaded by verl from
    ``pkg://referee.trainer_adapter.verl_managers`` under verl's own manager name."""
    tokenizer_dir, tokenizer = chatml
    config = reward_config(
        tokenizer_dir, referee_url, function, RETURN_DICT, *IMPORTLIB, f"reward.reward_manager.name={manager}"
    )
    data = episodes_batch(tokenizer)
    rm_scores, extra = await run_reward_loop(config, data)
    assert last_token_rewards(data, rm_scores) == JUDGED_LAST_TURN
    assert extra["score"].tolist() == JUDGED_LAST_TURN


async def test_turns_reaches_the_first_assistant_turn_which_follows_the_prompt(
    referee_url: str, chatml: tuple[Path, Any]
) -> None:
    """The first turn has no header in the response (the prompt ends with it): `turns=0`."""
    tokenizer_dir, tokenizer = chatml
    config = reward_config(
        tokenizer_dir, referee_url, "compute_score_async", *IMPORTLIB, "reward.reward_manager.name=naive",
        "+reward.custom_reward_function.reward_kwargs.turns=0",
    )  # fmt: skip
    data = episodes_batch(tokenizer, reference=TOOL_CALL)
    rm_scores, _ = await run_reward_loop(config, data)
    assert last_token_rewards(data, rm_scores) == [1.0, 1.0, 0.0]


def test_every_reward_loop_manager_is_verls_own_with_the_marked_tokenizer() -> None:
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    for name in ("naive", "dapo", "gdpo", "rate_limited", "remote"):
        ours = getattr(verl_managers, name)
        assert issubclass(ours, get_reward_manager_cls(name)), name


# --- the managers of verl/workers/reward_manager (earlier trainers' interface) ---------------


@pytest.mark.parametrize(
    "manager_class", [legacy.NaiveRewardManager, legacy.DAPORewardManager, legacy.PrimeRewardManager]
)
def test_legacy_per_sample_managers_with_the_marked_tokenizer(
    referee_url: str, chatml: tuple[Path, Any], manager_class: type
) -> None:
    """PRIME decodes the padded responses with `batch_decode`, in its process pool's parent."""
    _, tokenizer = chatml
    manager = manager_class(
        TurnMarkedTokenizer(tokenizer), num_examine=0, compute_score=custom_fn(referee_url, "compute_score")
    )
    data = episodes_batch(tokenizer)
    assert last_token_rewards(data, manager(data)) == JUDGED_LAST_TURN


def test_legacy_batch_manager_with_the_marked_tokenizer(referee_url: str, chatml: tuple[Path, Any]) -> None:
    _, tokenizer = chatml
    fn = custom_fn(referee_url, "compute_score_batch")
    manager = legacy.BatchRewardManager(TurnMarkedTokenizer(tokenizer), num_examine=0, compute_score=fn)
    data = episodes_batch(tokenizer)
    assert last_token_rewards(data, manager(data)) == JUDGED_LAST_TURN
