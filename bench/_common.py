"""Shared benchmark helpers: timing statistics and a real uvicorn server in a subprocess."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def summarize(seconds: Sequence[float]) -> dict[str, float]:
    """Latency figures in milliseconds."""
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(p99 * 1000, 3),
        "max_ms": round(ordered[-1] * 1000, 3),
    }


@contextmanager
def uvicorn_server(**env: str) -> Iterator[str]:
    """`referee serve` as its own process (a real deployment's shape: no shared GIL)."""
    port = free_port()
    full_env = {**os.environ, "REFEREE_PORT": str(port), "REFEREE_LOG_LEVEL": "warning", **env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve"], env=full_env, stdout=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("referee serve did not become ready")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def emit(name: str, result: dict) -> None:
    print(json.dumps({"bench": name, **result}, indent=2))
