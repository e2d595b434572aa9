"""One submission's tests in one warm container: send the request, read the supervisor's
messages into the `RunResult`, judging each test as it arrives."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from referee.sandbox.compile_cache import CachedCompile
from referee.sandbox.container import SandboxContainer, StreamLost
from referee.sandbox.protocol import Job, RunResult, TestRun, encode_request
from referee.sandbox.run_limits import host_wait_s

# Output kept per test once it has been judged (for the verdict's details).
KEPT_BYTES = 512
# A test whose output (base64, as it arrived) is at most this is decoded and judged on the event
# loop: microseconds, against a thread hop per test that costs more than the judging itself.
INLINE_JUDGE_BYTES = 4096


def _output_size(msg: dict[str, Any]) -> int:
    return sum(len(msg.get(key) or "") for key in ("stdout", "stderr", "result"))


def _finish_test(job: Job, index: int, msg: dict[str, Any]) -> TestRun:
    """One test's TestRun; judged at once when the job has a judge, after which only a short
    prefix of its output is kept (a group holds at most one test's full output at a time)."""
    run = TestRun.from_message(msg)
    if run.tampered:
        run.status, run.note = "lost", "the program tampered with the sandbox supervisor"
    if job.judge is not None:
        run.verdict = job.judge(index, run)
        run.stdout, run.stderr, run.result = run.stdout[:KEPT_BYTES], run.stderr[-KEPT_BYTES:], None
    return run


async def run_tests(
    container: SandboxContainer,
    job: Job,
    pending: list[int],
    result: RunResult,
    state: dict[str, bool],
    cached: CachedCompile | None = None,
) -> bool:
    """Run the pending tests in `container`. True when every test got a result; StreamLost
    when the supervisor's stream ended, broke or said something wrong; `state["compiled"]`
    tells whether the program was compiled (then something of the candidate ran).
    `cached`: the program's compile cache entry to send, or where its compile is stored."""
    lim = job.limits
    # the supervisor ends its own work inside it
    budget = host_wait_s(lim, len(pending)) + job.checker_budget_s(len(pending))
    fields = cached.request_fields() if cached is not None else {}
    await container.send(encode_request(job, pending, **fields))
    async for msg in container.messages(time.monotonic() + budget):
        kind = msg.get("type")
        if kind == "compiled":
            state["compiled"] = True
            result.compile_ok = bool(msg["ok"])
            result.compile_output = str(msg.get("output", ""))
            result.compile_time_s = float(msg.get("time_s") or 0.0)
            result.compile_cached = bool(msg.get("cached"))
            if cached is not None:
                cached.compiled(msg)
        elif kind == "test":
            index = int(msg["index"])
            if job.judge is not None and _output_size(msg) > INLINE_JUDGE_BYTES:
                # decode + judge (up to MBs of output) off the event loop
                result.tests[index] = await asyncio.to_thread(_finish_test, job, index, msg)
            else:
                result.tests[index] = _finish_test(job, index, msg)
        elif kind == "done":
            return True
        elif kind == "error":
            raise StreamLost(f"supervisor error: {msg.get('message')}")
        elif kind == "unclean":
            raise StreamLost(f"the program left traces the sandbox could not remove: {msg.get('reason')}")
    return False
