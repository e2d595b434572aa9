"""`referee audit`: verifier audits and code test-suite strength, with a progress bar."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from referee.audit.backend import ScoreGroups, in_process, over_http
from referee.audit.data import component_names, load_labelled, parse_verifier
from referee.audit.judging import cost_line
from referee.audit.report import write_reports
from referee.audit.run import run_audit
from referee.audit.strength import MAX_MUTANTS, MAX_SURVIVAL, load_problems, run_strength
from referee.client import AsyncClient
from referee.sandbox import SandboxUnavailable
from referee.settings import Settings

app = typer.Typer(
    help="Audit a verifier on labelled rows, or the strength of code test suites.", no_args_is_help=True
)

UrlOption = Annotated[
    str | None,
    typer.Option(
        help="Score through this running service (needed for registered types, name@N); default: in-process."
    ),
]
OutOption = Annotated[Path, typer.Option("--out", help="Folder for the JSON, Markdown and HTML reports.")]


@asynccontextmanager
async def _backend(
    url: str | None, api_key: str | None, *, sandbox: bool, workers: int
) -> AsyncIterator[ScoreGroups]:
    if url:
        async with AsyncClient(url, api_key=api_key, timeout=600) as client:
            yield over_http(client)
        return
    async with in_process(Settings(workers=workers, sandbox=sandbox)) as score:
        yield score


def _bar(desc: str) -> tuple[Callable[[int, int], None], Any]:
    # Imported here: the service (and its image) loads this module's commands without tqdm,
    # which comes with the `train` extra.
    from tqdm import tqdm

    bar = tqdm(total=0, desc=desc, unit="verdict", dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return progress, bar


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    try:
        asyncio.run(main())
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from exc


@app.command("run")
def run_command(
    verifier: Annotated[
        str,
        typer.Argument(
            help="A name (math, logic.{task} filled from each row, name@N) or weights: 'math + 0.1*format.think_answer'."
        ),
    ],
    file: Annotated[Path, typer.Argument(help="Labelled JSONL: response, reference, expected, category?")],
    out: OutOption = Path("audit-report"),
    url: UrlOption = None,
    api_key: Annotated[str | None, typer.Option(envvar="REFEREE_API_KEY")] = None,
    probes: Annotated[bool, typer.Option(help="Run the probe batteries.")] = True,
    workers: Annotated[int, typer.Option(help="Worker processes for in-process scoring.")] = 2,
    title: Annotated[str | None, typer.Option(help="Report title.")] = None,
) -> None:
    """Accuracy, confusion, false positives, latency and the probe battery of a verifier; for a
    judge verifier (judge_equivalence, judge_rubric, judge_label: endpoints from
    REFEREE_JUDGE_ENDPOINTS, or the service's with --url) also its calls, tokens and cache hits."""
    try:
        spec = parse_verifier(verifier)
        rows = load_labelled(file)
    except (ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    needs_sandbox = any(name.partition("@")[0] == "code" for name in component_names(spec)) or any(
        (row.verifier or "").partition("@")[0] == "code" for row in rows
    )
    progress, bar = _bar("audit")

    async def main() -> None:
        async with _backend(url, api_key, sandbox=needs_sandbox, workers=workers) as score:
            report = await run_audit(rows, spec, score, progress=progress, probes=probes, source=str(file))
        paths = write_reports(report, out, file.stem, title=title)
        bar.close()
        typer.echo(
            f"accuracy {report.accuracy:.2%}, false positives {len(report.false_positives)}, "
            f"errors {len(report.errors)}, probes {sum(p.passed for p in report.probes)}/{len(report.probes)}"
        )
        if report.judge is not None:
            typer.echo(f"judge: {cost_line(report.judge)}")
        typer.echo("reports: " + ", ".join(str(p) for p in paths.values()))
        if not report.probes_passed:
            failed = [f"{p.battery}/{p.name}" for p in report.probes if not p.passed]
            typer.echo("failing probes: " + ", ".join(failed), err=True)

    _run(main)


@app.command("tests")
def tests_command(
    file: Annotated[Path, typer.Argument(help="Code problems with reference solutions (JSONL).")],
    out: OutOption = Path("audit-report"),
    url: UrlOption = None,
    api_key: Annotated[str | None, typer.Option(envvar="REFEREE_API_KEY")] = None,
    max_survival: Annotated[
        float, typer.Option(help="Weak when more than this share of mutants survive.")
    ] = MAX_SURVIVAL,
    max_mutants: Annotated[int, typer.Option(help="Mutants per problem (evenly thinned).")] = MAX_MUTANTS,
    options: Annotated[str, typer.Option(help="Options of the code verifier, as JSON.")] = "{}",
    title: Annotated[str | None, typer.Option(help="Report title.")] = None,
) -> None:
    """Test-suite strength of code problems: reference, trivial programs, mutants."""
    try:
        problems = load_problems(file)
        opts = json.loads(options)
    except (ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    progress, bar = _bar("problems")

    async def main() -> None:
        async with _backend(url, api_key, sandbox=True, workers=1) as score:
            report = await run_strength(
                problems,
                score,
                progress=progress,
                max_survival=max_survival,
                max_mutants=max_mutants,
                options=opts,
                source=str(file),
            )
        paths = write_reports(report, out, f"{file.stem}.strength", title=title)
        bar.close()
        typer.echo(
            f"{len(report.problems)} problems; weak: {report.weak or 'none'}; broken: {report.broken or 'none'}"
        )
        typer.echo("reports: " + ", ".join(str(p) for p in paths.values()))

    _run(main)
