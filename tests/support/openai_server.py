"""A real OpenAI-compatible chat-completions server for the judge tests (issue 29):
`transformers serve` over a tiny chat model built here, offline.

Nothing can be downloaded on the project's machines, so the model is made at test time: a
random-init two-layer Llama (hidden size 32, ~25k parameters) with a character tokenizer
(tests/support/tokenizers.py) and a ChatML chat template, saved with `save_pretrained` into a
temporary directory and served from that path (HF_HUB_OFFLINE=1). Its answers are nonsense, so
what tests can check is the protocol (non-streaming `/v1/chat/completions` with `usage`),
concurrency, `max_tokens`, timeouts, restarts and caching, never a grade. Two choices make it
predictable:
- the weights come from a fixed seed, and greedy decoding (`temperature` 0) gives the same
  answer to the same messages, every run;
- the special tokens (end of turn, padding, `<|im_start|>`) are never generated (their output
  logits are masked by the generation config's `suppress_tokens`), so every answer runs to
  `max_tokens` with `finish_reason` "length": a test sizes a reply, or a slow one, exactly.

Needs the `train` extra (torch, transformers) and `openai`, which `transformers serve` imports
for its response types (in the `dev` extra); the fixtures skip, saying so, where they are missing.
Where they are installed, a server that does not start is an error with its log, not a skip.

Fixtures (registered for the whole suite by tests/conftest.py's `pytest_plugins`):
- `openai_server`: one server for the session; `.base_url` (".../v1"), `.model`, `.process`,
  `.stop()` and `.start()` (same port) for outage tests, which must start it again;
- `tiny_chat_model`: the model's directory, for a test that needs a server of its own
  (`with serving(tiny_chat_model, tmp_path / "serve.log") as server:`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.service.background import free_port
from tests.timing import within

TRAIN_EXTRA = "needs the `train` extra (torch, transformers): pip install -e '.[train]'"
OPENAI = "`transformers serve` needs `openai` (the `dev` extra): pip install -e '.[dev]'"
IM_START = "<|im_start|>"
# ChatML, as Qwen's chat models write it.
CHATML = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# A start imports torch twice (the server, then the process it spawns for the model): ~10 s on
# a quiet 2-core machine, 17-40 s on a loaded one; 120 s (scaled by REFEREE_TEST_TIME_FACTOR)
# before the fixture gives up and fails with the server's log.
READY_WITHIN_S = 120.0


def require_serving() -> None:
    """Skip the calling test (or module) where what the server needs is not installed."""
    pytest.importorskip("torch", reason=TRAIN_EXTRA)
    pytest.importorskip("transformers", reason=TRAIN_EXTRA)
    pytest.importorskip("openai", reason=OPENAI)


def _tiny_chat_model(seed: int) -> tuple[Any, Any]:
    """(model, tokenizer): 2 layers, hidden size 32, a character tokenizer with ChatML."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.support.tokenizers import EOS, PAD, PRINTABLE, char_tokenizer

    tokenizer = char_tokenizer(PRINTABLE + "\n", PAD, EOS)  # "\n": the template's line breaks
    tokenizer.add_special_tokens({"additional_special_tokens": [IM_START]})
    tokenizer.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,  # long answers
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )  # fmt: skip
    with torch.random.fork_rng():  # the test process's own random state is left as it was
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model, tokenizer


def _save(model: Any, tokenizer: Any, directory: Path, suppress: list[int]) -> Path:
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, suppress_tokens=suppress
    )
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_tiny_chat_model(directory: Path, seed: int = 0) -> Path:
    """Save a tiny random-init chat model and its tokenizer into `directory` (~1 s once torch
    is imported); the same `seed` gives the same weights, so the same answers. Its special
    tokens are suppressed, end of text included: every answer runs to `max_tokens`."""
    model, tokenizer = _tiny_chat_model(seed)
    return _save(model, tokenizer, directory, sorted(tokenizer.all_special_ids))


