"""Hugging Face fast tokenizers over single characters, built locally (no download): what the
trainer tests (TRL, verl, OpenRLHF) tokenise with. Needs the `train` extra (tokenizers,
transformers), imported when a tokenizer is made so that importing this module needs nothing."""

from __future__ import annotations

import string
from typing import Any

PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "
PAD, EOS = "<|endoftext|>", "<|im_end|>"  # Qwen's, as verl's GSM8K recipes use


def char_tokenizer(alphabet: str, pad: str = "<pad>", eos: str = "<eos>") -> Any:
    """One token per character of `alphabet`, `pad` = 0 and `eos` = 1; decoded without spaces."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {pad: 0, eos: 1, **{ch: i + 2 for i, ch in enumerate(alphabet)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=pad))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()  # characters back without spaces
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, eos_token=eos)


def printable_tokenizer() -> Any:
    """Printable ASCII with Qwen's PAD and EOS, the chat-model shape the trainers' recipes expect."""
    return char_tokenizer(PRINTABLE, PAD, EOS)


def qwen_tokenizer() -> Any:
    """Printable ASCII and newlines with Qwen3's chat template (tools rendered in the system
    prompt, `<tool_call>`/`<tool_response>` turns): what TRL's and verl's tool loops recognise."""
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer = char_tokenizer(PRINTABLE + "\n", PAD, EOS)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tokenizer.chat_template = qwen3_chat_template
    tokenizer.padding_side = "left"
    return tokenizer
