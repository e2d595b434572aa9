"""A stand-in for the sandbox's code sessions (`SandboxPool.open_session`), for tests of what
sits above them (`referee.sessions`, the `/v1/sessions` routes) without Docker.

`FakeSandbox.open_session(spec)` gives a `FakeSession` with `SandboxSession`'s methods. Its
"kernel" understands a few words instead of Python (nothing is evaluated):

- `set NAME VALUE`: keep VALUE under NAME (the kernel's state); `get NAME`: its value, as the
  call's `value` (status `error` with a NameError when unset);
- `print TEXT`: TEXT on stdout; `wait`: block until the test sets `session.release`;
- `timeout`: status timeout, the state lost (`restarted`); `lose`: the container is lost
  (SandboxUnavailable); `unclean`: an outcome, after which the session has ended.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from referee.sandbox import CallOutcome, SandboxUnavailable, SessionClosed, SessionSpec


@dataclass
class FakeSession:
    spec: SessionSpec
    state: dict[str, str] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)  # set while a `wait` runs
    runs: list[tuple[str, float | None]] = field(default_factory=list)
    calls: int = 0
    restarts: int = 0
    close_calls: int = 0
    _closed: bool = False
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def closed(self) -> bool:
        return self._closed

    async def run(self, code: str, time_s: float | None = None) -> CallOutcome:
        async with self._lock:  # one call at a time, as the real session
            if self._closed:
                raise SessionClosed("the session is closed")
            self.calls += 1
            self.runs.append((code, time_s))
            word, _, rest = code.partition(" ")
            if word == "set":
                name, _, value = rest.partition(" ")
                self.state[name] = value
                return CallOutcome(status="ok")
            if word == "get":
                if rest not in self.state:
                    return CallOutcome(status="error", error=f"NameError: name {rest!r} is not defined")
                return CallOutcome(status="ok", value=repr(self.state[rest]))
            if word == "print":
                return CallOutcome(status="ok", stdout=rest + "\n")
            if word == "wait":
                self.started.set()
                await self.release.wait()
                self.started.clear()
                return CallOutcome(status="ok", value="'released'")
            if word == "timeout":
                self.state.clear()
                self.restarts += 1
                return CallOutcome(status="timeout", error="the call ran out of its time", restarted=True)
            if word == "lose":
                self._closed = True
                raise SandboxUnavailable("the session's container was lost: test")
            if word == "unclean":
                self._closed = True
                return CallOutcome(status="killed", restarted=True)
            return CallOutcome(status="error", error=f"SyntaxError: {code[:40]!r}")

    async def close(self) -> None:
        async with self._lock:
            self.close_calls += 1
            self._closed = True


@dataclass
class FakeSandbox:
    """`open_session` as the pool's: SandboxUnavailable while `unavailable`; `gate`, when set,
    holds every open until it is set (concurrent opens in flight)."""

    sessions: list[FakeSession] = field(default_factory=list)
    unavailable: bool = False
    gate: asyncio.Event | None = None
    opening: int = 0

    async def open_session(self, spec: SessionSpec) -> FakeSession:
        self.opening += 1
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.unavailable:
                raise SandboxUnavailable("no container could be started: test")
        finally:
            self.opening -= 1
        session = FakeSession(spec)
        self.sessions.append(session)
        return session

    @property
    def open_sessions(self) -> list[FakeSession]:
        return [s for s in self.sessions if not s.closed]
