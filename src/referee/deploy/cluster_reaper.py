"""The processes of a Ray cluster started here, found and reaped, even after the process that
started it (the driver) is gone.

Every process of a local cluster holds a file open in the cluster's session directory (GCS,
raylet and agents their logs, workers their redirected output, which their own children
inherit), so that directory names them all, orphans included, whoever their parent is by now.
The driver holds a few too (its core-worker logs, inheritable), so a process holding nothing
there but the driver's files is one of the driver's own children, not the cluster's.

`start_watchdog` starts this file as a process of its own (standard library and psutil only, so
it starts without Ray, in a session of its own so that a signal to the driver's process group
spares it). It waits for the driver's death, seen as its parent changing or as EOF on a pipe
whose write end only the driver holds, then reaps the cluster: Ray kills the GCS and the raylet
with the driver (parent-death signal), but leaves their agents and workers to notice for
themselves, which a hung one never does. A normal close tells it to exit without reaping.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import psutil

WATCHDOG_LOG = "referee_cluster_watchdog.log"  # in the session's logs/, next to Ray's own
POLL_S = 1.0  # how often the watchdog checks that its parent is still the driver
_CLOSED = b"c"  # what the driver writes on a normal close: exit without reaping


def _files_under(process: psutil.Process, prefix: str) -> set[str]:
    return {f.path for f in process.open_files() if f.path.startswith(prefix)}


def _prefix(session_dir: str) -> str:
    return os.path.join(os.path.realpath(session_dir), "")


def driver_files(session_dir: str, pid: int | None = None) -> set[str]:
    """The files under `session_dir` that process `pid` (this one by default) holds open."""
    with contextlib.suppress(psutil.Error):
        return _files_under(psutil.Process(pid), _prefix(session_dir))
    return set()


def session_processes(
    session_dir: str, ignored_files: Collection[str] = (), exclude: Collection[int] = ()
) -> list[psutil.Process]:
    """Every process holding a file under `session_dir` other than `ignored_files` (the driver's),
    and all their descendants; none of the pids in `exclude`."""
    prefix = _prefix(session_dir)
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter():
        if process.pid in exclude or process.pid in found:
            continue
        with contextlib.suppress(psutil.Error):
            if _files_under(process, prefix) - set(ignored_files):
                for member in [process, *process.children(recursive=True)]:
                    found[member.pid] = member
    return [process for pid, process in found.items() if pid not in exclude]


def reap(processes: Iterable[psutil.Process], grace_s: float) -> None:
    """SIGTERM what is still running of `processes`, SIGKILL what is left after `grace_s`.

    psutil.Process compares start times, so a pid reused since the process was found is not hit.
    A stopped (SIGSTOPped, hung in a debugger) process cannot act on SIGTERM until continued:
    SIGCONT follows it, so that it gets its grace like the others."""
    unique = list({process.pid: process for process in processes}.values())
    for process in unique:
        with contextlib.suppress(psutil.Error):
            process.terminate()
            process.resume()
    _gone, alive = psutil.wait_procs(unique, timeout=grace_s)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=5.0)


@dataclass
class Watchdog:
    """The driver's side of a watchdog process: `stop()` on a normal close."""

    process: subprocess.Popen[bytes]
    write_end: int

    def stop(self, timeout_s: float = 10.0) -> None:
        """Tell the watchdog the cluster was closed normally and wait for it to exit."""
        if self.write_end >= 0:
            with contextlib.suppress(OSError):
                os.write(self.write_end, _CLOSED)
            os.close(self.write_end)
            self.write_end = -1
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_watchdog(session_dir: str, grace_s: float) -> Watchdog:
    """Start the watchdog of the cluster of `session_dir`, driven by this process."""
    # os.pipe's ends are not inherited across exec: only this process (and children it forks)
    # holds the write end, so EOF on the read end means it died.
    read_end, write_end = os.pipe()
    log_path = os.path.join(session_dir, "logs", WATCHDOG_LOG)
    # -P: not this package's directory first on sys.path, where its modules could shadow others.
    command = [sys.executable, "-P", os.path.abspath(__file__), session_dir]
    command += ["--driver", str(os.getpid()), "--fd", str(read_end), "--grace-s", str(grace_s)]
    # Its files now, in case it dies before the watchdog first reads them.
    command += [f"--driver-file={path}" for path in sorted(driver_files(session_dir))]
    try:
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                command,
                pass_fds=[read_end],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return Watchdog(process, write_end)


def watch(
    session_dir: str, driver_pid: int, read_end: int, grace_s: float, held: Collection[str] = ()
) -> bool:
    """Wait for the driver's death or its normal close; on death, reap the cluster. True when
    it reaped. `held`: the files under `session_dir` the driver held when it started us."""
    while True:
        # Refreshed while the driver lives: its files cannot be read once it is dead.
        held = driver_files(session_dir, driver_pid) or held
        readable, _, _ = select.select([read_end], [], [], POLL_S)
        if readable:
            if os.read(read_end, 1) == _CLOSED:
                return False
            break  # EOF: every holder of the write end is gone
        if os.getppid() != driver_pid:
            break  # the driver died; a child it forked may still hold the write end
    processes = session_processes(session_dir, held, exclude={os.getpid()})
    print(f"{time.strftime('%F %T')} driver {driver_pid} died: reaping {len(processes)}", flush=True)
    reap(processes, grace_s)
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Reap a local Ray cluster when its driver dies.")
    parser.add_argument("session_dir")
    parser.add_argument("--driver", type=int, required=True, help="pid of the driver (our parent)")
    parser.add_argument("--fd", type=int, required=True, help="read end of the driver's pipe")
    parser.add_argument("--grace-s", type=float, default=10.0, help="seconds after SIGTERM")
    parser.add_argument("--driver-file", action="append", default=[], help="a file the driver holds")
    args = parser.parse_args(argv)
    # SIGINT to a terminal's foreground group (Ctrl-C) is the driver's to handle; the watchdog,
    # in its own session, would not get it anyway. SIGTERM still ends it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(args.session_dir, args.driver, args.fd, args.grace_s, set(args.driver_file))


if __name__ == "__main__":
    main()
