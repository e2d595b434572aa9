"""A clone of the repository alone runs its tests and benchmarks: nothing reads a sibling folder.

The development sets used to be read from `../shared/evals`, which a user's clone does not have;
they now live in `tests/data` and are read only through `tests.data.devset`. The scan looks for
any path that climbs out of the repository towards such a folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.data import DATA_DIR, devset

REPO = Path(__file__).resolve().parents[1]
SCANNED = ["src", "tests", "bench", "scripts", ".ci", "Makefile", "pyproject.toml", "docker-compose.yml"]
# "../shared", `REPO.parent / "shared"`, `parents[2].parent / ...`: any route out of the clone.
OUTSIDE = re.compile(r"\.\./shared|\.parent\s*/\s*[\"']\w|parents\[\d\]\.parent|[\"']shared[\"']\s*/")


def outside_references(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = REPO / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [
                p for p in path.rglob("*") if p.is_file() and p.suffix in ("", ".py", ".sh", ".toml", ".yml")
            ]
    return [f for f in files if f != Path(__file__).resolve()]


def test_scanner_catches_what_it_should() -> None:
    bad = [
        'EVALS = REPO.parent / "shared" / "evals"',
        "data = open('../shared/evals/x.jsonl')",
        'default = Path(__file__).resolve().parents[2].parent / "evals"',
        'root / "shared" / "notes"',
    ]
    assert outside_references("\n".join(bad)) == bad
    fine = [
        "DATA_DIR = Path(__file__).resolve().parent",
        "path.parent / name",
        '"""helpers shared by tests"""',
    ]
    assert outside_references("\n".join(fine)) == []


def test_nothing_reads_outside_the_repository() -> None:
    offenders = {
        str(path.relative_to(REPO)): found
        for path in scanned_files()
        if (found := outside_references(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert offenders == {}


@pytest.mark.parametrize("name", ["math", "code", "logic"])
def test_development_sets_are_vendored(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFEREE_EVALS_DIR", raising=False)
    assert DATA_DIR.is_relative_to(REPO)
    policy, rows = devset(name)  # type: ignore[arg-type]
    assert len(rows) >= 50
    assert all("_policy" not in row for row in rows)
    if name != "math":  # code and logic sets open with the policy they are judged by
        assert policy is not None and "_policy" in policy


def test_a_missing_set_is_an_error_not_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_EVALS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"math_dev\.jsonl"):
        devset("math")
