"""Verifiers that misbehave on purpose, to test the service's guarantees."""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

from referee.verifiers.base import Check, Verifier


class Sleepy(Verifier):
    """Sleeps for the number of seconds in the response (a stuck checker)."""

    name = "test.sleepy"
    reference_type = Any
    example: ClassVar[dict[str, Any]] = {"response": "0", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        time.sleep(float(response))
        return Check(1.0)


class Spinner(Verifier):
    """Burns CPU in pure Python for the number of seconds in the response."""

    name = "test.spinner"
    example: ClassVar[dict[str, Any]] = {"response": "0", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        deadline = time.monotonic() + float(response)
        while time.monotonic() < deadline:
            pass
        return Check(1.0)


class Crashing(Verifier):
    """Kills its own worker process when the response says so."""

    name = "test.crashing"
    example: ClassVar[dict[str, Any]] = {"response": "fine", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        if response == "crash":
            os._exit(3)
        return Check(1.0)


class Raising(Verifier):
    """A buggy verifier: raises on the response "boom"."""

    name = "test.raising"
    example: ClassVar[dict[str, Any]] = {"response": "fine", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        if response == "boom":
            raise RuntimeError("checker bug")
        return Check(1.0)


class Hungry(Verifier):
    """Allocates the number of MiB in the response."""

    name = "test.hungry"
    example: ClassVar[dict[str, Any]] = {"response": "1", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        block = bytearray(int(response) * 1024 * 1024)
        return Check(1.0, details={"bytes": len(block)})


class PrepareCounter(Verifier):
    """Reports how many times this worker process has prepared a reference, and its pid."""

    name = "test.prepare_counter"
    example: ClassVar[dict[str, Any]] = {"response": "x", "reference": "r", "expected_score": 1.0}
    prepared_count = 0

    def prepare(self, reference: Any, options: Any) -> Any:
        type(self).prepared_count += 1
        return reference

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        return Check(1.0, details={"prepares": type(self).prepared_count, "pid": os.getpid()})


class OutOfRange(Verifier):
    """Returns 2.0 although it declares [0, 1]: a verifier bug the service must catch."""

    name = "test.out_of_range"
    example: ClassVar[dict[str, Any]] = {"response": "ok", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        return Check(2.0 if response == "bad" else 1.0)


class NotANumber(Verifier):
    """A plugin bug: its score is not a number."""

    name = "test.not_a_number"
    example: ClassVar[dict[str, Any]] = {"response": "ok", "reference": None, "expected_score": 1.0}

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        return Check("high" if response == "bad" else 1.0)  # type: ignore[arg-type]


TEST_VERIFIERS = [NotANumber, Sleepy, Spinner, Crashing, Raising, Hungry, PrepareCounter, OutOfRange]
