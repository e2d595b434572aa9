"""Stateful code sessions: one container pinned to a rollout, a Python kernel kept alive in it.

Agentic RL runs the model's code *during* a rollout, many short calls per sample, with state
(variables, imports, files in /work) kept between them. A session takes one container of the
pool for its whole life; its supervisor starts a kernel (`in_container/session_kernel.py`)
under a uid of its own, with the same rlimits, environment and hardening as any program, and
forwards each call to it over a pipe: no process start per call, so a call costs about what
a fork of a warm interpreter costs.

A call that runs out of its time, or kills its kernel (memory, a signal, `os._exit`), loses the
kernel's state, never the session: the supervisor kills everything of the session's uid and
starts a fresh kernel for the next call (`restarted` says so; /work is kept). When the session
ends the container is scrubbed exactly as after a program, or discarded if it cannot be.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from referee.sandbox.container import SandboxContainer, StreamLost
from referee.sandbox.hardening import CANDIDATE_ENV
from referee.sandbox.protocol import SandboxUnavailable

# How a call ended. `ok` and `error` (an exception in the code) keep the kernel's state; the
# others cost it (the next call runs in a fresh kernel, `restarted` set on this outcome).
CallStatus = Literal["ok", "error", "timeout", "memory_limit_exceeded", "killed"]

SESSION_LANGUAGES = ("python", "bash")
# Files given at creation: at most this many, this large in all (they travel in one request).
MAX_SESSION_FILES = 64
MAX_SESSION_FILES_BYTES = 8 << 20
# A call's wall-clock backstop is this many times its time (the supervisor's BACKSTOP_FACTOR:
# the node's load is given back up to it); on top of it the host allows CALL_SLACK_S for the
# kill, the reaping and a fresh kernel's start before it gives up on the supervisor.
CALL_BACKSTOP_FACTOR = 3.0
CALL_SLACK_S = 15.0


def call_wait_s(time_s: float) -> float:
    """How long the host waits for the answer to a call of `time_s` (its longest honest run)."""
    return CALL_BACKSTOP_FACTOR * time_s + CALL_SLACK_S


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Per call (time, output) and per session (CPU over its life, memory, files)."""

    call_time_s: float = 10.0
    session_cpu_s: float = 600.0
    memory_mb: int = 512
    output_bytes: int = 64 << 10  # stdout and stderr each, per call; the rest is cut
    value_bytes: int = 16 << 10  # the repr of the last expression
    file_size_mb: int = 32
    open_files: int = 256


@dataclass(frozen=True, slots=True)
class SessionSpec:
    language: str = "python"
    limits: SessionLimits = field(default_factory=SessionLimits)
    # Placed in the work dir before the first call (relative paths, no `..`).
    files: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CallOutcome:
    status: CallStatus
    stdout: str = ""
    stderr: str = ""
    value: str | None = None  # repr of the last expression, as a notebook cell shows it
    error: str | None = None  # the exception's traceback (status error) or why it ended
    duration_s: float = 0.0
    truncated: bool = False  # stdout, stderr or value was cut at its cap
    restarted: bool = False  # the kernel's state was lost; the next call starts afresh


class SessionClosed(RuntimeError):
    """The session ended (closed, or its container was lost): start a new one."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def session_request(spec: SessionSpec) -> bytes:
    """The request line that turns a warm supervisor into a session's."""
    lim = spec.limits
    req = {
        "mode": "session",
        "language": spec.language,
        "files": {name: _b64(data) for name, data in spec.files.items()},
        "session_cpu_s": lim.session_cpu_s,
        "memory_mb": lim.memory_mb,
        "output_bytes": lim.output_bytes,
        "value_bytes": lim.value_bytes,
        "file_size_mb": lim.file_size_mb,
        "open_files": lim.open_files,
        "env": dict(CANDIDATE_ENV),
    }
    return json.dumps(req, separators=(",", ":")).encode() + b"\n"


class SandboxSession:
    """A session's container, held until `close()`. One call at a time (callers queue)."""

    def __init__(self, container: SandboxContainer, spec: SessionSpec, release: Any) -> None:
        self.container = container
        self.spec = spec
        self.calls = 0
        self.restarts = 0
        self.created = time.monotonic()
        self._release = release  # async (container, reusable: bool) -> None, the pool's
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def open(self, timeout_s: float) -> None:
        """Send the session request and wait for the kernel to be up."""
        await self.container.send(session_request(self.spec))
        msg = await self._next(timeout_s)
        if msg.get("type") != "session":
            raise StreamLost(f"the supervisor did not open the session: {str(msg)[:200]}")

    async def _next(self, timeout_s: float) -> dict[str, Any]:
        async for msg in self.container.messages(time.monotonic() + timeout_s):
            if msg.get("type") == "error":
                raise StreamLost(f"supervisor error: {msg.get('message')}"[:300])
            return msg
        raise StreamLost("the container's stream ended")

    async def run(self, code: str, time_s: float | None = None) -> CallOutcome:
        """Run `code` in the session's kernel. Raises SessionClosed once the session ended,
        SandboxUnavailable when its container was lost (the session then ends too)."""
        limit = self.spec.limits.call_time_s if time_s is None else min(time_s, self.spec.limits.call_time_s)
        async with self._lock:
            if self._closed:
                raise SessionClosed("the session is closed")
            self.calls += 1
            line = {"op": "run", "code": _b64(code.encode("utf-8", "surrogatepass")), "time_s": limit}
            try:
                await self.container.send(json.dumps(line).encode() + b"\n")
                msg = await self._next(call_wait_s(limit))
            except StreamLost as exc:
                await self._end(reusable=False)
                raise SandboxUnavailable(f"the session's container was lost: {exc}") from exc
            if msg.get("type") != "result":
                await self._end(reusable=False)
                raise SandboxUnavailable(f"unexpected supervisor message {str(msg)[:200]}")
            outcome = CallOutcome(
                status=msg["status"],
                stdout=base64.b64decode(msg.get("stdout") or "").decode("utf-8", "replace"),
                stderr=base64.b64decode(msg.get("stderr") or "").decode("utf-8", "replace"),
                value=msg.get("value"),
                error=msg.get("error"),
                duration_s=float(msg.get("duration_s") or 0.0),
                truncated=bool(msg.get("truncated")),
                restarted=bool(msg.get("restarted")),
            )
            if outcome.restarted:
                self.restarts += 1
            if msg.get("unclean"):  # the kernel could not be restarted cleanly: end it here
                await self._end(reusable=False)
            return outcome

    async def close(self) -> None:
        """End the session: the supervisor scrubs the container for the pool, or it is
        removed. Idempotent."""
        async with self._lock:
            if not self._closed:
                await self._end(reusable=True)

    async def _end(self, *, reusable: bool) -> None:
        self._closed = True
        if reusable:
            try:
                await self.container.send(b'{"op":"end"}\n')
            except StreamLost:
                reusable = False
        await self._release(self.container, reusable)
