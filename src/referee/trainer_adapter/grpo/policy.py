"""A policy = a causal LM + its tokenizer; sampling and per-token log-probabilities.

Works with the bundled `TinyGPT` and with any Hugging Face causal LM (`load_hf_policy(path)`):
both are called as ``model(input_ids=, attention_mask=, position_ids=).logits``.
Prompts are left-padded and completions right-padded, so every completion starts at the same
column and positions are counted from each prompt's first real token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Policy:
    model: nn.Module
    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    pad_id: int
    eos_id: int


@dataclass
class Rollout:
    """Prompts (B, P) left-padded and completions (B, C) right-padded, with their masks."""

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor

    def select(self, rows: torch.Tensor) -> Rollout:
        return Rollout(
            self.prompt_ids[rows],
            self.prompt_mask[rows],
            self.completion_ids[rows],
            self.completion_mask[rows],
        )


def load_hf_policy(path: str | Path, **model_kwargs: Any) -> Policy:
    """Any local Hugging Face causal LM directory (no download: `local_files_only`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **model_kwargs)
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    return Policy(
        model=model,
        encode=lambda text: tokenizer.encode(text, add_special_tokens=False),
        decode=lambda ids: str(tokenizer.decode(ids, skip_special_tokens=True)),
        pad_id=int(pad),
        eos_id=int(eos),
    )


def left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s) :] = torch.tensor(s)
            mask[i, width - len(s) :] = 1
    return ids, mask


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(-1) - 1).clamp(min=0)


def _cut_at_eos(new: torch.Tensor, eos_id: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask = tokens up to and including the first EOS; what follows becomes padding."""
    is_eos = new == eos_id
    seen_before = (is_eos.cumsum(-1) - is_eos.long()) > 0
    mask = (~seen_before).long()
    return torch.where(mask.bool(), new, torch.full_like(new, pad_id)), mask


@torch.no_grad()
def sample(
    policy: Policy,
    prompts: list[str],
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    greedy: bool = False,
) -> Rollout:
    """Sample (or decode greedily) one completion per prompt. Uses the global torch RNG (seeded)."""
    model = policy.model
    prompt_ids, prompt_mask = left_pad([policy.encode(p) for p in prompts], policy.pad_id)
    generate = getattr(model, "generate", None)
    if callable(generate):  # a Hugging Face model: use its KV-cached generation
        out = generate(
            input_ids=prompt_ids,
            attention_mask=prompt_mask,
            do_sample=not greedy,
            temperature=temperature if not greedy else None,
            top_k=0 if not greedy else None,
            top_p=1.0 if not greedy else None,
            max_new_tokens=max_new_tokens,
            pad_token_id=policy.pad_id,
            eos_token_id=policy.eos_id,
        )
        new = out[:, prompt_ids.shape[1] :]
    else:  # the tiny model: recompute the whole (short) sequence each step
        ids, mask = prompt_ids, prompt_mask
        done = torch.zeros(len(prompts), dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits[:, -1]
            if greedy:
                nxt = logits.argmax(-1)
            else:
                nxt = torch.multinomial(F.softmax(logits.float() / temperature, -1), 1).squeeze(-1)
            nxt = torch.where(done, torch.full_like(nxt, policy.pad_id), nxt)
            ids = torch.cat([ids, nxt[:, None]], 1)
            mask = torch.cat([mask, (~done).long()[:, None]], 1)
            done = done | (nxt == policy.eos_id)
            if bool(done.all()):
                break
        new = ids[:, prompt_ids.shape[1] :]
    completion_ids, completion_mask = _cut_at_eos(new, policy.eos_id, policy.pad_id)
    return Rollout(prompt_ids, prompt_mask, completion_ids, completion_mask)


def completion_logprobs(model: nn.Module, rollout: Rollout, temperature: float = 1.0) -> torch.Tensor:
    """log p(completion token | prefix) for every completion position, shape (B, C)."""
    ids = torch.cat([rollout.prompt_ids, rollout.completion_ids], 1)
    mask = torch.cat([rollout.prompt_mask, rollout.completion_mask], 1)
    p = rollout.prompt_ids.shape[1]
    logits = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits
    logits = logits[:, p - 1 : -1].float() / temperature
    return torch.log_softmax(logits, -1).gather(-1, rollout.completion_ids[..., None]).squeeze(-1)


def decode_completions(policy: Policy, rollout: Rollout) -> list[str]:
    return [
        policy.decode([int(t) for t, m in zip(row, mask, strict=True) if m])
        for row, mask in zip(rollout.completion_ids.tolist(), rollout.completion_mask.tolist(), strict=True)
    ]


def merge_rollouts(parts: list[Rollout], pad_id: int) -> Rollout:
    """Concatenate rollouts of different widths (prompts re-left-padded, completions right-padded)."""
    p = max(r.prompt_ids.shape[1] for r in parts)
    c = max(r.completion_ids.shape[1] for r in parts)

    def pad(t: torch.Tensor, width: int, value: int, left: bool) -> torch.Tensor:
        extra = width - t.shape[1]
        return F.pad(t, (extra, 0) if left else (0, extra), value=value)

    return Rollout(
        torch.cat([pad(r.prompt_ids, p, pad_id, True) for r in parts]),
        torch.cat([pad(r.prompt_mask, p, 0, True) for r in parts]),
        torch.cat([pad(r.completion_ids, c, pad_id, False) for r in parts]),
        torch.cat([pad(r.completion_mask, c, 0, False) for r in parts]),
    )
