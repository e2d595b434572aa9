"""A readable GRPO loop (cleanrl style): every step is visible in `train`.

One step:
1. sample `prompts_per_step` prompts and `group_size` completions each from the current policy
   (it is the "old" policy of this step); with `skip_solved_after=k`, prompts the service
   reports solved in each of their last k visits are redrawn (DAPO-style curriculum);
2. ask Referee for the verdicts, rewards and group-relative advantages (one grouped request);
   with dynamic sampling, groups with no spread are dropped and new prompts fill the batch;
3. `mu` gradient updates on the clipped objective with a k3 KL penalty to the reference policy;
4. every `ref_refresh_steps`, the reference becomes a copy of the current policy (R1-Zero);
5. metrics to JSONL; periodic greedy evaluation verified by the same service; checkpoints.
"""

from __future__ import annotations

import asyncio
import copy
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import torch
from tqdm import tqdm

from referee.advantages import group_advantages
from referee.grouping import VerifierSpec, prompt_fingerprint
from referee.models import AdvantageConfig, JSONObject
from referee.trainer_adapter.grpo.loss import Aggregation, grpo_loss
from referee.trainer_adapter.grpo.metrics import MetricsLog, plot_metrics, reward_time_share
from referee.trainer_adapter.grpo.policy import (
    Policy,
    Rollout,
    completion_logprobs,
    decode_completions,
    merge_rollouts,
    sample,
)
from referee.trainer_adapter.prompt_ids import as_prompt_id
from referee.trainer_adapter.rewarder import GroupRewarder, GroupRewards


@dataclass
class GRPOArgs:
    out: str = "runs/grpo"
    steps: int = 200
    prompts_per_step: int = 16
    group_size: int = 8  # G completions per prompt
    mu: int = 2  # gradient updates per sampled batch
    lr: float = 3e-4
    beta: float = 0.04  # KL coefficient; 0 disables the reference model
    epsilon: float = 0.2
    epsilon_high: float | None = None  # clip-higher (DAPO); None = symmetric
    aggregation: Aggregation = "grpo"
    advantage_scale: Literal["group", "none"] | None = None  # None: "none" for dr_grpo, else "group"
    ref_refresh_steps: int = 0  # 0 = the reference stays the initial policy
    dynamic_sampling: bool = False
    max_resample_rounds: int = 4
    # Curriculum: skip prompts every sample of which passed in each of their last k visits (the
    # service's per-prompt statistics, read once per step); None = off.
    skip_solved_after: int | None = None
    max_skip_redraws: int = 8  # redraw rounds per draw; then solved prompts fill the batch
    max_new_tokens: int = 5
    temperature: float = 1.0
    max_grad_norm: float = 1.0
    eval_every: int = 10
    checkpoint_every: int = 50
    seed: int = 0
    threads: int | None = None
    random_rewards: bool = False  # control: verdicts replaced by coin flips (evaluation still verified)
    resume: bool = False
    progress: bool = True


class Task(Protocol):
    """Prompts with references, and the verifier (and its options) that judges them."""

    @property
    def verifier(self) -> VerifierSpec: ...

    @property
    def options(self) -> JSONObject: ...

    def sample(self, rng: random.Random, n: int) -> list[tuple[str, Any]]: ...

    def eval_set(self) -> list[tuple[str, Any]]: ...

    # Optional: `prompt_id(prompt) -> str` names a training prompt in the service's statistics
    # (a dataset row id); a task without it gets a digest of the prompt text (`prompt_id_of`).


def prompt_id_of(task: Task, prompt: str) -> str:
    """The task's id for a training prompt, or a digest of its text; normalised as the rewarder
    sends it (`as_prompt_id`), so it compares equal to the ids the service reports back."""
    named = getattr(task, "prompt_id", None)
    found = as_prompt_id(named(prompt)) if callable(named) else None
    return found if found is not None else prompt_fingerprint(prompt)


