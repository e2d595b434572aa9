"""Fixtures for registered verifier types: a service with its own database, a loopback webhook."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import within

WEBHOOK_SECRET = "s3cret-s3cret-s3cret"
# Encrypts webhook secrets at rest in the test services (fixed: tests reopen their databases).
SECRET_KEY = "rJjCr7pzpXZ6SbVNq7X0kCwMjmQ8sM4yJ5ZpW9rEQ7k="
# Per-attempt webhook timeout of the test services, and how long /slow takes to answer: far
# beyond every attempt and retry, so a call that returns sooner did not wait for the answer.
WEBHOOK_TIMEOUT_S = within(0.5)
SLOW_S = within(5.0)


def registered_settings(db_path: Path, **overrides: object) -> Any:
    base: dict[str, object] = {
        "db_path": db_path,
        "webhook_allowed_hosts": ["127.0.0.1"],
        # The loopback webhook of these tests: a private address, allowed explicitly.
        "webhook_allowed_networks": ["127.0.0.0/8"],
        "secret_keys": [SECRET_KEY],
        "webhook_timeout_s": WEBHOOK_TIMEOUT_S,
        "webhook_retries": 1,
        "webhook_breaker_failures": 3,
        "webhook_breaker_reset_s": 0.5,
    }
    base.update(overrides)
    return make_settings(**base)


def register(http: httpx.Client, body: dict[str, Any], **headers: str) -> httpx.Response:
    return http.post("/v1/verifiers", json=body, headers=headers)


def score(http: httpx.Client, verifier: str, response: str, reference: Any = None) -> dict[str, Any]:
    r = http.post("/v1/score", json={"verifier": verifier, "response": response, "reference": reference})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture(scope="module")
def db_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("referee-db")


@pytest.fixture(scope="module")
def service(db_dir: Path) -> Iterator[BackgroundServer]:
    with BackgroundServer(registered_settings(db_dir / "referee.db")) as running:
        yield running


@pytest.fixture()
def http(service: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, timeout=60) as c:
        yield c


class Webhook:
    """A loopback grading server. Paths choose its behaviour; it checks the HMAC signature."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.down = False  # /switch answers 500 while True
        self.hanging = False  # /switch answers only after SLOW_S while True
        self.bodies: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                path = self.path
                owner.hits[path] += 1
                signature = self.headers.get("x-referee-signature", "")
                if path != "/open" and not owner.signed(body, signature):
                    return self.answer(401, {"error": "bad signature"})
                payload = json.loads(body)
                owner.bodies.append({"path": path, **payload, "verifier": self.headers["x-referee-verifier"]})
                if path == "/fail" or (path == "/switch" and owner.down):
                    return self.answer(500, {"error": "boom"})
                if path == "/slow" or (path == "/switch" and owner.hanging):
                    time.sleep(SLOW_S)
                if path == "/garbage":
                    return self.answer(200, {"verdict": "yes"})
                if path == "/flaky" and owner.hits[path] % 2 == 1:
                    return self.answer(503, {"error": "try again"})
                words = set(payload["reference"]["words"])
                got = words & set(payload["response"].split())
                return self.answer(200, {"score": len(got) / len(words), "reason": f"{len(got)} words"})

            def answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def signed(body: bytes, header: str) -> bool:
        fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
        if "t" not in fields or abs(time.time() - int(fields["t"])) > 300:
            return False
        mac = hmac.new(
            WEBHOOK_SECRET.encode(), fields["t"].encode() + b"." + body, hashlib.sha256
        ).hexdigest()
        return hmac.compare_digest(mac, fields.get("v1", ""))

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    hook.thread.start()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()
