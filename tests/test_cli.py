from __future__ import annotations

import json

from typer.testing import CliRunner

from referee.cli import app
from referee.service.background import BackgroundServer

runner = CliRunner()


def test_score_prints_verdict_json(server: BackgroundServer, tmp_path) -> None:
    completion = tmp_path / "completion.txt"
    completion.write_text("The answer is (B).")
    result = runner.invoke(
        app,
        [
            "score",
            "--verifier",
            "multiple_choice",
            "--reference",
            "B",
            "--response",
            f"@{completion}",
            "--url",
            server.url,
        ],
    )
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.output)
    assert verdict["score"] == 1.0 and verdict["verifier"] == "multiple_choice@1"


def test_score_reports_client_errors(server: BackgroundServer) -> None:
    result = runner.invoke(app, ["score", "--verifier", "nope", "--response", "x", "--url", server.url])
    assert result.exit_code == 2
    assert "unknown_verifier" in result.output


def test_verifiers_lists_builtins(server: BackgroundServer) -> None:
    result = runner.invoke(app, ["verifiers", "--url", server.url])
    assert result.exit_code == 0
    assert "exact@1" in result.output and "numeric@1" in result.output
