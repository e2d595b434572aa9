"""Per-test limits of a sandboxed program: what the supervisor enforces for each run."""

from __future__ import annotations

from dataclasses import dataclass, replace

from referee.sandbox.languages import Language
from referee.sandbox.settings import SandboxSettings


@dataclass(frozen=True, slots=True)
class Limits:
    time_s: float
    memory_mb: int
    stdout_bytes: int
    stderr_bytes: int
    compile_timeout_s: float
    open_files: int = 256
    file_size_mb: int = 64
    # The function/assert result channel: its own cap, so a large return value is judged
    # (not truncated into a wrong answer); over it the test is output_limit_exceeded.
    result_bytes: int = 16 << 20

    @classmethod
    def from_settings(cls, settings: SandboxSettings) -> Limits:
        return cls(
            time_s=settings.time_limit_s,
            memory_mb=settings.memory_limit_mb,
            stdout_bytes=settings.stdout_limit_bytes,
            stderr_bytes=settings.stderr_keep_bytes,
            compile_timeout_s=settings.compile_timeout_s,
            open_files=settings.open_files,
            file_size_mb=settings.file_size_limit_mb,
            result_bytes=settings.result_limit_bytes,
        )


def for_language(limits: Limits, language: Language) -> Limits:
    """`limits` with the time limit of a test scaled by the language's time_factor, as judges
    give slower runtimes more time (docs/verifiers/code.md, "Per-language time limits").

    Only the per-test time: the compile limit bounds compilers and syntax checks, which are no
    slower for a slow runtime, and scaling it would let a compile bomb burn more CPU. Applied
    host-side before the limits are sent, so the supervisor and the host's wait both see the
    effective limit."""
    if language.time_factor == 1.0:
        return limits
    return replace(limits, time_s=limits.time_s * language.time_factor)


# What the host adds to the limits before it gives up on a supervisor (sandbox/submission.py
# waits host_wait_s for a request's messages: kills, pipes, transfer). The supervisor
# gets a deadline a margin inside that wait, so a program the node starved ends as a
# reported `starved` test (an infrastructure error), never as a lost stream.
HOST_SLACK_S = 5.0
PER_TEST_SLACK_S = 3.0
DEADLINE_MARGIN_S = 2.0


def host_wait_s(limits: Limits, tests: int) -> float:
    """How long the host waits for the supervisor's messages of one request."""
    return limits.compile_timeout_s + HOST_SLACK_S + tests * (limits.time_s + PER_TEST_SLACK_S)


def supervisor_deadline_s(limits: Limits, tests: int) -> float:
    """By when (after it reads the request) the supervisor ends a request's last test."""
    return host_wait_s(limits, tests) - DEADLINE_MARGIN_S
