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
    with uvicorn_process(**env) as (url, _proc):
        yield url


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (the service and its workers), MB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total_kb, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            with open(f"/proc/{current}/status") as handle:
                total_kb += next((int(line.split()[1]) for line in handle if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
    return total_kb / 1024


@contextmanager
def uvicorn_process(**env: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`referee serve` as its own process: (its URL, the process)."""
    port = free_port()
    full_env = {**os.environ, "REFEREE_PORT": str(port), "REFEREE_LOG_LEVEL": "warning", **env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve"], env=full_env, stdout=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    """Until `url`'s /readyz answers 200; RuntimeError if the process exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("referee serve did not become ready")
        time.sleep(0.2)


def emit(name: str, result: dict) -> None:
    print(json.dumps({"bench": name, **result}, indent=2))
