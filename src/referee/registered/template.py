"""Value paths (`answer.items[0]`) and reference templates (`{{reference.answer}}`).

Both are data lookups only: a path is a list of dict keys and list indices, parsed with a
small hand-written scanner. Nothing is evaluated.
"""

from __future__ import annotations

import json
import re
from typing import Any

Path = tuple[str | int, ...]

_KEY = re.compile(r"[A-Za-z0-9_\-]+")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]{1,200}?)\s*\}\}")
MAX_PATH_PARTS = 32


class PathError(ValueError):
    pass


def parse_path(text: str, *, root: str | None = None) -> Path:
    """`a.b[0].c` (optionally `$.a...`, or `<root>.a...` when `root` is given) -> ("a","b",0,"c")."""
    rest = text.strip()
    if root is not None:
        if not (rest == root or rest.startswith(root + ".") or rest.startswith(root + "[")):
            raise PathError(f"{text!r}: a template path starts with {root!r}")
        rest = rest[len(root) :]
    elif rest.startswith("$"):
        rest = rest[1:]
    elif rest and not rest.startswith("["):
        rest = "." + rest
    # Now a sequence of ".key" and "[index]".
    parts: list[str | int] = []
    i = 0
    while i < len(rest):
        if rest[i] == "[":
            end = rest.find("]", i)
            if end < 0 or not rest[i + 1 : end].isdigit():
                raise PathError(f"{text!r}: an index is [digits]")
            parts.append(int(rest[i + 1 : end]))
            i = end + 1
        elif rest[i] == "." and (match := _KEY.match(rest, i + 1)) is not None:
            parts.append(match.group(0))
            i = match.end()
        else:
            raise PathError(f"{text!r}: unexpected {rest[i : i + 10]!r}")
        if len(parts) > MAX_PATH_PARTS:
            raise PathError(f"{text!r}: more than {MAX_PATH_PARTS} parts")
    return tuple(parts)


_MISSING = object()


def lookup(value: Any, path: Path) -> Any:
    """The value at `path`, or `_MISSING`. A numeric key also indexes a list."""
    for part in path:
        if isinstance(value, dict):
            key = str(part)
            if key not in value:
                return _MISSING
            value = value[key]
        elif isinstance(value, list) and (isinstance(part, int) or part.isdigit()):
            index = int(part)
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def is_missing(value: Any) -> bool:
    return value is _MISSING


def template_paths(template: Any) -> list[Path]:
    """Every placeholder path in a template value (validates their syntax)."""
    found: list[Path] = []
    if isinstance(template, str):
        found += [parse_path(m.group(1), root="reference") for m in _PLACEHOLDER.finditer(template)]
    elif isinstance(template, list):
        for item in template:
            found += template_paths(item)
    elif isinstance(template, dict):
        for item in template.values():
            found += template_paths(item)
    return found


def render(template: Any, reference: Any) -> Any:
    """Fill `{{reference...}}` placeholders from the request's reference.

    A string that is exactly one placeholder becomes the referenced value itself (any JSON
    type); placeholders inside longer strings are replaced by their text. Raises PathError
    naming the first path the reference lacks."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template.strip())
        if whole is not None:
            return _resolve(whole.group(1), reference)

        def text(match: re.Match[str]) -> str:
            value = _resolve(match.group(1), reference)
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

        return _PLACEHOLDER.sub(text, template)
    if isinstance(template, list):
        return [render(item, reference) for item in template]
    if isinstance(template, dict):
        return {key: render(item, reference) for key, item in template.items()}
    return template


def _resolve(path_text: str, reference: Any) -> Any:
    path = parse_path(path_text, root="reference")
    value = lookup(reference, path)
    if is_missing(value):
        raise PathError(f"the reference has no {path_text.strip()}")
    return value
