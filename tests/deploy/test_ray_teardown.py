"""Teardown of the local cluster `referee serve --ray` starts: no process of the run outlives it
(issue 27: Ray agents alive > 3 min in one run of two), whether the driver closes it
(`RayConnection.close`, even with a hung raylet) or dies without closing (its watchdog,
`referee.deploy.cluster_reaper`).

Every process of this run is told apart from other Ray processes on the machine (other test
runs) by a marker in its environment, inherited from this process by everything Ray starts; the
check reads `/proc/<pid>/environ` of every process, independently of how teardown finds them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.timing import wait_until, within

ray = pytest.importorskip("ray", reason="needs the `ray` extra: pip install -e '.[ray]'")
pytest.importorskip("ray.serve", reason="needs the `ray` extra: pip install -e '.[ray]'")
psutil = pytest.importorskip("psutil", reason="needs the `ray` extra: pip install -e '.[ray]'")

from referee.deploy import run  # noqa: E402
from referee.deploy.ray_serve import RayConnection  # noqa: E402
from referee.service.background import free_port  # noqa: E402
from referee.settings import Settings  # noqa: E402

pytestmark = pytest.mark.slow

AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")
REPLICA = "ray::ServeRepli"  # a process name read from /proc/<pid>/comm has at most 15 characters
MARKER = "REFEREE_TEST_RAY_RUN"  # not a setting: Settings reads no REFEREE_TEST_* name


def _marked(run_id: str, session_dir: str) -> dict[int, str]:
    """pid -> name of the processes of this run: the marker in their environment, or (Ray's
    agents, whose process titles overwrite their environment) a file open in its session."""
    found = {}
    for process in psutil.process_iter(["pid", "name"]):
        if process.pid == os.getpid():
            continue
        try:
            if process.environ().get(MARKER) == run_id or any(
                f.path.startswith(session_dir) for f in process.open_files()
            ):
                found[process.pid] = process.info["name"]
        except psutil.Error:
            continue
    return found


def _kill_left(run_id: str, session_dir: str) -> None:
    """SIGKILL what a failed test left of its run, and only of its run (the marker)."""
    for pid in _marked(run_id, session_dir):
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def _stop_agents(marked: dict[int, str]) -> None:
    """Hung agents: stopped, they cannot act on the SIGTERM they get, nor notice that their
    raylet is gone, as the agents that outlived a run did."""
    agents = [pid for pid, name in marked.items() if name.startswith(AGENTS)]
    assert len(agents) == 2, sorted(marked.values())
    for pid in agents:
        os.kill(pid, signal.SIGSTOP)


@ray.remote(num_cpus=0)
def _start_stubborn_child() -> int:
    """A child of a Ray worker that ignores SIGTERM in a session of its own."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True).pid


def test_close_leaves_no_process_of_the_run_even_with_a_hung_raylet(monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, run_id)
    db = Path(tempfile.mkdtemp(prefix="referee-ray-teardown-")) / "referee.db"
    ray_shape = {"replicas": 1, "num_cpus": 0.5, "http_port": free_port(), "teardown_grace_s": 3}
    settings = Settings(ray=ray_shape, workers=1, sandbox=False, db_path=str(db))
    connection = RayConnection(
        settings.ray, shutdown_timeout_s=5, include_dashboard=False, num_cpus=2, log_to_driver=False
    )
    connection.start()
    session_dir = connection.session_dir or ""
    closing = threading.Thread(target=connection.close, daemon=True)
    try:
        assert connection.started_cluster
        run(settings)  # a replica with its worker pool
        stubborn = ray.get(_start_stubborn_child.remote())
        marked = _marked(run_id, session_dir)
        assert stubborn in marked and "raylet" in marked.values() and "gcs_server" in marked.values()
        assert any(name.startswith(REPLICA) for name in marked.values()), marked
        _stop_agents(marked)
        # A stopped raylet makes `ray.shutdown()` (and Serve's) wait forever.
        raylet = next(pid for pid, name in marked.items() if name == "raylet")
        os.kill(raylet, signal.SIGSTOP)
    finally:
        closing.start()
        # 5 s for the shutdown, 3 s of grace, a few to reap and scan: a generous bound.
        closing.join(within(60))
        hung = closing.is_alive()
        if hung:
            _kill_left(run_id, session_dir)
    assert not hung, "close() did not return with a stopped raylet"
    # close() returns once every process it found is gone (the watchdog, marked too, included);
    # give the kernel a moment to drop the last zombies of processes whose parents exited.
    deadline = time.monotonic() + 10
    while (left := _marked(run_id, session_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"processes of the run left after teardown: {left}"


def _session_dir_of(pid: int) -> str:
    """The session directory of a cluster process: where its logs are open."""
    for file in psutil.Process(pid).open_files():
        head, marker, tail = file.path.partition("/session_")
        if marker:
            return head + marker + tail.split("/", 1)[0]
    raise AssertionError(f"process {pid} holds no file in a Ray session")


def test_a_killed_driver_leaves_no_process_of_its_cluster(tmp_path: Path) -> None:
    """`referee serve --ray` SIGKILLed: Ray kills its GCS and raylet with it, and its watchdog
    the rest (agents, workers, replicas, their worker pools), hung agents included."""
    run_id = uuid.uuid4().hex
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env |= {
        MARKER: run_id,
        "REFEREE_RAY_ADDRESS": "local",  # a cluster of its own, even if a test runs another
        "REFEREE_RAY_REPLICAS": "1",
        "REFEREE_RAY_NUM_CPUS": "0.5",
        "REFEREE_RAY_HTTP_PORT": str(port),
        "REFEREE_RAY_TEARDOWN_GRACE_S": "3",
        "REFEREE_WORKERS": "1",
        "REFEREE_SANDBOX": "false",
        "REFEREE_DB_PATH": str(tmp_path / "referee.db"),
    }
    session_dir = str(tmp_path / "no-session-yet")
    with open(tmp_path / "serve.log", "wb") as log:
        driver = subprocess.Popen(
            [sys.executable, "-m", "referee", "serve", "--ray"], env=env, stdout=log, stderr=log
        )
    try:

        def ready() -> bool:
            assert driver.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
            return False

        wait_until(ready, 180, interval_s=0.5, what="referee serve --ray to be ready")
        marked = _marked(run_id, session_dir)
        session_dir = _session_dir_of(next(pid for pid, name in marked.items() if name == "gcs_server"))
        marked = _marked(run_id, session_dir)
        assert {"raylet", "gcs_server"} <= set(marked.values()), sorted(marked.values())
        assert any(name.startswith(REPLICA) for name in marked.values()), sorted(marked.values())
        _stop_agents(marked)
        driver.kill()
        driver.wait()
        # Within the watchdog's poll, the 3 s grace and its reaping: without it, the stopped
        # agents stay for good (and running ones linger ~1 min).
        wait_until(lambda: not _marked(run_id, session_dir), 30, interval_s=0.5, what="no process left")
    finally:
        driver.kill()
        left = _marked(run_id, session_dir)
        _kill_left(run_id, session_dir)
    assert not left
