"""Dependencies point one way, and packages talk through what they export.

The rule (docs/architecture.md): neutral modules next to `models.py` import only each other;
each package may import the packages listed for it in `ALLOWED` and nothing above it; the
command line (`referee.cli`, `referee.__main__`) is the composition root and may import
anything. Across packages, only names in the target package's `__init__.__all__` are used.

The scan reads import statements with `ast` (including imports inside functions and under
`TYPE_CHECKING`: a lazy import is still a dependency), so nothing is imported to check it.
`ALLOWED` is also the package table of docs/architecture.md: a test parses the table and
compares it with `ALLOWED` and with the packages under src/referee/, so neither the rule nor
its documentation can leave a package out.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ROOT = SRC / "referee"
ARCHITECTURE = REPO / "docs" / "architecture.md"

NEUTRAL = {"models", "advantages", "grouping", "errors", "settings", "logs", "turns", "breaker", "pg_connect"}
COMPOSITION_ROOT = {"cli", "__main__", "__init__"}
# package -> the packages it may import (neutral modules are always allowed).
ALLOWED: dict[str, set[str]] = {
    "sandbox": set(),
    "judges": set(),
    "verifiers": {"sandbox", "judges"},
    "scoring": {"verifiers"},
    "registered": {"verifiers", "sandbox"},
    "environments": {"scoring"},
    "sessions": {"sandbox"},
    "runtime": {
        "scoring",
        "registered",
        "verifiers",
        "sandbox",
        "stats",
        "judges",
        "sessions",
        "environments",
    },
    "service": {
        "runtime",
        "scoring",
        "registered",
        "verifiers",
        "sandbox",
        "audit",
        "stats",
        "judges",
        "sessions",
        "environments",
    },
    "stats": set(),
    "client": set(),
    "trainer_adapter": {"client"},
    "audit": {"verifiers", "scoring", "sandbox", "client", "judges"},
    "deploy": {"service", "runtime", "client", "trainer_adapter"},
}
PACKAGES = set(ALLOWED)


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str  # referee.x.y
    names: tuple[str, ...]  # names taken from it (empty for `import referee.x.y`)


def unit_of(path: Path) -> str:
    """`service` for src/referee/service/app.py, `models` for src/referee/models.py."""
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports_of(path: Path) -> list[Import]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "referee" or node.module.startswith("referee."):
                found.append(Import(path, node.lineno, node.module, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("referee."):
                    found.append(Import(path, node.lineno, alias.name, ()))
    return found


def target_unit(imp: Import) -> str | None:
    parts = imp.module.split(".")
    if len(parts) > 1:
        return parts[1]
    return None  # `from referee import __version__`


def exported(package: str) -> set[str]:
    """The package's `__all__`, read from its `__init__.py` without importing it."""
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def violations(imp: Import) -> list[str]:
    source, target = unit_of(imp.path), target_unit(imp)
    where = f"{imp.path.relative_to(SRC)}:{imp.line}: {imp.module}"
    if target is None or target == source or source in COMPOSITION_ROOT:
        return []
    if source in NEUTRAL:
        return [] if target in NEUTRAL else [f"{where}: neutral module `{source}` imports `{target}`"]
    if target in NEUTRAL:
        return []
    if target not in ALLOWED.get(source, set()):
        return [f"{where}: `{source}` may not depend on `{target}`"]
    # Across packages: only exported names (a submodule path is fine when the name is exported).
    public = exported(target)
    names = imp.names or (imp.module.split(".")[2:3])
    return [f"{where}: `{name}` is not in referee.{target}.__all__" for name in names if name not in public]


def all_imports() -> list[Import]:
    files = sorted(ROOT.rglob("*.py"))
    assert files, f"no sources under {ROOT}"
    return [imp for path in files for imp in imports_of(path)]


def test_every_package_and_module_is_classified() -> None:
    units = {unit_of(p) for p in ROOT.rglob("*.py")}
    unknown = units - NEUTRAL - PACKAGES - COMPOSITION_ROOT
    assert not unknown, f"add these to the layering rule: {sorted(unknown)}"


def documented_rule(markdown: str) -> dict[str, set[str]]:
    """The `| package | may import |` table: package -> what it may import (`nothing` is empty)."""
    lines = iter(markdown.splitlines())
    for line in lines:
        if re.fullmatch(r"\|\s*package\s*\|\s*may import\s*\|", line.strip()):
            break
    else:
        raise AssertionError("no `| package | may import |` table")
    next(lines)  # |---|---|
    rule: dict[str, set[str]] = {}
    for line in lines:
        if not line.startswith("|"):
            break
        package, imports = (cell.strip() for cell in line.strip().strip("|").split("|"))
        names = set() if imports == "nothing" else {name.strip() for name in imports.split(",")}
        rule[package.strip("`")] = {name.strip("`") for name in names}
    return rule


def test_the_documented_table_is_the_rule_and_lists_every_package() -> None:
    documented = documented_rule(ARCHITECTURE.read_text(encoding="utf-8"))
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} - NEUTRAL
    assert set(documented) == packages, (
        f"docs/architecture.md's table vs src/referee: {sorted(set(documented) ^ packages)}"
    )
    assert documented == ALLOWED, "docs/architecture.md's table differs from ALLOWED"


def test_the_table_parser_reads_what_it_should() -> None:
    table = "text\n\n| package | may import |\n|---|---|\n| `a` | nothing |\n| `b` | `a`, `c` |\n\nmore"
    assert documented_rule(table) == {"a": set(), "b": {"a", "c"}}
    with pytest.raises(AssertionError, match=r"no `\| package"):
        documented_rule("| module | may import |\n|---|---|\n| `a` | nothing |")


def test_dependencies_point_one_way() -> None:
    problems = [v for imp in all_imports() for v in violations(imp)]
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_the_checker_catches_what_it_should() -> None:
    def check(unit_path: str, source: str) -> list[str]:
        path = ROOT / unit_path
        tree_imports = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module:
                tree_imports.append(Import(path, node.lineno, node.module, tuple(a.name for a in node.names)))
        return [v for imp in tree_imports for v in violations(imp)]

    assert check("service/x.py", "from referee.trainer_adapter.rewarder import GroupRewarder")
    assert check("trainer_adapter/x.py", "from referee.service import create_app")
    assert check("models.py", "from referee.scoring import Scorer")
    assert check("service/x.py", "from referee.scoring.engine import _canonical")  # not exported
    assert not check("service/x.py", "from referee.scoring.engine import Scorer")
    assert not check("trainer_adapter/x.py", "from referee.grouping import Sample")
    assert not check("cli.py", "from referee.service.app import create_app")


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_all_lists_exactly_what_the_package_exports(package: str) -> None:
    """As httpx tests its own namespace: every public name of the package is declared in
    `__all__`, and everything declared exists."""
    module = importlib.import_module(f"referee.{package}")
    declared = set(module.__all__)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not (getattr(value, "__name__", "").startswith(f"referee.{package}.") and name not in declared)
    }
    assert declared == public, f"referee.{package}: __all__ {sorted(declared)} vs public {sorted(public)}"
