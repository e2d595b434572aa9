"""One warm sandbox container and its attach stream.

The Docker SDK is blocking, so creating/starting/removing run in the pool's thread pool; the
attach stream itself is a raw socket driven by the event loop (no thread per submission).
We attach BEFORE starting, so no byte of the supervisor's output can be missed and the HTTP
layer has buffered nothing beyond the upgrade headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import time
from collections.abc import AsyncIterator
from typing import Any

STDOUT, STDERR = 1, 2
HEADER = struct.Struct(">BxxxL")


class StreamLost(Exception):
    """The supervisor's stream ended or broke before the run was finished."""


def _raw_socket(obj: Any) -> socket.socket:
    # docker-py returns a SocketIO (unix), an SSL/plain socket (tcp) or an npipe wrapper.
    seen = 0
    while not isinstance(obj, socket.socket) and seen < 5:
        obj = getattr(obj, "_sock", None) or getattr(obj, "raw", None)
        seen += 1
    if not isinstance(obj, socket.socket):
        raise RuntimeError("cannot drive the Docker attach stream asynchronously")
    return obj


class SandboxContainer:
    def __init__(self, container_id: str, sock: socket.socket) -> None:
        self.id = container_id
        self.sock = sock
        self.sock.setblocking(False)
        self._buf = bytearray()
        self._lines = bytearray()
        self.stderr_tail = bytearray()
        self.created = time.monotonic()
        self.runs = 0  # programs served
        self.memory_mb: int | None = None  # the container's memory limit as last set
        # What Docker's events said of it (set by the pool's listener): the engine was told to
        # kill it (`docker kill`, `rm -f`, an engine stopping), and it died or was removed.
        self.killed_by_engine = False
        self.ended = asyncio.Event()

    def alive(self) -> bool:
        """Cheap liveness (one non-blocking peek, ~1 µs, no Docker call): False once Docker said
        the container died, or once its attach stream is at its end or broken (the engine closes
        it within ~60 ms of the container dying or being removed)."""
        if self.ended.is_set():
            return False
        try:
            return bool(self.sock.recv(1, socket.MSG_PEEK))  # b"": end of stream
        except BlockingIOError:
            return True  # nothing to read: open, as an idle supervisor's stream is
        except OSError:
            return False  # reset, or closed by us

    @classmethod
    def create(cls, api: Any, create_kwargs: dict[str, Any]) -> SandboxContainer:
        """Blocking: create, attach, start. Run it in a thread."""
        cid = api.create_container(**create_kwargs)["Id"]
        try:
            raw = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            sock = _raw_socket(raw)
            api.start(cid)
        except BaseException:
            with contextlib.suppress(Exception):  # best effort: the stray sweep removes it otherwise
                api.remove_container(cid, force=True)
            raise
        return cls(cid, sock)

    async def _read_frames(self) -> bool:
        """Read more of the stream into the stdout line buffer. False at end of stream."""
        loop = asyncio.get_running_loop()
        chunk = await loop.sock_recv(self.sock, 1 << 18)
        if not chunk:
            return False
        self._buf += chunk
        while len(self._buf) >= HEADER.size:
            kind, size = HEADER.unpack_from(self._buf)
            if len(self._buf) < HEADER.size + size:
                break
            payload = self._buf[HEADER.size : HEADER.size + size]
            del self._buf[: HEADER.size + size]
            if kind == STDOUT:
                self._lines += payload
            elif kind == STDERR:
                self.stderr_tail += payload
                del self.stderr_tail[:-4096]
        return True

    async def messages(self, deadline: float) -> AsyncIterator[dict[str, Any]]:
        """Yield the supervisor's JSON messages until the stream ends or `deadline` passes."""
        while True:
            newline = self._lines.find(b"\n")
            if newline >= 0:
                line = bytes(self._lines[:newline])
                del self._lines[: newline + 1]
                try:
                    yield json.loads(line)
                except ValueError as exc:
                    raise StreamLost(f"unreadable supervisor message: {line[:200]!r}") from exc
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StreamLost("the supervisor did not answer in time")
            try:
                async with asyncio.timeout(remaining):  # no task per read, unlike wait_for
                    alive = await self._read_frames()
            except TimeoutError as exc:
                raise StreamLost("the supervisor did not answer in time") from exc
            except OSError as exc:
                raise StreamLost(f"attach stream broke: {exc}") from exc
            if not alive:
                tail = bytes(self.stderr_tail[-500:]).decode("utf-8", "replace")
                raise StreamLost("the container's stream ended" + (f": {tail}" if tail else ""))

    async def wait_ready(self, timeout_s: float) -> bool:
        """True when the supervisor is ready for a program; False when it reported that it
        cannot be (traces of the last program remain); StreamLost when it said nothing."""
        async for msg in self.messages(time.monotonic() + timeout_s):
            if msg.get("type") == "ready":
                return True
            if msg.get("type") == "unclean":
                return False
            raise StreamLost(f"unexpected message {str(msg)[:200]}")
        raise StreamLost("no ready message")

    async def send(self, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.sock_sendall(self.sock, data)
        except OSError as exc:
            raise StreamLost(f"cannot send the request: {exc}") from exc

    def close_stream(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
