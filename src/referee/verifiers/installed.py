"""Installed verifiers: those that come as code, not through the API.

Three sources: the built-ins, classes named in REFEREE_EXTRA_VERIFIERS, and plugins.

Plugins are discovered through the entry-point group `referee.verifiers`; an entry point may
name a `Verifier` subclass or a list of them. The service builds its index once (its runtime,
`load_installed`) and hands it to whoever needs it: the worker processes get it pickled (its
classes, by name, and their kinds: every verifier class must be importable); a verifier that
looks up other verifiers (`length.cosine`) is bound to the index it belongs to (`IndexUser`).
`builtin_index()` is the built-ins alone, for verifiers used outside a service (tests,
notebooks, the audit's batteries).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

import structlog

from referee.errors import DomainError, ErrorKind
from referee.verifiers.base import Verifier

ENTRY_POINT_GROUP = "referee.verifiers"

# Modules of built-in verifiers; each exposes `VERIFIERS: list[type[Verifier]]`.
BUILTIN_MODULES: tuple[str, ...] = (
    "referee.verifiers.short_answer",
    "referee.verifiers.format",
    "referee.verifiers.shaping",
    "referee.verifiers.math",
    "referee.verifiers.logic",
    "referee.verifiers.code",
    "referee.verifiers.judge",
)

log = structlog.get_logger(__name__)


class UnknownVerifier(DomainError):
    def __init__(self, name: str, known: list[str]) -> None:
        message = f"unknown verifier {name!r}; known: {', '.join(known)}"
        super().__init__(ErrorKind.not_found, "unknown_verifier", message, {"known": known})
        self.name = name
        self.known = known


@runtime_checkable
class IndexUser(Protocol):
    """A verifier that names other verifiers (length.cosine's inner verifier): it is handed the
    index it belongs to when registered there, and looks them up in it."""

    def use_index(self, index: InstalledVerifiers) -> None: ...


class InstalledVerifiers:
    def __init__(self) -> None:
        self._verifiers: dict[str, Verifier] = {}
        self._kinds: dict[str, str] = {}

    def register(self, cls: type[Verifier], *, kind: str = "builtin", replace: bool = False) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Verifier)):
            raise TypeError(f"{cls!r} is not a Verifier subclass")
        name = getattr(cls, "name", None)
        if not name or not isinstance(name, str):
            raise ValueError(f"{cls.__qualname__} has no name")
        if name in self._verifiers and not replace:
            existing = type(self._verifiers[name])
            if existing is cls:
                return
            raise ValueError(f"verifier {name!r} is already registered by {existing.__qualname__}")
        verifier = cls()
        if isinstance(verifier, IndexUser):
            verifier.use_index(self)
        self._verifiers[name] = verifier
        self._kinds[name] = kind

    def get(self, name: str) -> Verifier:
        # "name@version" pins a version; built-ins have one version, so it must match.
        base, _, version = name.partition("@")
        verifier = self._verifiers.get(base)
        if verifier is None or (version and version != verifier.version):
            raise UnknownVerifier(name, self.names())
        return verifier

    def kind(self, name: str) -> str:
        return self._kinds[name.partition("@")[0]]

    def names(self) -> list[str]:
        return sorted(self._verifiers)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.partition("@")[0] in self._verifiers

    def __iter__(self) -> Iterator[Verifier]:
        return iter(self._verifiers[name] for name in self.names())

    def __len__(self) -> int:
        return len(self._verifiers)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled (for the worker processes) as its classes and their kinds, registered anew on
        the other side: classes travel by name, and no instance's state has to be picklable."""
        entries = [(type(verifier), self._kinds[name]) for name, verifier in self._verifiers.items()]
        return _rebuilt, (entries,)


def _rebuilt(entries: list[tuple[type[Verifier], str]]) -> InstalledVerifiers:
    index = InstalledVerifiers()
    for cls, kind in entries:
        index.register(cls, kind=kind)
    return index


def _as_classes(obj: Any, origin: str) -> list[type[Verifier]]:
    items: Iterable[Any] = obj if isinstance(obj, list | tuple) else [obj]
    classes = []
    for item in items:
        if not (isinstance(item, type) and issubclass(item, Verifier)):
            raise TypeError(f"{origin} provides {item!r}, not a Verifier subclass")
        classes.append(item)
    return classes


def import_object(path: str) -> Any:
    """Import "package.module:attribute"."""
    module_name, _, attr = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def load_installed(extra: Iterable[str] = (), *, plugins: bool = True) -> InstalledVerifiers:
    """Built-ins, then `extra` ("module:Class" paths from settings), then entry-point plugins:
    the one constructor of a verifier index.

    A plugin that fails to load is logged and skipped: one broken third-party package must not
    take the built-in verifiers down with it.
    """
    installed = InstalledVerifiers()
    for module_name in BUILTIN_MODULES:
        for cls in _as_classes(import_object(module_name).VERIFIERS, module_name):
            installed.register(cls)
    for path in extra:
        for cls in _as_classes(import_object(path), path):
            installed.register(cls, kind="extra")
    if plugins:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                for cls in _as_classes(ep.load(), f"entry point {ep.name}"):
                    if cls.name in installed and installed.kind(cls.name) == "builtin":
                        raise ValueError(f"plugin may not replace built-in verifier {cls.name!r}")
                    installed.register(cls, kind="plugin")
            except Exception as exc:
                log.warning("plugin_load_failed", entry_point=ep.name, value=ep.value, error=str(exc))
    return installed


@lru_cache(maxsize=1)
def builtin_index() -> InstalledVerifiers:
    """The built-in verifiers alone (no extras, no plugins), built once per process: for
    verifiers used on their own, outside a service's runtime (which builds its index itself)."""
    return load_installed(plugins=False)
