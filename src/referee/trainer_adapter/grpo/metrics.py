"""JSONL metrics (one object per step, appended and flushed) and the PNG of the curves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MetricsLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def reset(self) -> None:
        self.path.write_text("")

    def truncate_after(self, step: int) -> None:
        """On resume: drop records of steps after the checkpoint, so a resumed run's file is whole."""
        kept = [r for r in self.read() if int(r.get("step", 0)) <= step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))

    def write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]


def headline(summary: dict[str, Any]) -> str:
    """The run's figures in one line, as `referee train demo` prints them and the docs quote
    the recorded run (docs/grpo_demo/record.json): accuracy at the first, second and last evaluation."""
    by_step: dict[str, float] = summary["accuracy_by_step"]
    steps = list(by_step)
    figures = [f"{by_step[steps[0]]:.2f}"]
    if len(steps) > 2:
        figures.append(f"{by_step[steps[1]]:.2f} after {steps[1]} steps")
    if len(steps) > 1:
        figures.append(f"{by_step[steps[-1]]:.2f} at step {steps[-1]}")
    return (
        f"greedy verified accuracy {' -> '.join(figures)}; "
        f"reward wait {summary['reward_time_share']:.0%} of step time"
    )


def reward_time_share(records: list[dict[str, Any]]) -> float:
    """Share of GRPO step time spent waiting for the reward service."""
    step = sum(r.get("step_time_s", 0.0) for r in records)
    reward = sum(r.get("reward_time_s", 0.0) for r in records)
    return reward / step if step > 0 else 0.0


def _series(records: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    pairs = [(r["step"], r[key]) for r in records if key in r and r[key] is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def plot_metrics(records: list[dict[str, Any]], png: Path, title: str = "GRPO") -> Path:
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    ax = axes[0][0]
    ax.plot(*_series(records, "accuracy"), marker="o", label="greedy verified accuracy (held-out)")
    ax.plot(*_series(records, "reward"), alpha=0.6, label="mean reward (sampled)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("accuracy / reward")
    ax.legend(fontsize=8)
    ax = axes[0][1]
    ax.plot(*_series(records, "kl"))
    ax.set_title("KL to reference (k3)")
    ax = axes[1][0]
    ax.plot(*_series(records, "clip_frac"), label="clip fraction")
    ax.plot(*_series(records, "zero_variance_frac"), label="zero-variance groups")
    ax.set_title("clipping / zero variance")
    ax.legend(fontsize=8)
    ax = axes[1][1]
    ax.plot(*_series(records, "step_time_s"), label="step")
    ax.plot(*_series(records, "reward_time_s"), label="reward call")
    ax.set_title(f"seconds (reward share {reward_time_share(records):.1%})")
    ax.legend(fontsize=8)
    for a in axes.flat:
        a.set_xlabel("GRPO step")
    fig.suptitle(title)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
