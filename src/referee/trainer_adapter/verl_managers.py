"""verl reward managers that keep a multi-turn episode's turn markers, so Referee judges the
right assistant turn.

Every verl reward manager decodes a response with ``skip_special_tokens=True`` before it calls
the reward function. The chat template's turn markers (ChatML's ``<|im_start|>``/``<|im_end|>``,
Llama 3's headers) are special tokens, so a tool-use episode reaches `compute_score` as one text
(``...</tool_call>\\nuser\\n<tool_response>41...\\nassistant\\n42``) whose turns cannot be told
apart any more: the whole episode is judged, and `exact` '42' scores 0. verl keeps no message
list of the response either (its agent loops keep only the prompt's, as `raw_prompt`). What it
keeps is the response's token ids, and the managers below decode those with the markers kept.

verl 0.9.1's trainers (the reward loop, streaming or not) take a manager class from a module::

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://referee.trainer_adapter.verl_managers
    reward.reward_manager.name=naive     # or dapo, gdpo, rate_limited, remote: verl's names

Each is verl's manager of that name, given a `TurnMarkedTokenizer`; the reward function
(`referee.trainer_adapter.verl`'s) then picks the turn(s) named by its ``turns`` keyword (the
last assistant turn by default). The managers of `verl.workers.reward_manager` (earlier
trainers' interface) take the tokenizer as an argument: build them with
``TurnMarkedTokenizer(tokenizer)``.

Importing this module imports verl (it is loaded by verl, never by the service).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from verl.experimental.reward_loop import reward_manager as reward_loop

__all__ = [
    "DAPORewardManager",
    "GDPORewardManager",
    "NaiveRewardManager",
    "RateLimitedRewardManager",
    "RemoteRewardManager",
    "TurnMarkedTokenizer",
    "dapo",
    "gdpo",
    "naive",
    "rate_limited",
    "remote",
]


class ChatTemplate(NamedTuple):
    """The special tokens that delimit turns in a chat template, and the header that opens an
    assistant turn (a response begins inside one: the prompt ends with that header)."""

    start: str
    markers: tuple[str, ...]
    assistant_header: str


# The templates `referee.turns` recognises.
TEMPLATES = (
    ChatTemplate("<|im_start|>", ("<|im_start|>", "<|im_end|>"), "<|im_start|>assistant\n"),
    ChatTemplate(
        "<|start_header_id|>",
        ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
    ),
)


class TurnMarkedTokenizer:
    """A Hugging Face tokenizer whose ``decode(ids, skip_special_tokens=True)`` of a multi-turn
    response keeps the chat template's turn markers and opens the text with the assistant
    header, so `referee.turns` finds every assistant turn, the first one included. Every other
    special token (padding, end of text) is still skipped.

    A response without a turn-start marker (a single turn) decodes exactly as before, and so
    does every call of a tokenizer whose template is not one `referee.turns` recognises.
    Everything else is the wrapped tokenizer's."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.template = next((t for t in TEMPLATES if t.start in vocab), None)
        specials = {i for i, token in tokenizer.added_tokens_decoder.items() if token.special}
        specials |= set(tokenizer.all_special_ids)
        markers = {vocab[m] for m in self.template.markers if m in vocab} if self.template else set()
        self.start_id = vocab[self.template.start] if self.template else None
        self.skipped_ids = specials - markers

    def __getattr__(self, name: str) -> Any:
        if name == "tokenizer":  # not set yet (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.tokenizer, name)

    def decode(self, token_ids: Iterable[int] | Any, skip_special_tokens: bool = False, **kwargs: Any) -> str:
        ids = [int(i) for i in token_ids]  # a list, a numpy array or a torch tensor
        if not skip_special_tokens or self.template is None or self.start_id not in ids:
            return str(self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens, **kwargs))
        kept = [i for i in ids if i not in self.skipped_ids]
        return self.template.assistant_header + str(
            self.tokenizer.decode(kept, skip_special_tokens=False, **kwargs)
        )

    def batch_decode(
        self, sequences: Sequence[Iterable[int]] | Any, skip_special_tokens: bool = False, **kwargs: Any
    ) -> list[str]:
        return [self.decode(ids, skip_special_tokens=skip_special_tokens, **kwargs) for ids in sequences]


class _TurnMarked:
    """verl's reward-loop manager, given a `TurnMarkedTokenizer` (verl passes the tokenizer
    positionally or by name: `load_reward_manager` uses keywords)."""

    def __init__(self, config: Any, tokenizer: Any, compute_score: Any, **kwargs: Any) -> None:
        super().__init__(config, TurnMarkedTokenizer(tokenizer), compute_score, **kwargs)  # type: ignore[call-arg]


class NaiveRewardManager(_TurnMarked, reward_loop.NaiveRewardManager):
    """verl's `naive` reward-loop manager (the default), turn markers kept."""


class DAPORewardManager(_TurnMarked, reward_loop.DAPORewardManager):
    """verl's `dapo` reward-loop manager (overlong penalty), turn markers kept."""


class GDPORewardManager(_TurnMarked, reward_loop.GDPORewardManager):
    """verl's `gdpo` reward-loop manager, turn markers kept."""


class RateLimitedRewardManager(_TurnMarked, reward_loop.RateLimitedRewardManager):
    """verl's `rate_limited` reward-loop manager, turn markers kept."""


class RemoteRewardManager(_TurnMarked, reward_loop.RemoteRewardManager):
    """verl's `remote` reward-loop manager (plain functions only), turn markers kept."""


# `reward.reward_manager.name` keeps the value it has with verl's own registry.
naive, dapo, gdpo = NaiveRewardManager, DAPORewardManager, GDPORewardManager
rate_limited, remote = RateLimitedRewardManager, RemoteRewardManager