@dataclass
class Batch:
    rollout: Rollout
    advantages: torch.Tensor  # (B,), NaN where no verdict
    sample_mask: torch.Tensor  # (B,) bool
    rewards: list[float]  # verifier rewards of every scored sample (also the dropped groups)
    groups_seen: int
    zero_variance: int
    no_verdict: int
    rounds: int
    reward_time_s: float
    skipped_solved: int = 0  # draws of solved prompts that were put back (skip_solved_after)
    solved_known: int = 0  # prompts the service reported solved at the start of the step


def _randomize(scored: GroupRewards, rng: random.Random, config: AdvantageConfig) -> GroupRewards:
    rewards, advantages, zero = [], [], []
    for mask in scored.mask:
        coin = [float(rng.random() < 0.5) if ok else None for ok in mask]
        # The service's own rule: the random-reward control normalises exactly as it does.
        stats = group_advantages(coin, config.scale, config.epsilon)
        rewards.append(coin)
        advantages.append(stats.advantages)
        zero.append(stats.zero_variance)
    return GroupRewards(rewards=rewards, advantages=advantages, mask=scored.mask, zero_variance=zero)


class GRPO:
    def __init__(self, args: GRPOArgs, policy: Policy, task: Task, rewarder: GroupRewarder) -> None:
        if args.skip_solved_after is not None and not 1 <= args.skip_solved_after <= 1000:
            raise ValueError("skip_solved_after must be between 1 and 1000 visits (or None: off)")
        self.args, self.policy, self.task, self.rewarder = args, policy, task, rewarder
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        if args.threads:
            torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        self.rng = random.Random(args.seed)  # prompts
        self.control_rng = random.Random(args.seed + 1)  # coin flips of the random-reward control
        scale = args.advantage_scale or ("none" if args.aggregation == "dr_grpo" else "group")
        self.advantage = AdvantageConfig(scale=scale, epsilon=rewarder.advantage.epsilon)
        rewarder.advantage = self.advantage
        self.model = policy.model
        self.ref = copy.deepcopy(self.model).eval().requires_grad_(False) if args.beta > 0 else None
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=args.lr, weight_decay=0.0)
        self.metrics = MetricsLog(self.out / "metrics.jsonl")
        self.ckpt = self.out / "checkpoint.pt"

    # --- rewards -----------------------------------------------------------------------------
    def _score(
        self,
        runner: asyncio.Runner,
        groups: list[list[str]],
        refs: list[Any],
        prompt_ids: list[str] | None = None,
    ) -> GroupRewards:
        coro = self.rewarder.score(
            groups, refs, verifier=self.task.verifier, options=self.task.options, prompt_ids=prompt_ids
        )
        return runner.run(coro)

    # --- prompts -----------------------------------------------------------------------------
    def draw(self, n: int, solved: set[str]) -> tuple[list[tuple[str, Any]], int]:
        """`n` training prompts, none of them in `solved` if `max_skip_redraws` rounds of redraws
        find enough others; returns them and how many solved draws were put back. When (nearly)
        everything is solved, the last round's solved prompts fill the batch: a step never
        waits on prompts that do not exist."""
        pairs = self.task.sample(self.rng, n)
        if not solved:
            return pairs, 0
        skipped = 0
        for _ in range(self.args.max_skip_redraws):
            fresh = [p for p in pairs if prompt_id_of(self.task, p[0]) not in solved]
            if len(fresh) == len(pairs):
                break
            skipped += len(pairs) - len(fresh)
            pairs = fresh + self.task.sample(self.rng, n - len(fresh))
        return pairs, skipped

    def collect(self, runner: asyncio.Runner) -> Batch:
        a, g = self.args, self.args.group_size
        parts: list[Rollout] = []
        advs: list[float] = []
        masks: list[bool] = []
        rewards: list[float] = []
        kept = seen = zero = no_verdict = rounds = skipped = 0
        reward_time = 0.0
        solved: set[str] = set()
        if a.skip_solved_after:
            t0 = time.perf_counter()
            solved = runner.run(self.rewarder.solved_prompts(a.skip_solved_after))
            reward_time += time.perf_counter() - t0
        while True:
            rounds += 1
            pairs, put_back = self.draw(a.prompts_per_step - kept, solved)
            skipped += put_back
            rollout = sample(
                self.policy,
                [p for p, _ in pairs for _ in range(g)],
                max_new_tokens=a.max_new_tokens,
                temperature=a.temperature,
            )
            texts = decode_completions(self.policy, rollout)
            t0 = time.perf_counter()
            scored = self._score(
                runner,
                [texts[i * g : (i + 1) * g] for i in range(len(pairs))],
                [r for _, r in pairs],
                [prompt_id_of(self.task, p) for p, _ in pairs],
            )
            reward_time += time.perf_counter() - t0
            rewards += [r for r in scored.flat_rewards() if r is not None]
            no_verdict += sum(not m for m in scored.flat_mask())
            if a.random_rewards:
                scored = _randomize(scored, self.control_rng, self.advantage)
            rows: list[int] = []
            for i in range(len(pairs)):
                seen += 1
                zero += scored.zero_variance[i]
                if a.dynamic_sampling and scored.zero_variance[i]:
                    continue
                rows += range(i * g, (i + 1) * g)
                advs += [float("nan") if x is None else x for x in scored.advantages[i]]
                masks += scored.mask[i]
                kept += 1
            if rows:
                parts.append(rollout.select(torch.tensor(rows)))
            if not a.dynamic_sampling or kept >= a.prompts_per_step or rounds > a.max_resample_rounds:
                break
        return Batch(
            rollout=merge_rollouts(parts, self.policy.pad_id)
            if parts
            else rollout.select(torch.tensor([], dtype=torch.long)),
            advantages=torch.tensor(advs, dtype=torch.float32),
            sample_mask=torch.tensor(masks, dtype=torch.bool),
            rewards=rewards,
            groups_seen=seen,
            zero_variance=zero,
            no_verdict=no_verdict,
            rounds=rounds,
            reward_time_s=reward_time,
            skipped_solved=skipped,
            solved_known=len(solved),
        )

    # --- one update --------------------------------------------------------------------------
    def update(self, batch: Batch) -> dict[str, float]:
        a = self.args
        if batch.advantages.numel() == 0:  # dynamic sampling found no signal at all
            return {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "clip_low": 0.0, "clip_high": 0.0}
        with torch.no_grad():
            old_logp = completion_logprobs(self.model, batch.rollout, a.temperature)
            ref_logp = completion_logprobs(self.ref, batch.rollout, a.temperature) if self.ref else None
        stats: dict[str, float] = {}
        for _ in range(a.mu):
            logp = completion_logprobs(self.model, batch.rollout, a.temperature)
            out = grpo_loss(
                logp,
                old_logp,
                batch.advantages,
                batch.rollout.completion_mask,
                ref_logp=ref_logp,
                sample_mask=batch.sample_mask,
                epsilon=a.epsilon,
                epsilon_high=a.epsilon_high,
                beta=a.beta,
                aggregation=a.aggregation,
                max_completion_length=a.max_new_tokens,
            )
            self.opt.zero_grad(set_to_none=True)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), a.max_grad_norm)
            self.opt.step()
            # Report the first inner step's KL and the last one's clipping (clipping only starts
            # once the policy has moved away from the old one).
            stats.setdefault("kl", out.kl)
            stats.update(
                loss=float(out.loss.detach()),
                clip_frac=out.clip_frac,
                clip_low=out.clip_low,
                clip_high=out.clip_high,
            )
        return stats

    # --- evaluation --------------------------------------------------------------------------
    def evaluate(self, runner: asyncio.Runner) -> dict[str, float]:
        t0 = time.perf_counter()
        pairs = self.task.eval_set()
        texts: list[str] = []
        for i in range(0, len(pairs), 256):
            chunk = [p for p, _ in pairs[i : i + 256]]
            rollout = sample(self.policy, chunk, max_new_tokens=self.args.max_new_tokens, greedy=True)
            texts += decode_completions(self.policy, rollout)
        # No prompt ids: one greedy answer per held-out prompt is not a GRPO visit, and would
        # count as a zero-variance visit in the service's statistics.
        scored = self._score(runner, [[t] for t in texts], [r for _, r in pairs])
        valid = [r for r in scored.flat_rewards() if r is not None]
        return {
            "accuracy": sum(valid) / len(valid) if valid else 0.0,
            "eval_time_s": time.perf_counter() - t0,
        }

    # --- checkpoints -------------------------------------------------------------------------
    def save(self, step: int) -> None:
        state = {
            "step": step,
            "model": self.model.state_dict(),
            "ref": self.ref.state_dict() if self.ref else None,
            "opt": self.opt.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "rng": self.rng.getstate(),
            "control_rng": self.control_rng.getstate(),
            "args": asdict(self.args),
        }
        tmp = self.ckpt.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, self.ckpt)  # atomic: a crash mid-save leaves the previous checkpoint

    def load(self) -> int:
        # weights_only=False: the file holds Python RNG states; it is our own checkpoint.
        state = torch.load(self.ckpt, weights_only=False)
        self.model.load_state_dict(state["model"])
        if self.ref is not None and state["ref"] is not None:
            self.ref.load_state_dict(state["ref"])
        self.opt.load_state_dict(state["opt"])
        torch.set_rng_state(state["torch_rng"])
        self.rng.setstate(state["rng"])
        self.control_rng.setstate(state["control_rng"])
        return int(state["step"])

    # --- the loop ----------------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        a = self.args
        self.model.eval()  # no dropout: it would make the ratio and the KL noisy
        start = 0
        if a.resume and self.ckpt.exists():
            start = self.load()
            self.metrics.truncate_after(start)
        else:
            self.metrics.reset()
        with asyncio.Runner() as runner:
            if start == 0 and a.eval_every:
                self.metrics.write({"step": 0, **self.evaluate(runner)})
            bar = tqdm(range(start + 1, a.steps + 1), disable=not a.progress, desc="GRPO", dynamic_ncols=True)
            for step in bar:
                t0 = time.perf_counter()
                batch = self.collect(runner)
                stats = self.update(batch)
                if self.ref is not None and a.ref_refresh_steps and step % a.ref_refresh_steps == 0:
                    self.ref.load_state_dict(self.model.state_dict())
                n = len(batch.rewards)
                record: dict[str, Any] = {
                    "step": step,
                    "reward": sum(batch.rewards) / n if n else None,
                    **stats,
                    "zero_variance_frac": batch.zero_variance / max(batch.groups_seen, 1),
                    "no_verdict_frac": batch.no_verdict / max(batch.groups_seen * a.group_size, 1),
                    "groups_used": int(batch.advantages.numel() // a.group_size),
                    "sample_rounds": batch.rounds,
                    "completion_len": float(batch.rollout.completion_mask.sum(-1).float().mean())
                    if batch.advantages.numel()
                    else 0.0,
                    "step_time_s": time.perf_counter() - t0,
                    "reward_time_s": batch.reward_time_s,
                }
                if a.skip_solved_after:
                    record.update(skipped_solved=batch.skipped_solved, solved_known=batch.solved_known)
                if a.eval_every and (step % a.eval_every == 0 or step == a.steps):
                    record.update(self.evaluate(runner))
                    bar.set_postfix(acc=f"{record['accuracy']:.2f}", reward=f"{record['reward'] or 0:.2f}")
                self.metrics.write(record)
                if a.checkpoint_every and (step % a.checkpoint_every == 0 or step == a.steps):
                    self.save(step)
            runner.run(self.rewarder.aclose())
        return self.summary()

    def summary(self) -> dict[str, Any]:
        records = self.metrics.read()
        by_step = {str(r["step"]): r["accuracy"] for r in records if "accuracy" in r}
        acc = list(by_step.values())
        png = plot_metrics(records, self.out / "curves.png", title=f"GRPO · {self.out.name}")
        return {
            "initial_accuracy": acc[0] if acc else None,
            "final_accuracy": acc[-1] if acc else None,
            # Every evaluation, keyed by step (a JSON object's keys are strings).
            "accuracy_by_step": by_step,
            "reward_time_share": reward_time_share([r for r in records if r["step"] > 0]),
            "grpo_seconds": sum(r.get("step_time_s", 0.0) for r in records),
            "metrics": str(self.metrics.path),
            "png": str(png),
        }
