"""`referee serve` as a child process that a test can kill and start again on the same port:
what a trainer's client sees when the service restarts under it (issue 27)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import httpx

from referee.service.background import free_port
from tests.timing import wait_until, within


class ServiceProcess:
    """`with ServiceProcess(tmp_path) as service:` a ready service at `service.url` (no
    sandbox); `service.restart_in_background(delay_s)` kills it at once (SIGKILL: no graceful
    end for requests in flight) and starts it again after `delay_s`."""

    def __init__(self, state_dir: Path, **env: str) -> None:
        """`env`: settings over these defaults (the sandbox on, say, as bench_faults runs it)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "REFEREE_PORT": str(self.port),
            "REFEREE_WORKERS": "1",
            "REFEREE_SANDBOX": "false",
            "REFEREE_DB_PATH": str(state_dir / "referee.db"),
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.restarted = threading.Event()
        self._restarter: threading.Thread | None = None

    def start(self, wait: bool = True, ready_within_s: float = 60.0) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "referee", "serve"], env=self.env)
        if wait:
            wait_until(
                self.ready, within(ready_within_s), interval_s=0.1, what="referee serve to become ready"
            )

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def restart_in_background(self, delay_s: float) -> None:
        """Kill the service now; start it again `delay_s` later (without waiting for it to be
        ready: the clients are the ones that wait). `restarted` is set once it is started."""
        self.kill()

        def later() -> None:
            time.sleep(delay_s)
            self.start(wait=False)
            self.restarted.set()

        self._restarter = threading.Thread(target=later, name="referee-restart", daemon=True)
        self._restarter.start()

    def stop(self) -> None:
        if self._restarter is not None:
            self._restarter.join(timeout=60)
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    def __enter__(self) -> ServiceProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def score_through_a_restart(
    service: ServiceProcess,
    step: Callable[[int], None],
    delay_s: float,
    *,
    steps_before: int = 3,
    steps_after: int = 3,
) -> int:
    """Call `step(0)`, `step(1)`, ... back to back in a thread (a trainer's steps; each checks
    its own rewards) while the service is killed after `steps_before` steps, and started again
    `delay_s` later; stop `steps_after` steps after the restart. Any exception of a step is
    raised here. Returns the number of steps."""
    done = 0
    failure: list[BaseException] = []
    stop = threading.Event()

    def trainer() -> None:
        nonlocal done
        try:
            while not stop.is_set():
                step(done)
                done += 1
        except BaseException as exc:  # handed to the test below
            failure.append(exc)

    thread = threading.Thread(target=trainer, name="trainer", daemon=True)
    thread.start()
    wait_until(lambda: done >= steps_before or bool(failure), within(60), what="the first steps")
    service.restart_in_background(delay_s)  # mid-run: a step is most likely in flight
    wait_until(lambda: service.restarted.is_set(), within(60) + delay_s, what="the restart")
    after = done
    wait_until(
        lambda: done >= after + steps_after or bool(failure) or not thread.is_alive(),
        within(120),
        what="steps after the restart",
    )
    stop.set()
    thread.join(timeout=within(120))
    if failure:
        raise failure[0]
    return done
