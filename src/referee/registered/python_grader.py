"""Sandboxed Python grader types: user source defining `grade(response, reference)`.

The source never runs in the service: each call is one `function`-mode test of the code
sandbox (referee.sandbox), i.e. a fresh process inside a warm, hardened container (no
network, minimal environment, time and memory limits) whose supervisor speaks JSON lines.
The return value comes back as plain JSON and is interpreted here:

- a number: the score; a dict: `{"score": number, "reason"?: str, "details"?: object}`;
- too slow (wall or CPU time): score 0 with a reason, as a built-in that overstays its budget;
- out of memory: score 0 with a reason, as a built-in worker that runs out of memory;
- an exception, a non-JSON or malformed return value, a grader that does not compile, or an
  unavailable sandbox: status `error` (no verdict), as a built-in verifier that raises.

A group's responses go to the sandbox in chunks: one submission (one container) runs up to
CHUNK calls, each in its own process, and chunks run in parallel up to the pool's limit.
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from referee.registered.refschema import reference_type_for, registered_class
from referee.sandbox import judge
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.protocol import Job, SandboxUnavailable, TestInput, TestRun
from referee.sandbox.run_limits import Limits
from referee.verifiers.base import AsyncVerifier, Check, CodeSandbox, NoOptions, Resources, VerifierError

CHUNK = 8
PYTHON = LANGUAGES["python"]


class PythonGraderSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1, description="Python 3 source defining grade(response, reference).")
    time_limit_s: float = Field(default=2.0, gt=0.0, le=10.0, description="Wall clock per call.")
    memory_mb: int = Field(default=256, ge=32, le=1024, description="Memory of the grader's process tree.")
    score_range: tuple[float, float] = (0.0, 1.0)

    @field_validator("source")
    @classmethod
    def _defines_grade(cls, value: str) -> str:
        # A cheap textual check for a clear 422; the examples prove that grade() really works.
        if "def grade" not in value:
            raise ValueError("the source must define grade(response, reference)")
        return value


def _answer(value: Any) -> Check:
    """A grade() return value -> Check; VerifierError when it is not a valid answer."""
    if isinstance(value, bool) or not isinstance(value, int | float | dict):
        raise VerifierError(
            f"grade() must return a number or a dict with 'score', not {type(value).__name__}"
        )
    if isinstance(value, dict):
        score, reason, details = value.get("score"), value.get("reason"), value.get("details", {})
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise VerifierError("grade() returned a dict without a numeric 'score'")
        if reason is not None and not isinstance(reason, str):
            raise VerifierError("grade()'s 'reason' must be a string")
        if not isinstance(details, dict):
            raise VerifierError("grade()'s 'details' must be an object")
        value = score
    else:
        reason, details = None, {}
    if not math.isfinite(value):
        raise VerifierError("grade() returned a non-finite score")
    return Check(float(value), reason=reason[:1000] if reason else None, details=details)


def _last_line(data: bytes) -> str:
    lines = [line for line in data.decode("utf-8", "replace").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def interpret(run: TestRun | None, time_limit_s: float) -> Check | VerifierError:
    if run is None or run.status == "lost":
        return VerifierError(f"grader did not run: {run.note if run else 'no result'}")
    if run.status == "timeout" or run.signal == signal.SIGXCPU:
        return Check(
            0.0, reason=f"grader exceeded its {time_limit_s:g} s time limit", details={"timed_out": True}
        )
    if run.status == "output_limit":
        return VerifierError("grader printed more than the sandbox's output cap")
    failed = run.status == "signaled" or run.exit_code != 0
    if failed:
        if run.oom or any(marker in run.stderr[-4096:] for marker in PYTHON.memory_markers):
            return Check(0.0, reason="grader exceeded its memory limit", details={"memory_exceeded": True})
        if run.signal is not None:
            return VerifierError(f"grader killed by {signal.Signals(run.signal).name}")
        return VerifierError(f"grader raised: {_last_line(run.stderr) or f'exit status {run.exit_code}'}")
    payload = judge.parse_payload(run.result)
    if not isinstance(payload, dict):
        return VerifierError("grader exited before grade() returned")
    if not payload.get("ok"):
        return VerifierError(f"grade() returned a value that is not plain JSON: {payload.get('error')}")
    try:
        return _answer(payload.get("value"))
    except VerifierError as exc:
        return exc


class PythonGraderVerifier(AsyncVerifier):
    options_model = NoOptions
    kind: ClassVar[str] = "python"
    lane = "sandbox"
    spec: ClassVar[PythonGraderSpec]

    def _limits(self, pool: CodeSandbox) -> Limits:
        base = Limits.from_settings(pool.settings)
        return Limits(
            time_s=self.spec.time_limit_s,
            memory_mb=self.spec.memory_mb,
            stdout_bytes=base.stdout_bytes,
            stderr_bytes=base.stderr_bytes,
            compile_timeout_s=base.compile_timeout_s,
            open_files=base.open_files,
            file_size_mb=base.file_size_mb,
        )

    async def _chunk(
        self, pool: CodeSandbox, responses: Sequence[str], reference: Any
    ) -> list[Check | VerifierError]:
        tests = tuple(
            TestInput(
                spec=json.dumps({"mode": "function", "fn_name": "grade", "args": [r, reference]}).encode()
            )
            for r in responses
        )
        source = self.spec.source.encode("utf-8", "surrogatepass")
        try:
            run = await pool.run(Job(PYTHON, "function", source, tests, self._limits(pool)))
        except SandboxUnavailable as exc:
            return [VerifierError(f"code sandbox unavailable: {exc}")] * len(responses)
        if not run.compile_ok:
            return [VerifierError(f"grader does not compile: {run.compile_output.strip()[-300:]}")] * len(
                responses
            )
        return [interpret(t, self.spec.time_limit_s) for t in run.tests]

    async def check_group(
        self, responses: Sequence[str], prepared: Any, options: Any, resources: Resources
    ) -> list[Check]:
        pool = resources.sandbox
        if pool is None:
            raise VerifierError("python graders need the code sandbox, which this service does not run")
        healthy, why = pool.health()
        if not healthy:
            raise VerifierError(f"code sandbox unavailable: {why}")
        chunks = [responses[i : i + CHUNK] for i in range(0, len(responses), CHUNK)]
        results = await asyncio.gather(*(self._chunk(pool, chunk, prepared) for chunk in chunks))
        out: list[Any] = [item for chunk in results for item in chunk]
        return out


def build_class(
    name: str,
    version: str,
    spec: dict[str, Any],
    reference_schema: dict[str, Any] | None,
    *,
    description: str = "",
    example: dict[str, Any] | None = None,
) -> type[PythonGraderVerifier]:
    parsed = PythonGraderSpec.model_validate(spec)
    return registered_class(
        PythonGraderVerifier,
        "PythonGrader",
        name=name,
        version=version,
        description=description,
        reference_type=reference_type_for(reference_schema),
        example=example,
        score_range=parsed.score_range,
        spec=parsed,
        # Calls run one after another inside a submission: leave room for a chunk of them.
        time_budget_s=CHUNK * (parsed.time_limit_s + 3.0) + 10.0,
    )
