"""`referee sandbox ...`: build and inspect the sandbox image (mounted by referee.cli)."""

from __future__ import annotations

import typer

from referee.sandbox.image import build_image, dockerfile_text, image_ref
from referee.settings import Settings

app = typer.Typer(help="The Docker sandbox of the `code` verifier.", no_args_is_help=True)


@app.command()
def build(
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image exists."),
    method: str = typer.Option(
        "debootstrap", help="debootstrap (offline: Debian mirror only) or dockerfile (needs a registry)."
    ),
) -> None:
    """Build the sandbox image; a no-op when an image with the same recipe hash exists."""
    try:
        ref = build_image(Settings().sandbox, force=force, method=method, log=typer.echo)
    except Exception as exc:
        typer.echo(f"sandbox image build failed: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(ref)


@app.command()
def image() -> None:
    """Print the pinned image reference the service will use."""
    typer.echo(image_ref(Settings().sandbox))


@app.command()
def dockerfile() -> None:
    """Print the equivalent Dockerfile (as in docker/sandbox/Dockerfile)."""
    typer.echo(dockerfile_text(Settings().sandbox), nl=False)
