"""Shared fixtures for the logic verifier tests: the labelled dev set and the verifiers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from referee.verifiers.base import Check, Verifier
from referee.verifiers.logic import VERIFIERS

REPO = Path(__file__).resolve().parents[3]


def evals_dir() -> Path:
    return Path(os.environ.get("REFEREE_EVALS_DIR", REPO.parent / "shared" / "evals"))


def load_logic_rows() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(policy line, rows) of logic_dev.jsonl. Missing data is a failure, not a skip: the
    100%-agreement requirement must not pass silently on a machine without the data."""
    path = evals_dir() / "logic_dev.jsonl"
    if not path.exists():
        pytest.fail(f"{path} not found; set REFEREE_EVALS_DIR")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]


BY_NAME: dict[str, Verifier] = {cls.name: cls() for cls in VERIFIERS}


def judge(name: str, response: Any, reference: Any, options: dict[str, Any] | None = None) -> Check:
    """Score in-process the way the service does: validate, prepare once, check."""
    verifier = BY_NAME[name]
    opts = verifier.validate_options(options)
    prepared = verifier.prepare(verifier.validate_reference(reference), opts)
    return verifier.check(response, prepared, opts)


def wrap(answer: str) -> str:
    return f"<think>\nworking\n</think>\n<answer>\n{answer}\n</answer>"
