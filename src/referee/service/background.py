"""Run a real uvicorn server in a background thread (tests, notebooks)."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn

from referee.runtime import Runtime
from referee.service.app import create_app
from referee.service.connections import server_config
from referee.settings import Settings


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class BackgroundServer:
    """`with BackgroundServer() as server: Client(server.url)`. Binds a free loopback port."""

    def __init__(
        self, settings: Settings | None = None, *, port: int | None = None, startup_timeout_s: float = 120.0
    ) -> None:
        base = settings or Settings()
        service = base.service.model_copy(update={"host": "127.0.0.1", "port": port or free_port()})
        self.settings = base.model_copy(update={"service": service})
        self._timeout = startup_timeout_s
        self.runtime = Runtime(self.settings)
        config = server_config(create_app(self.runtime), service, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="referee-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.settings.service.host}:{self.settings.service.port}"

    def start(self) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("referee server failed to start")
            if time.monotonic() > deadline:
                raise TimeoutError("referee server did not start in time")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
