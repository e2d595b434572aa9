"""Which sandbox containers are this service's: the label value that owns them.

Every container a service starts carries `org.referee.sandbox=<instance>`; at start-up a
service force-removes the containers of its own instance (what it left behind when it
crashed). So the value must be **unique among the services sharing a Docker engine** (else
the second service destroys the first one's containers, and the first keeps counting them as
warm) and **the same across one service's restarts** (else nobody ever sweeps a crashed
service's containers).

Unless REFEREE_SANDBOX_INSTANCE names one, a service claims a *slot* in its state directory:
slot N is an exclusive `flock` on `instance-N.lock` plus a random id in `instance-N.id`, made
once. A restarted service gets the lowest free slot again, so the same id (the kernel drops a
crashed process's lock); a second service running beside it finds slot 0 locked and takes
slot 1, another id. Services with different state directories (other machines or containers
sharing an engine through its socket) make different random ids. A service whose state
directory does not survive its restarts gets a new id each time: give it a volume, or set
REFEREE_SANDBOX_INSTANCE yourself (then unique per service is your job).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MAX_SLOTS = 64
_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass
class InstanceClaim:
    instance: str
    slot: int
    _lock: IO[str] | None

    def release(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()  # closing drops the flock
            self._lock = None


def claim_instance(state_dir: Path) -> InstanceClaim:
    """The lowest free slot of `state_dir` and its id (created on first use). Raises OSError
    when the directory cannot be used, RuntimeError when all MAX_SLOTS slots are taken."""
    state_dir.mkdir(parents=True, exist_ok=True)
    for slot in range(MAX_SLOTS):
        lock = (state_dir / f"instance-{slot}.lock").open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        try:
            return InstanceClaim(_slot_id(state_dir / f"instance-{slot}.id"), slot, lock)
        except BaseException:
            lock.close()
            raise
    raise RuntimeError(f"all {MAX_SLOTS} sandbox instance slots in {state_dir} are held by running services")


def _slot_id(path: Path) -> str:
    with contextlib.suppress(FileNotFoundError):
        value = path.read_text().strip()
        if _VALID.match(value):
            return value
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:24].strip("-.") or "host"
    value = f"{host}-{secrets.token_hex(6)}"
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(value + "\n")
    os.replace(tmp, path)  # we hold the slot's lock: nobody else writes this file
    return value
