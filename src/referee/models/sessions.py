"""Stateful code sessions (`/v1/sessions`): open one, run code in it call after call (state kept
between calls), read it, close it. What applies is checked by the service beyond the schema:
limits and TTLs above the configured caps are lowered to them (the answer says what applies),
code and files over the configured sizes are refused (`too_long`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from referee.models.common import StrictModel, json_numbers

# How a call ended: `ok` and `error` (an exception in the code) keep the kernel's state; the
# others cost it (the next call starts in a fresh kernel; `restarted` says so). The sandbox's
# `CallStatus`, restated here: the contract does not depend on the sandbox package.
SessionCallStatus = Literal["ok", "error", "timeout", "memory_limit_exceeded", "killed"]

# A path relative to the work dir, in parts that are neither `.` nor `..` (no lookaround:
# pydantic's regex engine has none). The sandbox's own bounds: 64 files, 8 MiB in all.
SESSION_PATH_PATTERN = r"^(?:[^/\\\x00.]|\.[^/\\\x00.]|\.\.[^/\\\x00])[^/\\\x00]*(?:/(?:[^/\\\x00.]|\.[^/\\\x00.]|\.\.[^/\\\x00])[^/\\\x00]*)*$"
SessionPath = Annotated[str, Field(pattern=SESSION_PATH_PATTERN, min_length=1, max_length=255)]
MAX_FILES = 64
# pydantic documents a constrained key as `patternProperties`, which lets any other key through
# with any value; the document says what is validated: every key a path, every value text.
SessionFiles = Annotated[
    dict[SessionPath, str],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": SESSION_PATH_PATTERN, "minLength": 1, "maxLength": 255},
            "additionalProperties": {"type": "string"},
            "maxProperties": MAX_FILES,
        }
    ),
]


class SessionLimitsRequest(StrictModel):
    """Each optional: unset, the sandbox's session default; above the configured cap, the cap."""

    call_time_s: float | None = Field(default=None, gt=0, le=86_400, description="Wall time of one call.")
    session_cpu_s: float | None = Field(
        default=None, gt=0, le=7 * 86_400, description="CPU time over the session's life."
    )
    memory_mb: int | None = Field(default=None, gt=0, le=1 << 20, description="The kernel's memory.")
    output_bytes: int | None = Field(
        default=None, gt=0, le=1 << 30, description="stdout and stderr kept per call, each."
    )
    file_size_mb: int | None = Field(
        default=None, gt=0, le=1 << 20, description="The largest file the session may write."
    )
    # The kernel itself holds a few (its pipes, the interpreter's own).
    open_files: int | None = Field(default=None, ge=32, le=1 << 20, description="Files open at once.")

    _numbers = json_numbers(
        "call_time_s", "session_cpu_s", "memory_mb", "output_bytes", "file_size_mb", "open_files"
    )


class SessionLimitsInfo(StrictModel):
    """The limits that apply to a session."""

    call_time_s: float
    session_cpu_s: float
    memory_mb: int
    output_bytes: int
    file_size_mb: int
    open_files: int


class SessionOpenRequest(StrictModel):
    language: Literal["python", "bash"] = "python"
    limits: SessionLimitsRequest = Field(default_factory=SessionLimitsRequest)
    files: SessionFiles = Field(
        default_factory=dict,
        max_length=MAX_FILES,
        description="Text files placed in the work dir before the first call: relative path -> "
        "content (8 MiB in all at most).",
    )
    idle_ttl_s: float | None = Field(
        default=None,
        gt=0,
        le=7 * 86_400,
        description="Close the session after this long unused (default and cap: the service's).",
    )

    _numbers = json_numbers("idle_ttl_s")


class SessionCreated(StrictModel):
    id: str = Field(description="The session's id: a capability, known only to its key.")
    language: str
    limits: SessionLimitsInfo
    idle_ttl_s: float
    max_lifetime_s: float
    created_at: float = Field(description="Unix time.")


class SessionRunRequest(StrictModel):
    code: str = Field(description="Python source; the value of its last expression is returned.")
    time_s: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        description="This call's wall time (at most the session's call_time_s).",
    )

    _numbers = json_numbers("time_s")


class SessionRunResult(StrictModel):
    status: SessionCallStatus
    stdout: str
    stderr: str
    value: str | None = Field(description="The repr of the last expression (as a notebook shows it).")
    error: str | None = Field(description="The traceback (status error), or why the call ended.")
    duration_s: float
    truncated: bool = Field(description="stdout, stderr or value was cut at its cap.")
    restarted: bool = Field(description="The kernel's state was lost; the next call starts afresh.")
    call: int = Field(description="This call's number in the session, from 1.")


class SessionState(StrictModel):
    id: str
    language: str
    calls: int
    restarts: int
    created_at: float
    last_used_at: float
    idle_ttl_s: float
    expires_at: float = Field(description="When the session closes if it stays unused (Unix time).")


class SessionList(StrictModel):
    sessions: list[SessionState]
