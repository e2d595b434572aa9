"""What the tool and environment adapters share: where the service is, and closing what a
rollout opened when the trainer forgets the rollout.

A trainer's rollout (verl's `AgentData`, OpenRLHF's agent instance, TRL's environment) has no
"finished" hook the adapters can rely on: verl 0.9.1 creates and releases a tool instance
around every single call, OpenRLHF stops calling `step` when the token budget runs out. So a
session or episode is tied to the rollout's object: `close_when_dropped` ends it (a DELETE,
scheduled on the loop that opened it) once that object is garbage, and the service's idle TTL
(`idle_ttl_s`, short by default here) reclaims whatever a crashed worker leaves behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from referee.trainer_adapter import connections

# A rollout's session waits this long unused before the service reclaims it: longer than a
# generation turn, far shorter than the service's default (300 s), since a lost one pins a slot.
DEFAULT_IDLE_TTL_S = 120.0
DEFAULT_URL = "http://127.0.0.1:8000"

_closing: set[asyncio.Task[Any]] = set()  # strong references to the DELETEs in flight


@dataclass(frozen=True)
class ServiceConfig:
    """Where the service is and how the adapters' sessions are opened (the trainer's YAML, or
    `REFEREE_*` environment variables where the trainer passes no configuration)."""

    base_url: str = DEFAULT_URL
    api_key_env: str = "REFEREE_API_KEY"
    patience_s: float | None = None
    timeout_s: float = 120.0
    language: str = "python"
    limits: dict[str, Any] = field(default_factory=dict)
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S
    time_s: float | None = None  # each call's time (at most the session's call_time_s)

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any], ignore: frozenset[str] = frozenset()) -> ServiceConfig:
        """From a trainer's configuration; a key neither known nor in `ignore` (the trainer's
        own, as verl's `type`) is an error: a misspelt `base_url` must not reach the default."""
        known = {name for name in cls.__dataclass_fields__}
        unknown = sorted(set(config) - known - ignore)
        if unknown:
            raise ValueError(f"unknown Referee settings {unknown}; known: {sorted(known)}")
        values = dict(config)
        for key in ignore:
            values.pop(key, None)
        if "limits" in values:
            values["limits"] = dict(values["limits"] or {})
        return cls(**values)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceConfig:
        env = os.environ if environ is None else environ
        patience = env.get("REFEREE_PATIENCE_S")
        idle = env.get("REFEREE_IDLE_TTL_S")
        return cls(
            base_url=env.get("REFEREE_URL") or DEFAULT_URL,
            patience_s=float(patience) if patience else None,
            idle_ttl_s=float(idle) if idle else DEFAULT_IDLE_TTL_S,
        )

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def client(self) -> Any:
        """This process's and event loop's `AsyncClient` for the service."""
        patience = connections.Patience(patience_s=self.patience_s)
        return connections.async_client(self.base_url, self.api_key, patience, self.timeout_s)


def setting(name: str, default: str) -> str:
    """A `REFEREE_*` variable of the trainer's environment (for adapters built without arguments)."""
    return os.environ.get(name) or default


def close_when_dropped(owner: object, close: Callable[[], Awaitable[Any]]) -> weakref.finalize:
    """Run `close()` on the current loop once `owner` is garbage (`close` must not refer to
    `owner`, or it never is). Returns the finalizer; `detach()` it once closed otherwise."""
    return weakref.finalize(owner, _schedule, asyncio.get_running_loop(), close)


def _schedule(loop: asyncio.AbstractEventLoop, close: Callable[[], Awaitable[Any]]) -> None:
    if loop.is_closed():
        return  # the service's idle TTL reclaims it

    def start() -> None:
        task = loop.create_task(_quietly(close))
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    with contextlib.suppress(RuntimeError):  # closed in between
        loop.call_soon_threadsafe(start)


async def _quietly(close: Callable[[], Awaitable[Any]]) -> None:
    with contextlib.suppress(Exception):  # a service gone: its TTL reclaims what was open
        await close()
