"""Fixtures of the trainer-adapter tests: a tiny Hugging Face model for the trainers to train."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tokenizers import char_tokenizer


@pytest.fixture(scope="session")
def tiny_hf_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT2LMHeadModel from a config plus its character tokenizer, saved to a folder."""
    pytest.importorskip("transformers", reason="needs the `train` extra: pip install -e '.[train]'")
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
