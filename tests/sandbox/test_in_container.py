"""The trust boundary in the source tree: `referee/sandbox/in_container/` is exactly what the image
runs, each file runs there as a stdlib-only script, and each imports on the host for tests.
No Docker needed.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from referee.sandbox.image import IN_CONTAINER, IN_IMAGE_FILES, IN_IMAGE_SOURCE, dockerfile_text

REPO = Path(__file__).resolve().parents[2]
PYTHON_FILES = sorted(name for name in IN_IMAGE_FILES if name.endswith(".py"))


def test_the_image_gets_exactly_the_in_container_folder() -> None:
    """A file added to in_container/ ships in the image (and its recipe hash), and nothing from
    outside it does."""
    on_disk = {
        p.relative_to(IN_CONTAINER).as_posix()
        for p in IN_CONTAINER.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert set(IN_IMAGE_FILES) == on_disk - {"__init__.py"}
    assert (REPO / IN_IMAGE_SOURCE).resolve() == IN_CONTAINER
    copied = [line.split()[1] for line in dockerfile_text().splitlines() if line.startswith("COPY ")]
    assert copied == [f"{IN_IMAGE_SOURCE}/{name}" for name in IN_IMAGE_FILES]


@pytest.mark.parametrize("name", PYTHON_FILES)
def test_each_file_imports_on_the_host(name: str) -> None:
    module = importlib.import_module(f"referee.sandbox.in_container.{name[:-3]}")
    assert Path(module.__file__ or "") == IN_CONTAINER / name


@pytest.mark.parametrize("name", PYTHON_FILES)
def test_each_file_needs_only_the_stdlib_and_its_siblings(name: str) -> None:
    """The image's Python has no `referee` package and nothing installed."""
    siblings = {n[:-3] for n in PYTHON_FILES}
    tree = ast.parse((IN_CONTAINER / name).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):  # `from . import x`: a sibling
            imported |= {alias.name for alias in node.names}
    allowed = set(sys.stdlib_module_names) | siblings | {"__future__"}
    assert imported - allowed == set()


def test_the_script_tester_finds_its_siblings_as_a_script(tmp_path: Path) -> None:
    """In the image the tester is no package module: it imports call_harness and tagged from its
    own folder. Run as the template runs it (a `__main__` with `__file__` set, not named
    `__main__` here so it does not start), by an isolated interpreter without site-packages."""
    for name in IN_IMAGE_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)  # testlib/ has its own folder
        (tmp_path / name).write_bytes((IN_CONTAINER / name).read_bytes())
    script = tmp_path / "script_tester.py"
    probe = (
        "import sys, types\n"
        f"module = types.ModuleType('probe'); module.__file__ = {str(script)!r}\n"
        f"exec(compile(open(module.__file__).read(), module.__file__, 'exec'), module.__dict__)\n"
        "print(module.call_harness.__file__, module.tagged.__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.split() == [str(tmp_path / "call_harness.py"), str(tmp_path / "tagged.py")]
