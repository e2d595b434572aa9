"""Interactive problems, without Docker: the reference's `interactor` contract, what travels to
the sandbox, how a test's verdict combines the program's end with the interactor's, and the
Python interactor's wrapper (run here, as the sandbox runs it). The dialogues themselves run
in tests/sandbox/test_interactive.py."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from referee.sandbox.checker_format import (
    INTERACTOR_ARGS,
    INTERACTOR_PYTHON_RUN,
    CheckedAnswer,
    CheckerProgram,
)
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.protocol import Job, RunResult, TestRun, encode_request
from referee.sandbox.run_limits import Limits
from referee.verifiers.code import CodeOptions, CodeVerifier, checker_failure, classify

PY = LANGUAGES["python"]
TESTS = [{"input": "42\n", "output": "42\n"}, {"input": "7\n", "output": "7\n"}]
INTERACTOR = {"language": "cpp", "source": '#include "testlib.h"\nint main() {}\n'}


def _reference(**changes: Any) -> dict[str, Any]:
    return {"language": "python", "tests": TESTS, "interactor": INTERACTOR, **changes}


# ---- the contract -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"interactor": {**INTERACTOR, "language": "java"}}, "'cpp' or 'python'"),
        ({"interactor": {**INTERACTOR, "source": ""}}, "at least 1 character"),
        ({"interactor": {**INTERACTOR, "convention": "open-r1"}}, "Extra inputs"),
        ({"checker": INTERACTOR}, "interactor belongs to stdio tests without a checker"),
        (
            {"test_format": "function", "tests": [{"fn_name": "f", "args": [], "expected": 1}]},
            "interactor belongs to stdio tests",
        ),
    ],
)
def test_a_malformed_or_misplaced_interactor_is_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CodeVerifier.validate_reference(_reference(**changes))


def test_an_interactive_problem_has_no_output_cap_check() -> None:
    """Each test's output is the interactor's answer file, never compared with what is printed."""
    big = [{"input": "1\n", "output": "x" * 2_000_000}]
    CodeVerifier.validate_inputs(CodeVerifier.validate_reference(_reference(tests=big)), CodeOptions())


# ---- what travels to the sandbox ----------------------------------------------------------------


def test_prepare_sends_the_secret_and_answer_to_the_interactor_not_the_program() -> None:
    prepared = CodeVerifier().prepare(_reference(), CodeOptions())
    assert prepared.checker == CheckerProgram("cpp", INTERACTOR["source"].encode(), interactive=True)
    assert prepared.expected == (
        CheckedAnswer("42\n", interactive=True),
        CheckedAnswer("7\n", interactive=True),
    )
    assert prepared.notes["judged_by"] == "interactor (cpp)"
    limits = Limits(
        time_s=2.0, memory_mb=256, stdout_bytes=1 << 20, stderr_bytes=4096, compile_timeout_s=30.0
    )
    job = Job(PY, "stdio", b"print(1)", prepared.inputs, limits, checker=prepared.checker)
    request = json.loads(encode_request(job, [0, 1]))
    assert [base64.b64decode(t["stdin"]) for t in request["tests"]] == [b"42\n", b"7\n"]
    assert [base64.b64decode(t["answer"]) for t in request["tests"]] == [b"42\n", b"7\n"]
    interactor = request["checker"]
    assert interactor["interactive"] is True
    assert interactor["args"] == list(INTERACTOR_ARGS)  # testlib's `interactor <input> <output> <answer>`
    assert interactor["run"] == []  # a compiled binary, run as it is
    python = CheckerProgram("python", b"print(1)", interactive=True).request()
    assert python["run"] == list(INTERACTOR_PYTHON_RUN)


# ---- a test's verdict ---------------------------------------------------------------------------

ANSWER = CheckedAnswer("42\n", interactive=True)


def _interactor(code: int | None, stderr: str = "", **extra: Any) -> dict[str, Any]:
    status = "exited" if code is not None else "signaled"
    return {"status": status, "exit_code": code, "signal": None, "stdout": "", "stderr": stderr, **extra}


@pytest.mark.parametrize(
    ("program", "interactor", "verdict"),
    [
        ({"status": "exited", "exit_code": 0}, _interactor(0, "ok found"), "accepted"),
        ({"status": "exited", "exit_code": 0}, _interactor(1, "answered 41"), "wrong_answer"),
        ({"status": "exited", "exit_code": 0}, _interactor(2, "expected a token"), "wrong_answer"),
        ({"status": "exited", "exit_code": 0}, _interactor(8, "unexpected eof"), "wrong_answer"),
        # It stopped answering (too many queries): the program died writing to it. Its verdict.
        ({"status": "signaled", "signal": 13}, _interactor(1, "more than 25 queries"), "wrong_answer"),
        ({"status": "exited", "exit_code": 1}, _interactor(1, "more than 25 queries"), "wrong_answer"),
        # The interactor was satisfied, yet the program crashed afterwards: its own failure.
        ({"status": "exited", "exit_code": 3}, _interactor(0, "ok"), "runtime_error"),
        # Its time ran out: both were killed, the interactor's verdict is moot (None).
        ({"status": "timeout"}, None, "time_limit_exceeded"),
        (
            {"status": "exited", "exit_code": 0, "memory_exceeded": True},
            _interactor(0),
            "memory_limit_exceeded",
        ),
    ],
)
def test_the_interactors_verdict_and_the_programs_end(
    program: dict[str, Any], interactor: dict[str, Any] | None, verdict: str
) -> None:
    run = TestRun(**program, checker=interactor)
    judged, why = classify(run, PY, "stdio", ANSWER)
    assert judged == verdict, why
    if verdict == "wrong_answer":
        assert why is not None and why.startswith("interactor: ") and interactor is not None
        assert interactor["stderr"] in why


def test_an_interactors_failure_masks_the_response() -> None:
    prepared = CodeVerifier().prepare(_reference(), CodeOptions())
    tests: list[TestRun | None] = [
        TestRun(status="exited", exit_code=0, checker=_interactor(0)),
        TestRun(status="exited", exit_code=0, checker=_interactor(3, "FAIL bad test")),
    ]
    run = RunResult(tests=tests)
    failure = checker_failure(run, prepared)
    assert failure is not None and failure.startswith("test 2:") and "FAIL" in failure
    moot: list[TestRun | None] = [TestRun(status="timeout"), TestRun(status="exited", checker=_interactor(0))]
    assert checker_failure(RunResult(tests=moot), prepared) is None


# ---- the Python interactor's wrapper, as the sandbox runs it ------------------------------------


def _wrapped(tmp_path: Path, source: str, program: str) -> int:
    """Exit status of `source` run as a Python interactor against `program` (another Python
    process), connected by two pipes as in the sandbox."""
    script = tmp_path / "interactor.py"
    script.write_text(source)
    secret = tmp_path / "input"
    secret.write_text("42\n")
    candidate = subprocess.Popen(
        [sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert candidate.stdin is not None and candidate.stdout is not None
    argv = [sys.executable, *INTERACTOR_PYTHON_RUN[1:], str(script), str(secret), "/dev/null", str(secret)]
    interactor = subprocess.run(argv, stdin=candidate.stdout, stdout=candidate.stdin, timeout=30, check=False)
    candidate.stdin.close()
    candidate.wait(timeout=30)
    return interactor.returncode


GUESS = "import sys\nsecret = int(open(sys.argv[1]).read())\nprint('ready', flush=True)\n"


def test_python_interactor_statuses(tmp_path: Path) -> None:
    quits = "import sys\nsys.stdin.readline()\n"
    assert _wrapped(tmp_path, GUESS + "sys.exit(int(sys.stdin.readline()))\n", "print(input() and 1)") == 1
    assert (
        _wrapped(
            tmp_path, GUESS + "sys.exit(0 if sys.stdin.readline() == '42\\n' else 1)\n", "input(); print(42)"
        )
        == 0
    )
    # An exception is the interactor's FAIL (3): no verdict, not the program's wrong answer.
    assert _wrapped(tmp_path, GUESS + "raise KeyError('bug')\n", quits) == 3
    # The program exited while the interactor wrote: unexpected EOF (8), a wrong answer.
    flood = GUESS + "import time\ntime.sleep(0.5)\nfor _ in range(10**6):\n    print('x' * 100)\n"
    assert _wrapped(tmp_path, flood, "pass") == 8
