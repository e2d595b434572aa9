"""A tiny GPT (≈0.4M parameters) and a character tokenizer, for the demo and the tests.

It takes the same keyword arguments as a Hugging Face causal LM (`input_ids`, `attention_mask`,
`position_ids`) and returns an object with `.logits`, so the GRPO loop treats both alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class CharTokenizer:
    """Characters of a fixed alphabet; id 0 is padding, id 1 end-of-sequence."""

    pad_id = 0
    eos_id = 1

    def __init__(self, alphabet: str) -> None:
        if len(set(alphabet)) != len(alphabet):
            raise ValueError("alphabet has repeated characters")
        self.alphabet = alphabet
        self._ids = {ch: i + 2 for i, ch in enumerate(alphabet)}

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet) + 2

    def encode(self, text: str) -> list[int]:
        return [self._ids[ch] for ch in text]

    def decode(self, ids: list[int]) -> str:
        """Text up to the first end-of-sequence; padding is skipped."""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i >= 2:
                out.append(self.alphabet[i - 2])
        return "".join(out)


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    d_model: int = 128
    n_layer: int = 2
    n_head: int = 4
    max_len: int = 32


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model)
        )

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """Pre-LayerNorm decoder with learned positions; no dropout (dropout makes the GRPO ratio noisy)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> SimpleNamespace:
        _, t = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if position_ids is None:
            position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        keep = attention_mask.bool()
        causal = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).tril()
        # A padded query would attend to nothing (a NaN row); letting it see itself keeps it finite.
        eye = torch.eye(t, dtype=torch.bool, device=input_ids.device)
        mask = (causal & keep[:, None, :]) | eye
        x = self.tok_emb(input_ids) + self.pos_emb(position_ids)
        for block in self.blocks:
            x = block(x, mask[:, None, :, :])
        return SimpleNamespace(logits=self.head(self.ln_f(x)))
