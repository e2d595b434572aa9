"""Shared fixtures for the logic verifier tests: the labelled dev set and the verifiers."""

from __future__ import annotations

from typing import Any

from tests.data import devset

from referee.verifiers.base import Check, Verifier
from referee.verifiers.logic import VERIFIERS


def load_logic_rows() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(policy line, rows) of logic_dev.jsonl."""
    policy, rows = devset("logic")
    assert policy is not None, "logic_dev.jsonl starts with its verdict policy"
    return policy, rows


BY_NAME: dict[str, Verifier] = {cls.name: cls() for cls in VERIFIERS}


def judge(name: str, response: Any, reference: Any, options: dict[str, Any] | None = None) -> Check:
    """Score in-process the way the service does: validate, prepare once, check."""
    verifier = BY_NAME[name]
    opts = verifier.validate_options(options)
    prepared = verifier.prepare(verifier.validate_reference(reference), opts)
    return verifier.check(response, prepared, opts)


def wrap(answer: str) -> str:
    return f"<think>\nworking\n</think>\n<answer>\n{answer}\n</answer>"
