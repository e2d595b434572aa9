"""Fixtures of the trainer-adapter tests: a real Referee server on loopback and a fake scorer."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from referee.advantages import group_advantages
from referee.models import AdvantageConfig, GroupResult, GroupSpec, GroupsResponse, Verdict, VerdictStatus
from referee.service.background import BackgroundServer


class FakeScorer:
    """In-process `GroupScorer`: exact match after strip; responses equal to `error_on` get no verdict."""

    def __init__(self, error_on: str | None = None, error_every: int = 0) -> None:
        self.calls: list[list[GroupSpec]] = []
        self.error_on = error_on
        self.error_every = error_every  # every k-th response scored (counting across calls) gets no verdict
        self.seen = 0
        # The judgement of a response against its reference; exact match after strip by default.
        self.judge = lambda response, reference: float(response.strip() == str(reference))
        self.in_flight = 0
        self.max_in_flight = 0

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None, on_invalid: str = "reject"
    ) -> GroupsResponse:
        import asyncio

        self.calls.append(list(groups))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)  # let concurrent chunks overlap
        self.in_flight -= 1
        results = []
        for group in groups:
            verdicts = [self._judge(r, group.reference) for r in group.responses]
            rewards = [v.score for v in verdicts]
            config = advantage or AdvantageConfig()
            stats = group_advantages(rewards, config.scale, config.epsilon)
            advantages, zero = stats.advantages, stats.zero_variance
            valid = [r for r in rewards if r is not None]
            results.append(
                GroupResult(
                    verdicts=verdicts,
                    rewards=rewards,
                    advantages=advantages,
                    mean=sum(valid) / len(valid) if valid else None,
                    std=statistics.stdev(valid) if len(valid) > 1 else None,
                    zero_variance=zero,
                )
            )
        return GroupsResponse(groups=results)

    def _judge(self, response: str, reference: object) -> Verdict:
        self.seen += 1
        if response == self.error_on or (self.error_every and self.seen % self.error_every == 0):
            return Verdict(score=None, status=VerdictStatus.error, verifier="fake@1", reason="down")
        return Verdict(score=self.judge(response, reference), status=VerdictStatus.ok, verifier="fake@1")


@pytest.fixture
def fake_scorer() -> FakeScorer:
    return FakeScorer()


@pytest.fixture(scope="session")
def referee_url(server: BackgroundServer) -> str:
    """A real Referee service on loopback (the suite's shared server: uvicorn in a thread, no Docker)."""
    return server.url


def char_tokenizer(alphabet: str) -> Any:
    """A Hugging Face fast tokenizer over single characters, built locally (no download)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, **{ch: i + 2 for i, ch in enumerate(alphabet)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()  # characters back without spaces
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


@pytest.fixture(scope="session")
def tiny_hf_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT2LMHeadModel from a config plus its character tokenizer, saved to a folder."""
    pytest.importorskip("transformers")
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    tokenizer = char_tokenizer("0123456789+=")
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=32,
        n_embd=64,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    path = tmp_path_factory.mktemp("tiny-gpt2")
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
