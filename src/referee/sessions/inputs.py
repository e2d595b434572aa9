"""What a session request may ask for, checked before any container is touched.

The HTTP models bound the shape (types, sizes); these checks are the table's own, so that
every caller (the routes, the environments) is held to the same caps: the configured ones
(`SessionSettings`) and the sandbox's (`MAX_SESSION_FILES`, `MAX_SESSION_FILES_BYTES`). A
refusal is an `InputError` (422) naming the field, like a request validation error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from referee.errors import InputError
from referee.sandbox import (
    MAX_SESSION_FILES,
    MAX_SESSION_FILES_BYTES,
    SESSION_LANGUAGES,
    SessionLimits,
)
from referee.settings import SessionSettings

# Limits a request may set, with the setting that caps each.
LIMIT_CAPS = {
    "call_time_s": "max_call_time_s",
    "session_cpu_s": "max_session_cpu_s",
    "memory_mb": "max_memory_mb",
    "output_bytes": "max_output_bytes",
    "file_size_mb": "max_file_size_mb",
    "open_files": "max_open_files",
}
MAX_PATH_CHARS = 255


def _refuse(loc: list[Any], msg: str, kind: str) -> InputError:
    """`kind`: the error's type, as pydantic names it for a schema's bound (`too_long`: over a
    configured size, which the OpenAPI document cannot state)."""
    return InputError([{"loc": ["body", *loc], "msg": msg, "type": kind}])


def checked_language(language: str) -> str:
    if language not in SESSION_LANGUAGES:
        raise _refuse(["language"], f"sessions run {', '.join(SESSION_LANGUAGES)}", "literal_error")
    return language


def checked_limits(requested: Mapping[str, Any], settings: SessionSettings) -> SessionLimits:
    """The sandbox's session defaults with the request's values, each lowered to its cap (the
    response says the limits that apply): a trainer configured for a bigger service still
    runs, under what this one gives."""
    unknown = sorted(set(requested) - set(LIMIT_CAPS))
    if unknown:
        raise _refuse(["limits", unknown[0]], "not a limit a request may set", "extra_forbidden")
    defaults = SessionLimits()
    values: dict[str, Any] = {}
    for name, cap_name in LIMIT_CAPS.items():
        value = requested.get(name)
        if value is not None and not value > 0:
            raise _refuse(["limits", name], "must be greater than 0", "greater_than")
        values[name] = min(getattr(defaults, name) if value is None else value, getattr(settings, cap_name))
    return replace(defaults, **values)


def positive(value: float, field: str) -> float:
    if not value > 0:
        raise _refuse([field], "must be greater than 0", "greater_than")
    return value


def checked_path(name: str) -> str:
    """A relative path inside the work dir: no `..`, no absolute path, no empty part."""
    path = PurePosixPath(name)
    if (
        not name
        or len(name) > MAX_PATH_CHARS
        or "\x00" in name
        or "\\" in name
        or path.is_absolute()
        or any(part in ("", ".", "..") for part in name.split("/"))
    ):
        raise _refuse(
            ["files", name[:MAX_PATH_CHARS]],
            "a relative path inside /work, without `..` or `.` parts",
            "string_pattern_mismatch",
        )
    return name


def checked_files(files: Mapping[str, str | bytes]) -> dict[str, bytes]:
    if len(files) > MAX_SESSION_FILES:
        raise _refuse(["files"], f"at most {MAX_SESSION_FILES} files", "too_long")
    placed: dict[str, bytes] = {}
    for name, content in files.items():
        placed[checked_path(name)] = content.encode("utf-8") if isinstance(content, str) else content
    total = sum(len(data) for data in placed.values())
    if total > MAX_SESSION_FILES_BYTES:
        raise _refuse(["files"], f"{total} bytes in all; at most {MAX_SESSION_FILES_BYTES}", "too_long")
    return placed


def checked_code(code: str, max_bytes: int) -> None:
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _refuse(
            ["code"], f"{size} bytes; at most {max_bytes} (REFEREE_SESSIONS_MAX_CODE_BYTES)", "too_long"
        )
