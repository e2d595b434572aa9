"""`referee train demo`: warm up the tiny GPT on biased targets, then GRPO against Referee."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from referee.trainer_adapter.grpo.demo_task import AdditionTask, supervised_warmup, tiny_policy
from referee.trainer_adapter.grpo.loop import GRPO, GRPOArgs
from referee.trainer_adapter.grpo.policy import Policy
from referee.trainer_adapter.rewarder import GroupRewarder

# The measured setup (see the project's notes): 16 prompts x 8 completions, mu=2, lr 3e-4,
# beta 0.04 against the warmed-up model, epsilon 0.2, per-sequence loss, group-std advantages.
DEMO_ARGS = GRPOArgs(
    steps=200,
    prompts_per_step=16,
    group_size=8,
    mu=2,
    lr=3e-4,
    beta=0.04,
    epsilon=0.2,
    aggregation="grpo",
    max_new_tokens=5,
    eval_every=10,
    checkpoint_every=50,
    # One thread: this model is too small to gain from two, and with two a busy second core
    # (another process, the reward worker) slowed every step by an order of magnitude.
    threads=1,
)
WARMUP_STEPS = 700


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def _service(url: str | None, startup_timeout_s: float = 120.0) -> Iterator[str]:
    """The given service, or `referee serve` started as a child process on a free loopback port.

    A process, not a thread: the trainer side reaches the service only over HTTP, exactly as
    a real training job does, and the trainer's GIL never slows the service down.
    """
    if url:
        yield url
        return
    port = _free_port()
    # The demo needs only `exact`: no Docker sandbox, and one worker leaves a core to training.
    env = {**os.environ, "REFEREE_SANDBOX": "false", "REFEREE_WORKERS": "1", "REFEREE_LOG_LEVEL": "warning"}
    cmd = [sys.executable, "-m", "referee", "serve", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"`referee serve` exited with code {process.returncode}")
            try:
                if httpx.get(f"{base}/readyz", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the Referee service did not become ready in time")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _warm_up(
    policy: Policy, task: AdditionTask, seed: int, steps: int, cache: str | Path | None, progress: bool
) -> None:
    import torch

    key = {"seed": seed, "steps": steps}
    if cache is not None and Path(cache).exists():
        saved = torch.load(cache, weights_only=True)
        if saved.get("key") == key:
            policy.model.load_state_dict(saved["model"])
            return
    supervised_warmup(policy, task, steps=steps, seed=seed, progress=progress)
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"key": key, "model": policy.model.state_dict()}, cache)


def run_demo(
    *,
    url: str | None = None,
    out: str | Path = "runs/demo",
    seed: int = 0,
    random_rewards: bool = False,
    warmup_steps: int = WARMUP_STEPS,
    warmup_cache: str | Path | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Run the demo; `overrides` replace fields of `DEMO_ARGS` (e.g. steps=80, progress=False,
    skip_solved_after=3).

    `warmup_cache`: a file holding the warmed-up weights; loaded when it was made with the same
    seed and warm-up steps, else written (a control run then starts from the very same model).
    """
    args = replace(DEMO_ARGS, out=str(out), seed=seed, random_rewards=random_rewards, **overrides)
    task = AdditionTask()
    policy = tiny_policy(seed)
    started = time.perf_counter()
    resuming = args.resume and (Path(out) / "checkpoint.pt").exists()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if not resuming:  # a resumed run loads the warmed-up (and trained) weights instead
        _warm_up(policy, task, seed, warmup_steps, warmup_cache, args.progress)
    warmup_s = time.perf_counter() - started
    with _service(url) as service_url:
        rewarder = GroupRewarder(service_url, verifier=task.verifier, options=task.options)
        summary = GRPO(args, policy, task, rewarder).train()
    summary.update(warmup_seconds=warmup_s, total_seconds=time.perf_counter() - started, steps=args.steps)
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
