"""The cluster watchdog (`referee.deploy.cluster_reaper`) without Ray: a fake driver starts a
fake cluster process (in a session of its own, ignoring SIGTERM, a log file open in the
"session directory", a child of its own with none) and the watchdog. When the driver is
SIGKILLed, the watchdog reaps the cluster, and spares the driver's own forked child, which
holds only the driver's files; on a normal close it exits and reaps nothing.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

import referee
from tests.timing import wait_until

psutil = pytest.importorskip("psutil", reason="needs the `ray` extra: pip install -e '.[ray]'")

# The module by its path, as the watchdog runs it: without `referee.deploy`, which imports Ray.
REAPER = Path(referee.__file__).with_name("deploy") / "cluster_reaper.py"
DRIVER = """
import importlib.util, os, subprocess, sys, time

session, mode, reaper = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("cluster_reaper", reaper)
sys.modules["cluster_reaper"] = module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
logs = os.path.join(session, "logs")
own = open(os.path.join(logs, "python-core-driver.log"), "ab")  # the driver's own file
cluster_code = (
    "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
    " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); time.sleep(600)"
)
with open(os.path.join(logs, "raylet.out"), "ab") as out:
    cluster = subprocess.Popen([sys.executable, "-c", cluster_code], stdout=out, start_new_session=True)
watchdog = module.start_watchdog(session, grace_s=1.0)
forked = os.fork()  # holds the driver's file and the write end of the watchdog's pipe
if forked == 0:
    time.sleep(600)
    os._exit(0)
print(cluster.pid, forked, watchdog.process.pid, flush=True)
if mode == "close":
    watchdog.stop()
    print("closed", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    return False


def _start_driver(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], list[int]]:
    """The fake driver and the pids of: the cluster process, its child, the driver's forked
    child, the watchdog."""
    (tmp_path / "logs").mkdir()
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path), mode, str(REAPER)], stdout=subprocess.PIPE, text=True
    )
    assert driver.stdout is not None
    cluster, forked, watchdog = (int(pid) for pid in driver.stdout.readline().split())
    wait_until(lambda: bool(psutil.Process(cluster).children()), 10, what="the cluster's child")
    (child,) = psutil.Process(cluster).children()
    return driver, [cluster, child.pid, forked, watchdog]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def test_the_watchdog_reaps_the_cluster_of_a_killed_driver(tmp_path: Path) -> None:
    driver, pids = _start_driver(tmp_path, "watch")
    cluster, child, forked, watchdog = pids
    try:
        driver.kill()  # its forked child keeps the pipe open: the watchdog sees its parent change
        driver.wait()
        wait_until(
            lambda: not any(map(_alive, (cluster, child, watchdog))), 15, interval_s=0.1, what="the reaping"
        )
        assert _alive(forked), "the driver's own child (only the driver's files) was reaped"
        log = (tmp_path / "logs" / "referee_cluster_watchdog.log").read_text()
        assert f"driver {driver.pid} died: reaping 2" in log
    finally:
        driver.kill()
        _kill(pids)


def test_the_watchdog_exits_on_a_normal_close_and_reaps_nothing(tmp_path: Path) -> None:
    driver, pids = _start_driver(tmp_path, "close")
    cluster, child, _forked, watchdog = pids
    try:
        assert driver.stdout is not None and driver.stdout.readline() == "closed\n"
        assert not _alive(watchdog)  # stop() waited for it
        driver.kill()
        driver.wait()
        assert _alive(cluster) and _alive(child)
    finally:
        driver.kill()
        _kill(pids)