def build_tiny_verdict_model(directory: Path, reply: str) -> Path:
    """A tiny chat model whose every answer is `reply`, then the end of text: a judge that
    always gives one verdict (a real server's replies that parse). No character may repeat in
    `reply`, nor be a line break: it is a bigram chain. The attention and MLP layers write
    nothing (zero output projections), so the last hidden state is the current token's
    embedding; those of the chain's tokens are orthogonal, and each one's row of the output
    layer points at the next one's embedding: greedy decoding walks the chain from the line
    break that ends the prompt (`<|im_start|>assistant\n`)."""
    import torch

    assert len(set(reply)) == len(reply) and "\n" not in reply, reply
    model, tokenizer = _tiny_chat_model(seed=0)
    chain = [tokenizer.convert_tokens_to_ids(ch) for ch in ["\n", *reply]] + [tokenizer.eos_token_id]
    hidden = model.config.hidden_size
    assert len(chain) <= hidden, "the chain's embeddings must be orthogonal"
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embed, head = model.model.embed_tokens.weight, model.lm_head.weight
        head.zero_()
        for i, token in enumerate(chain):
            embed[token] = torch.nn.functional.one_hot(torch.tensor(i), hidden).float()
        for current, following in itertools.pairwise(chain):
            head[following] = 10.0 * embed[current]
    return _save(
        model, tokenizer, directory, [t for t in tokenizer.all_special_ids if t != tokenizer.eos_token_id]
    )


class OpenAIServer:
    """`transformers serve` over the model at `model_dir`, on a free loopback port, in a process
    group of its own (the server spawns a process for the model: stopping kills both). The
    server's output goes to `log_path`; `log_tail()` is what a failure message quotes.
    `process` is the running server's, None while it is stopped."""

    def __init__(self, model_dir: Path, log_path: Path, ready_within_s: float = READY_WITHIN_S) -> None:
        self.model = str(model_dir)  # what the server calls the model it serves: its path
        self.log_path = log_path
        self.ready_within_s = ready_within_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.url}/v1"
        self.process: subprocess.Popen[bytes] | None = None
        self.started_in_s: float | None = None  # the last start's time to ready

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        # The `transformers` console script's own entry point, with this interpreter.
        return [
            sys.executable, "-m", "transformers.cli.transformers", "serve", self.model,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--device", "cpu", "--dtype", "float32", "--default-seed", "0",
        ]  # fmt: skip

    def start(self) -> None:
        """Start the server (on the same port as before, if it ran) and wait until it answers
        `/v1/models`; RuntimeError with its log if it exits or is not ready in time. A no-op
        while it runs."""
        if self.running:
            return
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",  # the model is a local path: never ask the hub
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
        }
        began = time.monotonic()
        with self.log_path.open("ab") as log:
            log.write(f"--- starting: {' '.join(self.command())}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command(), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = began + within(self.ready_within_s)
        while not self._answers():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"transformers serve exited with {self.process.returncode} before it was ready:\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"transformers serve not ready after {within(self.ready_within_s):g} s:\n"
                    + self.log_tail()
                )
            time.sleep(0.1)
        self.started_in_s = time.monotonic() - began

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self, *, abrupt: bool = False) -> None:
        """Stop the server and its model's process: SIGTERM (uvicorn's graceful end), SIGKILL
        after 10 s; `abrupt`: SIGKILL at once, as a crash (requests in flight are cut)."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            self._signal_group(process.pid, signal.SIGKILL if abrupt else signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._signal_group(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        # The model's process, if the server left it behind.
        self._signal_group(process.pid, signal.SIGKILL)

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # the group has ended
            os.killpg(pgid, sig)

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return "(no log)"


@contextlib.contextmanager
def serving(model_dir: Path, log_path: Path) -> Iterator[OpenAIServer]:
    """A started server over `model_dir`, stopped on the way out."""
    server = OpenAIServer(model_dir, log_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tiny_chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny chat model's directory, built once per session."""
    require_serving()
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat-model"))


@pytest.fixture(scope="session")
def openai_server(tiny_chat_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAIServer]:
    """One `transformers serve` for the session. A test that stops it starts it again."""
    with serving(tiny_chat_model, tmp_path_factory.mktemp("openai-server") / "serve.log") as server:
        yield server
