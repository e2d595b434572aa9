"""The demo's verifiable task: two-digit addition, answer digits reversed.

Prompt ``"47+85="``, reference ``"231"`` (132 written least-significant digit first, which a
small left-to-right model learns far faster: each digit depends only on digits already seen).
The Referee ``exact`` verifier judges it over HTTP.

The model is first briefly trained with supervision on *biased* targets: a quarter correct, half
``a+b+1`` and the rest other near misses. It learns to add but prefers a wrong answer, so the
initial verified accuracy is low while the right answer stays within sampling reach. GRPO then
has to find, from the verifier's verdicts alone, which of the answers it knows is rewarded.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from tqdm import tqdm

from referee.models import JSONObject
from referee.trainer_adapter.grpo.policy import Policy
from referee.trainer_adapter.grpo.tiny_gpt import CharTokenizer, GPTConfig, TinyGPT

ALPHABET = "0123456789+="


def reversed_sum(a: int, b: int) -> str:
    return str(a + b)[::-1]


@dataclass
class AdditionTask:
    """Pairs (a, b) with 10 <= a, b <= 99, split once (fixed seed) into train and held-out."""

    n_eval: int = 256
    split_seed: int = 1234
    verifier: str = "exact"
    options: JSONObject = field(default_factory=lambda: {"strip": True})
    max_new_tokens: int = 5  # three digits and EOS, plus one spare

    def __post_init__(self) -> None:
        pairs = [(a, b) for a in range(10, 100) for b in range(10, 100)]
        random.Random(self.split_seed).shuffle(pairs)
        self.eval_pairs = pairs[: self.n_eval]
        self.train_pairs = pairs[self.n_eval :]

    @staticmethod
    def prompt(a: int, b: int) -> str:
        return f"{a}+{b}="

    @staticmethod
    def prompt_id(prompt: str) -> str:
        """The prompt's id in the service's statistics: "addition:47+85" for "47+85="."""
        return "addition:" + prompt.removesuffix("=")

    def sample(self, rng: random.Random, n: int) -> list[tuple[str, Any]]:
        """n training (prompt, reference) pairs."""
        return [(self.prompt(a, b), reversed_sum(a, b)) for a, b in rng.choices(self.train_pairs, k=n)]

    def eval_set(self) -> list[tuple[str, Any]]:
        return [(self.prompt(a, b), reversed_sum(a, b)) for a, b in self.eval_pairs]


def biased_target(a: int, b: int, rng: random.Random) -> str:
    """25% the right answer, 50% a+b+1, 25% another near miss."""
    u = rng.random()
    if u < 0.25:
        total = a + b
    elif u < 0.75:
        total = a + b + 1
    else:
        total = a + b + rng.choice((-1, 10, -10, 2))
    return str(total)[::-1]


def tiny_policy(seed: int) -> Policy:
    """The bundled ≈0.4M-parameter GPT with the demo's character tokenizer."""
    torch.manual_seed(seed)
    tokenizer = CharTokenizer(ALPHABET)
    model = TinyGPT(GPTConfig(vocab_size=tokenizer.vocab_size))
    return Policy(
        model=model,
        encode=tokenizer.encode,
        decode=tokenizer.decode,
        pad_id=tokenizer.pad_id,
        eos_id=tokenizer.eos_id,
    )


def supervised_warmup(
    policy: Policy,
    task: AdditionTask,
    *,
    steps: int = 700,
    batch: int = 128,
    lr: float = 1.5e-3,
    seed: int = 0,
    progress: bool = False,
) -> float:
    """Teacher-forced training on biased targets; returns the last batch's loss."""
    rng = random.Random(seed)
    model = policy.model
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    # Cosine decay to 10%: a short warm-up still converges to the (biased) target distribution.
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: 0.1 + 0.45 * (1 + math.cos(math.pi * min(i / max(steps, 1), 1.0)))
    )
    loss = torch.tensor(0.0)
    for _ in tqdm(range(steps), desc="warm-up", disable=not progress, dynamic_ncols=True):
        pairs = rng.choices(task.train_pairs, k=batch)
        seqs = [
            [*policy.encode(task.prompt(a, b) + biased_target(a, b, rng)), policy.eos_id] for a, b in pairs
        ]
        width = max(len(s) for s in seqs)
        ids = torch.full((batch, width), policy.pad_id, dtype=torch.long)
        targets = torch.full((batch, width), -100, dtype=torch.long)
        for i, (s, (a, b)) in enumerate(zip(seqs, pairs, strict=True)):
            ids[i, : len(s)] = torch.tensor(s)
            start = len(task.prompt(a, b))  # learn only the answer, not the prompt
            targets[i, start - 1 : len(s) - 1] = torch.tensor(s[start:])
        mask = (ids != policy.pad_id).long()
        logits = model(input_ids=ids, attention_mask=mask).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    return float(loss.detach())
