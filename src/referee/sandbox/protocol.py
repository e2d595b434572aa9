"""What travels between the service and the in-container supervisor (host side types)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from referee.sandbox.checker_format import CheckerProgram, checker_budget_s
from referee.sandbox.hardening import CANDIDATE_ENV
from referee.sandbox.languages import PYTHON_TESTER, Language
from referee.sandbox.run_limits import Limits, supervisor_deadline_s


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run anything now (Docker unreachable, image missing, ...)."""


@dataclass(frozen=True, slots=True)
class TestInput:
    __test__: ClassVar[bool] = False  # not a pytest test class

    stdin: bytes = b""
    # function/assert: the spec handed to the harness on fd 3 (never the expected value).
    spec: bytes | None = None
    # stdio judged by a checker: the reference's answer, its third argument (checker_format.py).
    answer: bytes | None = None


# How one test was judged. Candidate-caused failures are verdicts like any other; only the
# infrastructure (no container, a lost stream) yields no verdict at all.
TestVerdict = Literal[
    "accepted",
    "wrong_answer",
    "runtime_error",
    "compile_error",
    "time_limit_exceeded",
    "memory_limit_exceeded",
    "output_limit_exceeded",
]
Judgement = tuple[TestVerdict, str | None]  # (verdict, reason)


@dataclass(frozen=True, slots=True)
class Job:
    """One submission: a program and all its tests (one container, unless the pool has to
    move the remaining tests to a new one)."""

    language: Language
    mode: str
    source: bytes
    tests: tuple[TestInput, ...]
    limits: Limits
    # Judges one finished test as soon as it arrives, in a worker thread: (verdict, reason).
    # With it, the pool keeps only a short prefix of each test's output (not MAX_TESTS x cap).
    judge: Callable[[int, TestRun], Judgement] | None = None
    # stdio tests judged by the problem's checker program, run in the container after each test.
    checker: CheckerProgram | None = None
    # The problem's extra files (headers, data files): (name, content), written read-only into
    # the work dir beside the source, for the compile and every test.
    files: tuple[tuple[str, bytes], ...] = ()

    def checker_budget_s(self, tests: int) -> float:
        """What the checker adds to the wait for `tests` tests (compile, one run per test)."""
        return checker_budget_s(self.checker, self.limits.compile_timeout_s, tests)


@dataclass(slots=True)
class TestRun:
    """How one test process ended, as the supervisor saw it (no judgement yet)."""

    __test__: ClassVar[bool] = False

    # exited | signaled | timeout | output_limit | result_limit | lost, or starved: the node
    # kept it from a CPU past its wall-clock backstop (no verdict: an infrastructure error)
    status: str
    exit_code: int | None = None
    signal: int | None = None
    time_s: float = 0.0
    waited_s: float = 0.0  # of time_s, how long its tasks waited for a CPU (not its own time)
    max_rss_kb: int | None = None  # the largest peak RSS of any process of the test
    tree_peak_kb: int | None = None  # the tree's peak from the memory cgroup, when measurable
    memory_exceeded: bool = False  # one of the two peaks went over the memory limit
    cpu_s: float | None = None
    tree_cpu_s: float | None = None  # the CPU time of the whole container during the test
    cpu_limit_s: float | None = None
    oom: bool = False
    stdout: bytes = b""
    stdout_bytes: int = 0
    stderr: bytes = b""
    result: bytes | None = None
    tampered: bool = False
    clean: bool = True
    note: str | None = None
    verdict: Judgement | None = None  # set when the job's judge already ran
    checker: dict[str, Any] | None = None  # how the checker ended on it (checker_format.py)

    @classmethod
    def from_message(cls, msg: dict[str, Any]) -> TestRun:
        result = msg.get("result")
        return cls(
            status=str(msg["status"]),
            exit_code=msg.get("exit_code"),
            signal=msg.get("signal"),
            time_s=float(msg.get("time_s") or 0.0),
            waited_s=float(msg.get("waited_s") or 0.0),
            max_rss_kb=msg.get("max_rss_kb"),
            tree_peak_kb=msg.get("tree_peak_kb"),
            memory_exceeded=bool(msg.get("memory_exceeded")),
            cpu_s=msg.get("cpu_s"),
            tree_cpu_s=msg.get("tree_cpu_s"),
            cpu_limit_s=msg.get("cpu_limit_s"),
            oom=bool(msg.get("oom")),
            stdout=base64.b64decode(msg.get("stdout") or ""),
            stdout_bytes=int(msg.get("stdout_bytes") or 0),
            stderr=base64.b64decode(msg.get("stderr") or ""),
            result=base64.b64decode(result) if result is not None else None,
            tampered=bool(msg.get("tampered")),
            clean=bool(msg.get("clean", True)),
            checker=msg.get("checker"),
        )


@dataclass(slots=True)
class RunResult:
    compile_ok: bool = True
    compile_output: str = ""
    compile_time_s: float = 0.0
    compile_cached: bool = False  # the compile step came from the compile cache (time 0)
    tests: list[TestRun | None] = field(default_factory=list)
    containers: int = 0


def encode_request(
    job: Job,
    indices: list[int],
    *,
    precompiled: dict[str, Any] | None = None,
    return_compiled_bytes: int = 0,
) -> bytes:
    """The request line. `precompiled`: the compile cache's entry for this program, sent instead
    of compiling; `return_compiled_bytes`: return the compile's artifacts up to this size, for
    the cache (sandbox/compile_cache.py)."""
    lang = job.language
    lim = job.limits

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    req = {
        "source": b64(job.source),
        "source_file": lang.source_file,
        "files": {name: b64(data) for name, data in job.files},
        "compile": list(lang.compile) if lang.compile else None,
        "artifacts": list(lang.artifacts),
        "code_cache": lang.code_cache,
        "run": list(lang.run),
        "harness": list(PYTHON_TESTER) if job.mode == "script" else list(lang.harness or ()) or None,
        "mode": job.mode,
        "tests": [
            {
                "stdin": b64(t.stdin),
                "spec": b64(t.spec) if t.spec is not None else None,
                "answer": b64(t.answer) if t.answer is not None else None,
            }
            for t in job.tests
        ],
        "indices": indices,
        "time_s": lim.time_s,
        "compile_timeout_s": lim.compile_timeout_s,
        "stdout_bytes": lim.stdout_bytes,
        "result_bytes": lim.result_bytes,
        "memory_mb": lim.memory_mb,
        "stderr_bytes": lim.stderr_bytes,
        "open_files": lim.open_files,
        "file_size_mb": lim.file_size_mb,
        "deadline_s": supervisor_deadline_s(lim, len(indices)) + job.checker_budget_s(len(indices)),
        "env": dict(CANDIDATE_ENV),
        "checker": job.checker.request() if job.checker is not None else None,
        "precompiled": precompiled,
        "return_compiled_bytes": return_compiled_bytes,
    }
    return json.dumps(req, separators=(",", ":")).encode() + b"\n"
