"""Background client load for fault-injection tests: threads that call `step` until stopped."""

from __future__ import annotations

import threading

import httpx


class ThreadedLoad:
    """`clients` threads, each with its own httpx client, calling `step(http, i)` in a loop from
    `with` until its end; subclasses record what they saw."""

    def __init__(self, url: str, clients: int = 3, timeout_s: float = 120.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(clients)]

    def step(self, http: httpx.Client, i: int) -> None:
        raise NotImplementedError

    def _run(self, i: int) -> None:
        with httpx.Client(base_url=self.url, timeout=self.timeout_s) as http:
            while not self._stop.is_set():
                self.step(http, i)

    def __enter__(self) -> ThreadedLoad:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=180)
