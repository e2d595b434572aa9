"""Loading the labelled development sets (../shared/evals) for the HTTP-level tests."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def load_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file, without a leading `_policy` line."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "_policy" not in r]


def by_key(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[json.dumps(row[key], sort_keys=True)].append(row)
    return grouped
