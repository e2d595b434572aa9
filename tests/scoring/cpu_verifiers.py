"""Verifiers for the CPU-time limits of worker checks (test_pool_cpu_time.py). A module of its
own, not a test module, so that worker processes import it cheaply to unpickle the index."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path
from typing import Any, ClassVar

from referee.verifiers.base import Check, Verifier


class CpuBurner(Verifier):
    """Uses the number of seconds of CPU time in the response (pure Python), then reports the
    worker's pid: a right answer that needs that much computation."""

    name = "test.cpu_burner"
    example: ClassVar[dict[str, Any]] = {"response": "0", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        until = time.process_time() + float(response)
        while time.process_time() < until:
            pass
        return Check(1.0, details={"pid": os.getpid()})


class OneCCall(Verifier):
    """Stretches a key with as many PBKDF2 rounds as the response says: one C call, in which no
    Python signal handler runs (~3 million rounds a second). Unlike a big-int power, which
    CPython interrupts between multiplications."""

    name = "test.one_c_call"
    example: ClassVar[dict[str, Any]] = {"response": "1", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        key = hashlib.pbkdf2_hmac("sha256", b"response", b"salt", int(response))
        return Check(1.0, details={"key": key.hex()})


class StopsOnce(Verifier):
    """The first time (the marker file named by the response is missing) it creates the marker
    and stops its own worker with SIGSTOP: a check the node keeps from every CPU. Afterwards it
    scores 1."""

    name = "test.stops_once"
    example: ClassVar[dict[str, Any]] = {"response": "", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        marker = Path(response)
        if response and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGSTOP)
        return Check(1.0, details={"pid": os.getpid()})


CPU_TEST_VERIFIERS = [CpuBurner, OneCCall, StopsOnce]
