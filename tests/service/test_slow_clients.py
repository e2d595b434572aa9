"""Slow and greedy clients against the real server (uvicorn with service/connections.py's
protocol, on a socket): half-open connections are dropped after the head timeout, a body that
trickles gets 408, one address cannot hold more than its share of connections, and through all
of it an honest client is answered at once."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from referee.service.background import BackgroundServer
from referee.settings import Settings
from tests.timing import within

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.5
PER_CLIENT = 40


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    settings = Settings(
        _env_file=None,
        workers=1,
        sandbox_enabled=False,
        header_timeout_s=HEADER_TIMEOUT_S,
        body_timeout_s=BODY_TIMEOUT_S,
        max_connections_per_client=PER_CLIENT,
    )
    with BackgroundServer(settings) as running:
        yield running


def _connect(server: BackgroundServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _closed_within(sock: socket.socket, bound_s: float) -> tuple[bool, bytes]:
    """(closed by the server within bound_s, what it sent before closing)."""
    sock.settimeout(0.1)
    received = b""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True, received
        if not chunk:
            return True, received
        received += chunk
    return False, received


def _score_ok(server: BackgroundServer) -> float:
    started = time.monotonic()
    r = httpx.post(
        f"{server.url}/v1/score",
        json={"verifier": "exact", "response": "4", "reference": "4"},
        timeout=30,
    )
    assert r.status_code == 200 and r.json()["score"] == 1.0, r.text
    return time.monotonic() - started


def test_half_open_connections_are_dropped_and_honest_clients_served(server: BackgroundServer) -> None:
    idle = [_connect(server) for _ in range(PER_CLIENT // 2)]
    partial = [_connect(server) for _ in range(PER_CLIENT // 4)]
    for sock in partial:  # a request line and some headers, never the blank line
        sock.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    try:
        # Honest requests are answered while the slow sockets are held.
        assert _score_ok(server) < within(5)
        for sock in [*idle, *partial]:
            closed, sent = _closed_within(sock, within(HEADER_TIMEOUT_S + 3))
            assert closed and sent == b"", sent
    finally:
        for sock in [*idle, *partial]:
            sock.close()


def test_a_head_sent_a_byte_at_a_time_is_cut_off(server: BackgroundServer) -> None:
    sock = _connect(server)
    try:
        started = time.monotonic()
        head = b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
        closed = False
        for byte in head:  # every 0.1 s: each byte well within any per-read timeout
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.1)
            if time.monotonic() - started > within(HEADER_TIMEOUT_S + 3):
                break
        if not closed:
            closed, _ = _closed_within(sock, 1.0)
        assert closed, "a head trickling for longer than header_timeout_s was kept"
        assert time.monotonic() - started < within(HEADER_TIMEOUT_S + 3)
    finally:
        sock.close()


def test_a_trickling_body_gets_408(server: BackgroundServer) -> None:
    sock = _connect(server)
    try:
        sock.sendall(
            b"POST /v1/score HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b'content-length: 1000\r\n\r\n{"verifier": '
        )
        closed, sent = _closed_within(sock, within(BODY_TIMEOUT_S + 3))
        assert closed and sent.startswith(b"HTTP/1.1 408 "), sent
        assert b'"error": "request_timeout"' in sent
    finally:
        sock.close()


def test_keep_alive_requests_are_not_cut_by_the_head_timeout(server: BackgroundServer) -> None:
    """One connection, requests further apart than nothing but within the keep-alive: each head
    gets its own clock."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for _ in range(3):
            assert client.get("/livez").status_code == 200
            time.sleep(HEADER_TIMEOUT_S * 0.8)


def test_one_address_holds_at_most_its_share(server: BackgroundServer) -> None:
    held = [_connect(server) for _ in range(PER_CLIENT)]
    try:
        time.sleep(0.2)  # the server has accepted them
        extra = _connect(server)
        closed, sent = _closed_within(extra, within(1.0))
        extra.close()
        assert closed and sent == b"", "a connection past the per-client bound was kept"
    finally:
        for sock in held:
            sock.close()
    # Their slots are free again once they are closed.
    deadline = time.monotonic() + within(5)
    while True:
        try:
            _score_ok(server)
            break
        except (httpx.TransportError, AssertionError):
            assert time.monotonic() < deadline
            time.sleep(0.1)
