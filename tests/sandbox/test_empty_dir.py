"""The scrub's directory walk (in_container/supervisor.py `empty_dir`) on the host, no Docker:
what a program leaves in /work and /tmp is removed in time linear in what it made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from referee.sandbox.in_container import supervisor


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directory each os.scandir call of the supervisor read (its working directory)."""
    seen: list[str] = []
    real = os.scandir

    def counting(path: str = ".") -> object:
        seen.append(os.path.realpath(path))
        return real(path)

    monkeypatch.setattr(supervisor.os, "scandir", counting)
    return seen


def _empty(top: Path) -> None:
    """empty_dir (which leaves the process in `top`), then back to where the test was."""
    cwd = os.getcwd()
    try:
        supervisor.empty_dir(str(top))
    finally:
        os.chdir(cwd)


def test_each_directory_is_read_once(tmp_path: Path, scans: list[str]) -> None:
    """Directories side by side: reading the parent again after each one is removed made
    16,383 of them cost 1.7 s of CPU per scratch dir (quadratic), which a program that timed
    out on every test used to push its request past its deadline (masked, not its 0)."""
    top = tmp_path / "scratch"
    top.mkdir()
    for i in range(300):
        (top / f"d{i}").mkdir()
        (top / f"d{i}" / "f").write_text("x")
    (top / "d0" / "inner").mkdir()
    (top / "file").write_text("x")
    _empty(top)
    assert list(top.iterdir()) == []
    assert len(scans) == len(set(scans)) == 302  # top, d0..d299, d0/inner: once each


def test_deep_and_unreadable_directories_are_removed(tmp_path: Path) -> None:
    top = tmp_path / "scratch"
    top.mkdir()
    deep = top
    for _ in range(200):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    (top / "locked").mkdir()
    (top / "locked" / "f").write_text("x")
    (top / "locked").chmod(0)
    _empty(top)
    assert list(top.iterdir()) == []


def test_what_is_not_ours_is_left_and_the_rest_removed(
    tmp_path: Path, scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program's own scrub meets the root-owned program file in /work: it removes
    everything else (the supervisor removes that file after it)."""
    top = tmp_path / "scratch"
    top.mkdir()
    (top / "sol.py").write_text("x")
    (top / "d").mkdir()
    (top / "d" / "f").write_text("x")
    real_unlink = os.unlink

    def unlink(path: str) -> None:
        if path == "sol.py":
            raise PermissionError(1, "Operation not permitted")
        real_unlink(path)

    monkeypatch.setattr(supervisor.os, "unlink", unlink)
    _empty(top)
    assert [p.name for p in top.iterdir()] == ["sol.py"]
