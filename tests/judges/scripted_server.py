"""A scripted chat-completions server on a loopback socket, for the judges' transport tests
(a context manager: `with ChatServer() as server:`).

The first path segment picks the behaviour (`/ok/v1/chat/completions`, `/fail/v1/...`), so one
server plays every endpoint a test configures. It records what it was sent (bodies, headers,
arrival times) and how many requests it held at once. A real server (the `transformers
serve` one) is tests/support/openai_server.py's; this one says exactly what a test needs it
to say, including what no real server would.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from referee.judges import JudgeClients
from referee.settings import JudgeSettings

API_KEY = "sk-test-0123456789-very-secret"
# How long /hang holds a request: far beyond any test's timeout.
HANG_S = 30.0
# How long /slow holds a request: long enough for concurrent requests to overlap.
SLOW_S = 0.3

# 200 answers that are not chat completions, by path (each must be a `bad_reply`).
MALFORMED: dict[str, bytes] = {
    "not-json": b"<html>502 Bad Gateway</html>",
    "a-list": b"[1, 2, 3]",
    "no-choices": json.dumps({"id": "x", "object": "chat.completion"}).encode(),
    "empty-choices": json.dumps({"choices": []}).encode(),
    "null-content": json.dumps({"choices": [{"message": {"role": "assistant", "content": None}}]}).encode(),
    "number-content": json.dumps({"choices": [{"message": {"content": 7}}]}).encode(),
    "no-message": json.dumps({"choices": [{"text": "legacy completion"}]}).encode(),
    "bad-usage": json.dumps(
        {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": "12"}}
    ).encode(),
    "error-object": json.dumps({"error": {"message": "model overloaded", "type": "server"}}).encode(),
}


def completion(text: str, *, model: str = "judge-model", usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return body


@dataclass
class Seen:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float


@dataclass
class ChatServer:
    """Behaviours (the first path segment):
    ok: a completion whose text is the last message's content, with usage;
    nousage: the same without usage; slow: `ok` after SLOW_S; hang: no answer for HANG_S;
    fail: 500; switch: 500 while `down`, else `ok`; limited: 429 + Retry-After `retry_after`
    on every odd request, else `ok`; refuse: 400 with an OpenAI error; echo-auth: 401 whose
    body repeats the Authorization header; reset: the connection closed without an answer;
    malformed-<name>: the MALFORMED body with 200."""

    hits: Counter[str] = field(default_factory=Counter)
    seen: list[Seen] = field(default_factory=list)
    down: bool = True
    retry_after: str = "1"
    active: int = 0
    most_active: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                behaviour = self.path.strip("/").split("/")[0]
                with owner.lock:
                    owner.hits[behaviour] += 1
                    count = owner.hits[behaviour]
                    owner.seen.append(
                        Seen(
                            self.path,
                            json.loads(raw),
                            {k.lower(): v for k, v in self.headers.items()},
                            time.monotonic(),
                        )
                    )
                    owner.active += 1
                    owner.most_active = max(owner.most_active, owner.active)
                try:
                    self.behave(behaviour, count, json.loads(raw))
                finally:
                    with owner.lock:
                        owner.active -= 1

            def behave(self, behaviour: str, count: int, body: dict[str, Any]) -> None:
                echo = body["messages"][-1]["content"]
                if behaviour == "slow":
                    time.sleep(SLOW_S)
                elif behaviour == "hang":
                    owner.release.wait(HANG_S)
                    return
                if behaviour == "ok" or behaviour == "slow" or (behaviour == "switch" and not owner.down):
                    return self.answer(200, completion(echo))
                if behaviour == "nousage":
                    return self.answer(200, completion(echo, usage=False))
                if behaviour in ("fail", "switch"):
                    return self.answer(500, {"error": {"message": "CUDA out of memory"}})
                if behaviour == "limited":
                    if count % 2 == 1:
                        return self.answer(429, {"error": "slow down"}, {"retry-after": owner.retry_after})
                    return self.answer(200, completion(echo))
                if behaviour == "refuse":
                    message = "This model's maximum context length is 4096 tokens"
                    return self.answer(400, {"error": {"message": message, "type": "invalid_request_error"}})
                if behaviour == "echo-auth":
                    return self.answer(
                        401, {"error": {"message": f"bad key: {self.headers['authorization']}"}}
                    )
                if behaviour == "reset":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                if behaviour.startswith("malformed-"):
                    return self.send_raw(200, MALFORMED[behaviour.removeprefix("malformed-")])
                return self.answer(404, {"detail": "Not Found"})

            def answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                self.send_raw(status, json.dumps(body).encode(), headers)

            def send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def url(self, behaviour: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{behaviour}/v1"

    def bodies(self, behaviour: str) -> list[dict[str, Any]]:
        return [s.body for s in self.seen if s.path.startswith(f"/{behaviour}/")]

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def judge_settings(endpoints: dict[str, dict[str, Any]], **section: Any) -> JudgeSettings:
    defaults = {"model": "judge-model", "api_key": API_KEY, "timeout_s": 5.0, "retries": 2}
    full = {name: {**defaults, **endpoint} for name, endpoint in endpoints.items()}
    return JudgeSettings.model_validate({"endpoints": full, **section})


def clients(endpoints: dict[str, dict[str, Any]], **kwargs: Any) -> JudgeClients:
    """Clients of `endpoints` (name -> endpoint fields) with short backoffs."""
    return JudgeClients(judge_settings(endpoints), **{"backoff_s": 0.01, **kwargs})
