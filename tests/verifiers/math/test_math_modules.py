"""The math verifier's modules import each other without a cycle (issue 26: the parser and the
grammar of sums imported each other, the sums reaching into the parser's private state)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import referee.verifiers.math as math_package

PACKAGE = Path(math_package.__file__).parent
PREFIX = "referee.verifiers.math."


def imports_of(path: Path) -> set[str]:
    """Sibling modules a module imports, at run time or for type checking alike."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            found.add(node.module.removeprefix(PREFIX))
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix(PREFIX) for a in node.names if a.name.startswith(PREFIX))
    return found


def test_math_modules_import_each_other_without_a_cycle() -> None:
    graph = {path.stem: imports_of(path) for path in PACKAGE.glob("_*.py")}
    assert {"_parser", "_bigops", "_cursor", "_lexer"} <= set(graph)
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:  # pragma: no cover - the failure message is the point
        raise AssertionError(f"import cycle: {exc.args[1]}") from None
    assert order.index("_bigops") < order.index("_parser")
    assert "_parser" not in graph["_bigops"]


def test_the_cycle_detector_sees_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "_a.py").write_text(f"from {PREFIX}_b import x\n")
    (tmp_path / "_b.py").write_text(
        f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from {PREFIX}_a import y\n"
    )
    graph = {path.stem: imports_of(path) for path in tmp_path.glob("_*.py")}
    assert graph == {"_a": {"_b"}, "_b": {"_a"}}
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError:
        return
    raise AssertionError("a cycle went unnoticed")
