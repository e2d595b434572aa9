"""This Python as a virtualenv without some of Referee's optional extras would be.

`hide_extras(missing)` keeps what `pip install -e '.[<every other extra>]'` and the test runner
(pytest, its plugins, hypothesis) install, with everything they require; every other installed
distribution disappears: its modules raise `ModuleNotFoundError` on import and its metadata is
no longer listed, so pytest loads no plugin of it either (schemathesis and hydra register one).
The kept set is computed from the installed metadata, so a new extra or dependency needs no
edit here. verl and OpenRLHF, which `make` installs with `--no-deps` next to the `trainers`
extra (pyproject.toml, [tool.referee] trainers-no-deps), count as part of that extra.

`python -m tests.support.without_extras [EXTRA ...]` collects the suite with those extras hidden
(all of them when none is named); tests/test_extras.py runs it in a subprocess.
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import sys
import tomllib
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
# The test runner's own packages: a virtualenv that runs the tests at all has them.
RUNNER = ("pytest", "pytest-asyncio", "pytest-timeout", "hypothesis")
EXTRAS = tuple(importlib.metadata.metadata("referee").get_all("Provides-Extra") or ())
NO_DEPS_EXTRA = "trainers"


def _no_deps_packages() -> list[str]:
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["referee"]["trainers-no-deps"]
    return [Requirement(pin).name for pin in pins]


def kept_distributions(missing: Collection[str]) -> set[str]:
    """Canonical names of Referee with every extra but `missing`, the runner, and everything they
    require (with the extras they ask of their requirements); requirements for other platforms or
    Pythons are left out by their markers."""
    extras = frozenset(EXTRAS) - frozenset(missing)
    todo = [("referee", extras), *((name, frozenset[str]()) for name in RUNNER)]
    if NO_DEPS_EXTRA in extras:
        todo += [(name, frozenset()) for name in _no_deps_packages()]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (canonicalize_name(name), wanted) in seen:
            continue
        seen.add((canonicalize_name(name), wanted))
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        environments = [{"extra": extra} for extra in wanted] or [{"extra": ""}]
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return {name for name, _ in seen}


def hidden_modules(kept: set[str]) -> set[str]:
    """Top-level modules that only distributions outside `kept` provide. Names this repository
    holds itself (tests, scripts, bench: a careless wheel may install a `tests` package too)
    stay importable."""
    own = {path.name for path in REPO.iterdir()}
    return {
        module
        for module, dists in importlib.metadata.packages_distributions().items()
        if module not in own and not any(canonicalize_name(dist) in kept for dist in dists)
    }


class _Blocker(importlib.abc.MetaPathFinder):
    def __init__(self, hidden: set[str]) -> None:
        self.hidden = hidden

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        if fullname.partition(".")[0] in self.hidden:
            raise ModuleNotFoundError(f"No module named {fullname!r} (hidden: its extra is not installed)")
        return None


def hide_extras(missing: Collection[str] = EXTRAS) -> set[str]:
    """Hide, for the rest of this process, every module and distribution that a virtualenv
    without the extras `missing` would lack; returns the hidden top-level module names."""
    unknown = set(missing) - set(EXTRAS)
    if unknown:
        raise ValueError(f"not extras of referee: {sorted(unknown)} (known: {EXTRAS})")
    kept = kept_distributions(missing)
    hidden = hidden_modules(kept)
    sys.meta_path.insert(0, _Blocker(hidden))
    listed = importlib.metadata.distributions

    def distributions(**kwargs: Any) -> Iterator[importlib.metadata.Distribution]:
        for dist in listed(**kwargs):
            if canonicalize_name(dist.metadata["Name"] or "") in kept:
                yield dist

    importlib.metadata.distributions = distributions
    return hidden


if __name__ == "__main__":
    hide_extras(sys.argv[1:] or EXTRAS)
    import pytest

    sys.exit(pytest.main(["--collect-only", "-q", "-rs", "-p", "no:cacheprovider", str(REPO / "tests")]))
