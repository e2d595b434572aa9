"""A code session's tool call round trip, against the two ways it could be done instead.

    .venv/bin/python -m bench.bench_sessions [--calls 400]

The same small cell (`n += 1; n`: state kept, a value returned) is run, in one process:
- `fork`: the floor. A warm Python interpreter on the host (its own small process) forks a
  child per call, which runs the cell and sends its value back over a pipe: what a zygote
  does, with no sandbox, no container and no HTTP;
- `docker_exec`: a bare `docker exec python3 -c ...` in a sandbox container per call (what a
  session without a kept kernel would cost; state could not even be kept);
- `session`: `SandboxSession.run` through the pool (attach stream, supervisor, kernel);
- `http`: `POST /v1/sessions/{id}/run` against `referee serve` (what a trainer's tool sees),
  beside `GET /livez` on the same server: the floor of the HTTP stack itself.
Printed as p50/p99 and as ratios to `fork` (the issue's goal: the session within 2x the fork).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

import httpx

from bench._common import emit, summarize, uvicorn_server
from referee.sandbox import SandboxPool, SandboxSettings, SessionSpec
from referee.sandbox.image import build_image

CELL = "n += 1\nn"


# A warm interpreter of its own (nothing imported beyond what it needs), forking a child per
# request line; the child runs the cell in the namespace it inherited and writes the value.
FORK_SERVER = r"""
import os, sys
namespace = {"n": 0}
code = compile(sys.argv[1], "<cell>", "exec")
for line in sys.stdin.buffer:
    namespace["n"] = int(line)
    pid = os.fork()
    if pid == 0:
        exec(code, namespace)
        os.write(1, repr(namespace["n"]).encode() + b"\n")
        os._exit(0)
    os.waitpid(pid, 0)
"""


def fork_calls(calls: int) -> list[float]:
    cell = CELL.replace("\nn", "")  # the value is written by the child itself
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", FORK_SERVER, cell], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    times = []
    try:
        for i in range(calls):
            start = time.perf_counter()
            proc.stdin.write(f"{i}\n".encode())
            proc.stdin.flush()
            value = proc.stdout.readline()
            times.append(time.perf_counter() - start)
            assert value.strip() == str(i + 1).encode(), value
    finally:
        proc.stdin.close()
        proc.wait(10)
    return times


def docker_exec_calls(pool: SandboxPool, container_id: str, calls: int) -> list[float]:
    api = pool._client.api  # the bench's look behind the pool: the same engine connection
    times = []
    for i in range(calls):
        start = time.perf_counter()
        exec_id = api.exec_create(
            container_id, ["python3", "-I", "-c", f"n = {i}\nn += 1\nprint(n)"], user="65534"
        )
        out = api.exec_start(exec_id)
        times.append(time.perf_counter() - start)
        assert out.strip() == str(i + 1).encode(), out
    return times


async def session_calls(pool: SandboxPool, calls: int) -> tuple[list[float], list[float]]:
    """The session's round trips, then bare `docker exec`s in the same container."""
    session = await pool.open_session(SessionSpec())
    await session.run("n = 0")
    times = []
    for i in range(calls):
        start = time.perf_counter()
        out = await session.run(CELL)
        times.append(time.perf_counter() - start)
        assert out.value == str(i + 1), out
    exec_times = await asyncio.to_thread(docker_exec_calls, pool, session.container.id, max(20, calls // 10))
    await session.close()
    return times, exec_times


def http_calls(url: str, calls: int) -> tuple[list[float], list[float]]:
    """Session calls over HTTP, then as many `GET /livez` (the HTTP stack's own floor)."""
    times, floor = [], []
    with httpx.Client(base_url=url, timeout=60) as client:
        opened = client.post("/v1/sessions", json={"language": "python"})
        opened.raise_for_status()
        session = opened.json()["id"]
        client.post(f"/v1/sessions/{session}/run", json={"code": "n = 0"}).raise_for_status()
        for i in range(calls):
            start = time.perf_counter()
            response = client.post(f"/v1/sessions/{session}/run", json={"code": CELL})
            times.append(time.perf_counter() - start)
            response.raise_for_status()
            assert response.json()["value"] == str(i + 1), response.text
        client.delete(f"/v1/sessions/{session}")
        for _ in range(calls):
            start = time.perf_counter()
            client.get("/livez").raise_for_status()
            floor.append(time.perf_counter() - start)
    return times, floor


async def in_process(calls: int) -> tuple[list[float], list[float]]:
    settings = SandboxSettings(pool_size=1, instance="bench-sessions")
    build_image(settings, log=lambda _msg: None)
    pool = SandboxPool(settings)
    await pool.start()
    try:
        assert await pool.until_warm(1)
        return await session_calls(pool, calls)
    finally:
        await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    fork = summarize(fork_calls(args.calls))
    session_times, exec_times = asyncio.run(in_process(args.calls))
    session, docker_exec = summarize(session_times), summarize(exec_times)
    with uvicorn_server(REFEREE_SANDBOX_POOL_SIZE="2", REFEREE_SANDBOX_INSTANCE="bench-sessions-http") as url:
        http_times, floor_times = http_calls(url, args.calls)
    http, http_floor = summarize(http_times), summarize(floor_times)

    def ratio(result: dict[str, float], key: str) -> float:
        return round(result[key] / max(fork[key], 1e-9), 2)

    emit(
        "sessions",
        {
            "cell": CELL,
            "fork": fork,
            "docker_exec": docker_exec,
            "session": session,
            "http": http,
            "http_livez": http_floor,
            "session_over_fork_p50": ratio(session, "median_ms"),
            "session_over_fork_p99": ratio(session, "p99_ms"),
            "http_over_fork_p50": ratio(http, "median_ms"),
            "http_over_fork_p99": ratio(http, "p99_ms"),
            "docker_exec_over_fork_p50": ratio(docker_exec, "median_ms"),
            # What the session route adds to the HTTP stack's own round trip, over the fork.
            "http_minus_livez_over_fork_p50": round(
                (http["median_ms"] - http_floor["median_ms"]) / max(fork["median_ms"], 1e-9), 2
            ),
        },
    )


if __name__ == "__main__":
    main()
