"""Teardown of the local cluster `referee serve --ray` starts (`RayConnection.close`): no process
of the run outlives it, not even one that ignores SIGTERM (issue 27: Ray agents alive > 3 min
after `ray.shutdown` in one run of two).

Every process of this run is told apart from other Ray processes on the machine (other test
runs) by a marker in its environment, inherited from this process by everything Ray starts; the
check reads `/proc/<pid>/environ` of every process, independently of how teardown finds them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

ray = pytest.importorskip("ray", reason="needs the `ray` extra: pip install -e '.[ray]'")
pytest.importorskip("ray.serve", reason="needs the `ray` extra: pip install -e '.[ray]'")

from referee.deploy import run  # noqa: E402
from referee.deploy.ray_serve import RayConnection  # noqa: E402
from referee.service.background import free_port  # noqa: E402
from referee.settings import Settings  # noqa: E402

pytestmark = pytest.mark.slow

AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")
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


@ray.remote(num_cpus=0)
def _start_stubborn_child() -> int:
    """A child of a Ray worker that ignores SIGTERM in a session of its own, as the agents that
    outlived `ray.shutdown` did."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True).pid


def test_close_leaves_no_process_of_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, run_id)
    db = Path(tempfile.mkdtemp(prefix="referee-ray-teardown-")) / "referee.db"
    ray_shape = {"replicas": 1, "num_cpus": 0.5, "http_port": free_port(), "teardown_grace_s": 3}
    settings = Settings(ray=ray_shape, workers=1, sandbox=False, db_path=str(db))
    connection = RayConnection(settings.ray, include_dashboard=False, num_cpus=2, log_to_driver=False)
    connection.start()
    try:
        assert connection.started_cluster
        run(settings)  # a replica with its worker pool
        stubborn = ray.get(_start_stubborn_child.remote())
        session_dir = ray._private.worker._global_node.get_session_dir_path()
        marked = _marked(run_id, session_dir)
        assert stubborn in marked and "raylet" in marked.values() and "gcs_server" in marked.values()
        assert any(name.startswith("ray::ServeReplica") for name in marked.values()), marked
        # Hung agents: stopped, they cannot act on the SIGTERM they get, nor notice that their
        # raylet is gone.
        agents = [pid for pid, name in marked.items() if name.startswith(AGENTS)]
        assert len(agents) == 2, sorted(marked.values())
        for pid in agents:
            os.kill(pid, signal.SIGSTOP)
    finally:
        connection.close()
    # close() returns once every process it found is gone; give the kernel a moment to drop
    # the last zombies of processes whose parents already exited.
    deadline = time.monotonic() + 10
    while (left := _marked(run_id, session_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"processes of the run left after teardown: {left}"
