"""Configuration is read in one place: `referee.settings`. No other module of the package reads
(or writes) the process environment, except those listed in `ALLOWED` with the reason.

Like tests/test_layering.py, the scan reads the source with `ast`: `os.environ`, `os.environb`,
`os.getenv`, `os.putenv`, `os.unsetenv` and `from os import environ` are found wherever they
occur (in functions too), so nothing is imported to check it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "referee"
ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}

# Path under src/referee (a file, or a folder ending in "/") -> why it may touch the environment.
ALLOWED = {
    "settings.py": "the one reader of the configuration",
    "sandbox/in_container/": "runs inside the sandbox container, where the environment is the "
    "candidate program's (supervisor, zygote), not the service's configuration",
    "trainer_adapter/verl.py": "verl imports its reward function by path and calls it without "
    "arguments: the trainer's environment (REFEREE_URL, REFEREE_API_KEY) says where the service is",
    "trainer_adapter/openrlhf.py": "OpenRLHF calls its reward file's function with the samples only: "
    "the rollout actors' environment (REFEREE_OPENRLHF_URL, REFEREE_API_KEY, REFEREE_PATIENCE_S) "
    "configures it",
    "trainer_adapter/rollouts.py": "the tool and agent adapters are built by the trainers (verl's "
    "tool YAML names the variable holding the key; OpenRLHF's agent file takes no arguments): "
    "REFEREE_URL, REFEREE_API_KEY, REFEREE_PATIENCE_S, REFEREE_IDLE_TTL_S configure them",
    "trainer_adapter/grpo/demo.py": "starts a service process of its own; a child process takes "
    "its settings through its environment",
    "deploy/ray_serve.py": "sets Ray's own proxy configuration, which Ray reads from the environment "
    "of the cluster that `referee serve --ray` starts",
}


def _names_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in ENVIRONMENT and isinstance(node.value, ast.Name) and node.value.id == "os"
    if isinstance(node, ast.ImportFrom):
        return node.module == "os" and any(alias.name in ENVIRONMENT for alias in node.names)
    return False


def environment_uses(path: Path) -> list[int]:
    """Lines of `path` that name the process environment."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if _names_environment(node)]


def _allowed(rel: str) -> bool:
    return any(rel == entry or (entry.endswith("/") and rel.startswith(entry)) for entry in ALLOWED)


def test_only_settings_reads_the_environment() -> None:
    found = {
        f"{path.relative_to(ROOT).as_posix()}:{line}"
        for path in sorted(ROOT.rglob("*.py"))
        if not _allowed(path.relative_to(ROOT).as_posix())
        for line in environment_uses(path)
    }
    assert not found, f"read the configuration through referee.settings instead: {sorted(found)}"


def test_every_exception_still_exists_and_is_needed() -> None:
    """A listed exception that no longer touches the environment is taken off the list."""
    for entry in ALLOWED:
        paths = sorted((ROOT / entry).rglob("*.py")) if entry.endswith("/") else [ROOT / entry]
        assert paths and all(p.exists() for p in paths), f"{entry} does not exist"
        assert any(environment_uses(p) for p in paths), f"{entry} no longer touches the environment"


def test_the_scan_finds_each_form(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    for text in (
        "import os\nx = os.environ['A']\n",
        "import os\ndef f():\n    return os.getenv('A')\n",
        "from os import environ\n",
        "import os\nos.environ.setdefault('A', 'b')\n",
    ):
        source.write_text(text)
        assert environment_uses(source), text
    source.write_text("import os\nx = os.path.join('a', 'b')\nenviron = {}\n")
    assert not environment_uses(source)
