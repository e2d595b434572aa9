"""`referee` command line: serve, score, list verifiers; sub-commands of the sandbox and trainer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from referee.logs import configure_logging

app = typer.Typer(help="Referee: verdicts and group rewards for RL on language models.", no_args_is_help=True)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (REFEREE_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (REFEREE_PORT).")] = None,
    workers: Annotated[int | None, typer.Option(help="Verifier worker processes (REFEREE_WORKERS).")] = None,
    ray: Annotated[
        bool, typer.Option("--ray", help="Serve on Ray Serve (REFEREE_RAY_*; needs the `ray` extra).")
    ] = False,
) -> None:
    """Run the HTTP service."""
    import uvicorn

    from referee.runtime import Runtime
    from referee.service.app import create_app
    from referee.service.connections import server_config
    from referee.settings import Settings

    overrides: dict[str, Any] = {
        k: v for k, v in {"host": host, "port": port, "workers": workers}.items() if v is not None
    }
    settings = Settings(**overrides)
    configure_logging(settings.service.log_level, settings.service.log_json)
    if ray:
        from referee.deploy.ray_serve import serve_forever

        serve_forever(settings)
        return
    uvicorn.Server(server_config(create_app(Runtime(settings)), settings.service)).run()


def _read_text(value: str) -> str:
    if value.startswith("@"):
        return Path(value[1:]).read_text()
    if value == "-":
        return sys.stdin.read()
    return value


@app.command()
def score(
    verifier: Annotated[str, typer.Option(help="Verifier name, e.g. math or exact.")],
    response: Annotated[str, typer.Option(help="The completion: text, @file, or - for stdin.")],
    reference: Annotated[
        str, typer.Option(help="The reference as JSON (a bare string is taken as is).")
    ] = "null",
    options: Annotated[str, typer.Option(help="Options as a JSON object.")] = "{}",
    url: Annotated[str, typer.Option(envvar="REFEREE_URL", help="Service URL.")] = "http://127.0.0.1:8000",
    api_key: Annotated[str | None, typer.Option(envvar="REFEREE_API_KEY")] = None,
) -> None:
    """Score one response against a running service and print the verdict as JSON."""
    from referee.client import Client, RefereeError

    try:
        reference_text, response_text = _read_text(reference), _read_text(response)
        opts = json.loads(options)
    except (OSError, json.JSONDecodeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    try:
        ref = json.loads(reference_text)
    except json.JSONDecodeError:
        ref = reference_text  # a bare string reference
    try:
        with Client(url, api_key=api_key, retries=1) as client:
            verdict = client.score(verifier, response_text, ref, opts)
    except RefereeError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    typer.echo(verdict.model_dump_json(indent=2))


@app.command()
def verifiers(
    url: Annotated[str, typer.Option(envvar="REFEREE_URL", help="Service URL.")] = "http://127.0.0.1:8000",
    api_key: Annotated[str | None, typer.Option(envvar="REFEREE_API_KEY")] = None,
) -> None:
    """List the verifiers of a running service."""
    from referee.client import Client, RefereeError

    try:
        with Client(url, api_key=api_key, retries=1) as client:
            infos = client.verifiers()
    except RefereeError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    for info in infos:
        summary = info.description.splitlines()[0][:90] if info.description else ""
        typer.echo(f"{info.name}@{info.version}\t{info.kind}\t{summary}")


def _mount_subcommands() -> None:
    # Sub-apps live beside the code they drive; a missing optional extra (torch for `train`)
    # must not break the rest of the CLI, so they import their heavy dependencies lazily.
    for module, name, help_text in (
        ("referee.sandbox.cli", "sandbox", "Build and inspect the code sandbox image."),
        ("referee.trainer_adapter.cli", "train", "GRPO demo and training loop."),
        ("referee.audit.cli", "audit", "Audit a verifier, or the strength of code test suites."),
    ):
        try:
            sub = __import__(module, fromlist=["app"]).app
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        app.add_typer(sub, name=name, help=help_text)


_mount_subcommands()
