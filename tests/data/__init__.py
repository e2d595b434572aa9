"""The labelled development sets, vendored so that a clone of the repository alone runs its tests.

`math_dev.jsonl`, `code_dev.jsonl` and `logic_dev.jsonl` are copies of the project's evaluation
sets (their README and the math verdict policy sit next to them). Tests and benchmarks read them
only through `devset()`; `REFEREE_EVALS_DIR` points it at another folder of the same shape (to
measure on a newer or private set) and a missing file is an error, never a silent skip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, NamedTuple

DATA_DIR = Path(__file__).resolve().parent

DevSetName = Literal["math", "code", "logic"]


class DevSet(NamedTuple):
    policy: dict[str, Any] | None  # the leading {"_policy": ...} line, where the file has one
    rows: list[dict[str, Any]]


def devsets_dir() -> Path:
    return Path(os.environ.get("REFEREE_EVALS_DIR") or DATA_DIR)


def devset_path(name: DevSetName) -> Path:
    path = devsets_dir() / f"{name}_dev.jsonl"
    if not path.is_file():
        raise FileNotFoundError(
            f"development set {path} not found (REFEREE_EVALS_DIR={os.environ.get('REFEREE_EVALS_DIR')!r})"
        )
    return path


def devset(name: DevSetName) -> DevSet:
    lines = [
        json.loads(line)
        for line in devset_path(name).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    policy = lines[0] if lines and "_policy" in lines[0] else None
    return DevSet(policy, [row for row in lines if "_policy" not in row])
