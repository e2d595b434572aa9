"""`referee train ...`: the GRPO demo (torch is imported only when a command runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="GRPO demo and training loop (needs the `train` extra).", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """GRPO demo and training loop (needs the `train` extra)."""
    # A callback keeps `demo` a sub-command even while it is the only one.


@app.command()
def demo(
    url: Annotated[
        str | None, typer.Option(help="Referee service URL; by default one is started in-process.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder.", show_default="./runs/<run-name>/")
    ] = None,
    run_name: Annotated[
        str | None,
        typer.Option(help="Name of the run folder.", show_default="demo-s<seed> or demo-random-s<seed>"),
    ] = None,
    steps: Annotated[int, typer.Option(min=1, help="GRPO steps.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of warm-up, sampling and prompts.")] = 0,
    random_rewards: Annotated[
        bool, typer.Option("--random-rewards", help="Control run: rewards are coin flips, not verdicts.")
    ] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from <out>/checkpoint.pt.")] = False,
    warmup_cache: Annotated[
        Path | None, typer.Option(help="Reuse (or save) the warmed-up model in this file.")
    ] = None,
    threads: Annotated[
        int, typer.Option(min=1, help="torch threads (results are reproducible per count).")
    ] = 1,
    skip_solved_after: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1000,
            help="Curriculum: skip prompts the service reports solved in each of their last K visits.",
        ),
    ] = None,
) -> None:
    """Tiny GPT learns reversed-digit 2-digit addition from Referee's `exact` verdicts."""
    try:
        from referee.trainer_adapter.grpo.demo import run_demo
        from referee.trainer_adapter.grpo.metrics import headline
    except ImportError as exc:  # torch/matplotlib/tqdm are an optional extra
        raise typer.BadParameter(f"{exc}; install the extra: pip install 'referee[train]'") from exc

    name = run_name or (f"demo-random-s{seed}" if random_rewards else f"demo-s{seed}")
    folder = out or Path("runs") / name
    summary = run_demo(
        url=url,
        out=folder,
        seed=seed,
        random_rewards=random_rewards,
        steps=steps,
        resume=resume,
        threads=threads,
        warmup_cache=warmup_cache,
        skip_solved_after=skip_solved_after,
    )
    typer.echo(json.dumps(summary, indent=2))
    typer.echo(f"{headline(summary)}; curves: {summary['png']}")
