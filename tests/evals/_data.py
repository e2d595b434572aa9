"""Grouping the development-set rows (loaded by `tests.data.devset`) for the HTTP-level tests."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any


def by_key(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[json.dumps(row[key], sort_keys=True)].append(row)
    return grouped
