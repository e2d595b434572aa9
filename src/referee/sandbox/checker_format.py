"""Checker programs: stdio tests judged by a problem's own program instead of text comparison.

A problem with many valid outputs (any permutation with a property, any shortest path) needs a
program that decides whether an output is right: Codeforces' and Polygon's *checkers*, written
with testlib (testlib.h, vendored in in_container/testlib/). This is the host half: what the
request carries (`CheckerProgram.request`), how much longer a request may take with one
(`checker_budget_s`), and what the checker's end means (`checker_outcome`). The in-container
half, which compiles and runs it isolated from the candidate, is in_container/checker_runner.py.

The testlib convention, for C++ and Python checkers alike: `checker <input> <output> <answer>`
(the test's input, the candidate's stdout, the reference's answer), and the exit status says:

| exit | testlib        | verdict                                                          |
|------|----------------|------------------------------------------------------------------|
| 0    | _ok            | accepted                                                         |
| 1    | _wa            | wrong_answer                                                     |
| 2, 4 | _pe, _dirt     | wrong_answer (wrong output format)                               |
| 8    | _unexpected_eof| wrong_answer (the output ended early)                            |
| 7    | _points        | the test's credit: the first number after `points` on stderr     |
|      |                | (or stdout), in [0, 1]; 1 is accepted, less is wrong_answer      |
| 3    | _fail          | no verdict: the checker itself failed (the response is an error) |

Anything else -- another status, a signal, its time or memory limit, an output flood, a
compile error -- is the checker's failure too: the response gets no verdict (status error,
masked from the reward), never a 0 or a 1 the problem did not decide.

The `open-r1` convention is that of open-r1/codeforces' `generated_checker` (Python checkers
an LLM wrote, run by open-r1's Codeforces grader): `checker.py <input> <answer> <output>`
(answer before output), accepted when it exits 0 and the last token of its stdout is `1`.
Anything else it ends with by itself is a wrong answer, as there: those checkers raise on
malformed output (`int("garbage")`), so their exception is the candidate's failure, not theirs.
Its time or memory limit, a signal, an output flood or a compile error are still the checker's
failure (no verdict).
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from referee.sandbox.languages import CPP_FLAGS

CheckerLanguage = Literal["cpp", "python"]
CheckerConvention = Literal["testlib", "open-r1"]
# The checker's arguments after its own name, by convention (the supervisor writes the files).
CHECKER_ARGS: dict[CheckerConvention, tuple[str, ...]] = {
    "testlib": ("input", "output", "answer"),
    "open-r1": ("input", "answer", "output"),
}
TESTLIB_DIR = "/opt/referee/testlib"  # in the image: testlib.h, its LICENSE and testlib.h.gch
# Compiled with the C++ programs' flags (the precompiled testlib.h.gch must match them exactly,
# else GCC silently parses the 200 KB header again) plus testlib's folder on the include path.
CHECKER_CPP_COMPILE = ("g++", *CPP_FLAGS, "-I", TESTLIB_DIR, "-o", "checker", "checker.cpp")
# Built into the image after testlib.h is copied there (referee.sandbox.image): GCC then reads
# the 200 KB header's compiled form, about 1 s off every C++ checker's compile.
TESTLIB_PRECOMPILE = (
    f"g++ {' '.join(CPP_FLAGS)} -x c++-header {TESTLIB_DIR}/testlib.h -o {TESTLIB_DIR}/testlib.h.gch"
)
# Python checkers are parsed (nothing runs) when prepared, so a syntax error is the checker's
# failure up front rather than exit status 1, which would read as "wrong answer".
CHECKER_PYTHON_PARSE = (
    "python3",
    "-I",
    "-S",
    "-B",
    "-c",
    "import sys\ncompile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec', dont_inherit=True)\n",
    "checker.py",
)
# ... and run under this wrapper: an uncaught exception exits 3 (testlib's FAIL), not 1 (wrong
# answer), so a crashing Python checker is the checker's failure. sys.exit(n) keeps its meaning.
CHECKER_PYTHON_RUN = (
    "python3",
    "-I",
    "-c",
    "import runpy, sys, traceback\n"
    "sys.argv = sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "except SystemExit:\n"
    "    raise\n"
    "except BaseException:\n"
    "    traceback.print_exc()\n"
    "    sys.exit(3)\n",
)
# An interactor's argv after its own name (interactor_runner.py gives it these descriptors):
# testlib's `interactor <input> <output> <answer>`, the test's input and answer as read-only
# memfds and /dev/null for `tout` (no checker runs after an interactor: its verdict is final).
INTERACTOR_ARGS = ("/proc/self/fd/3", "/dev/null", "/proc/self/fd/4")
# ... and a Python interactor's wrapper: an exception is its FAIL (3) as for a checker, but a
# closed pipe is the program's doing (it exited while the interactor wrote): testlib's
# "unexpected eof" (8), a wrong answer, never the interactor's failure.
INTERACTOR_PYTHON_RUN = (
    "python3",
    "-I",
    "-c",
    "import os, runpy, sys, traceback\n"
    "sys.argv = sys.argv[1:]\n"
    "def closed():\n"
    "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
    "    sys.exit(8)\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "    sys.stdout.flush()\n"
    "except SystemExit:\n"
    "    try:\n"
    "        sys.stdout.flush()\n"
    "    except BrokenPipeError:\n"
    "        closed()\n"
    "    raise\n"
    "except BrokenPipeError:\n"
    "    closed()\n"
    "except BaseException:\n"
    "    traceback.print_exc()\n"
    "    sys.exit(3)\n",
)
# Each run of the checker: its own time limit, not the candidate's (a checker that verifies a
# large output may need longer than the program took to print it). Its memory limit is the
# test's: the container's memory is sized for that (Settings.container_memory_mb).
CHECKER_TIME_S = 10.0
# Of the checker's stdout and stderr, what comes back (testlib writes one line of verdict).
CHECKER_OUTPUT_BYTES = 1 << 16
PER_CHECK_SLACK_S = 1.0

WRONG_ANSWER_EXITS = {
    1: "wrong answer",
    2: "wrong output format",
    4: "wrong output format",
    8: "unexpected eof",
}
POINTS_EXIT = 7
FAIL_EXIT = 3
_POINTS = re.compile(r"\bpoints\s+([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)")
MESSAGE_CHARS = 300


@dataclass(frozen=True, slots=True)
class CheckerProgram:
    """A problem's checker, as the supervisor receives it with every submission."""

    language: CheckerLanguage
    source: bytes
    convention: CheckerConvention = "testlib"
    time_s: float = CHECKER_TIME_S
    # An interactor (interactor_runner.py): it talks to the program while it runs, testlib's
    # `interactor <input> <output> <answer>`, instead of reading its output afterwards.
    interactive: bool = False

    def request(self) -> dict[str, Any]:
        cpp = self.language == "cpp"
        run = CHECKER_PYTHON_RUN if not self.interactive else INTERACTOR_PYTHON_RUN
        return {
            "source": base64.b64encode(self.source).decode("ascii"),
            "source_file": "checker.cpp" if cpp else "checker.py",
            "compile": list(CHECKER_CPP_COMPILE if cpp else CHECKER_PYTHON_PARSE),
            # The file that is run: the compiler's binary, or the (parsed) source itself.
            "program": "checker" if cpp else "checker.py",
            # What comes before `<program> <input> <output> <answer>` in the checker's argv.
            "run": [] if cpp else list(run),
            "args": list(CHECKER_ARGS[self.convention] if not self.interactive else INTERACTOR_ARGS),
            "interactive": self.interactive,
            "time_s": self.time_s,
            "output_bytes": CHECKER_OUTPUT_BYTES,
        }


@dataclass(frozen=True, slots=True)
class CheckedAnswer:
    """A stdio test's expected output when a checker judges it: the `answer` it is given."""

    answer: str
    convention: CheckerConvention = "testlib"
    interactive: bool = False  # an interactor's verdict (its `answer` file), not a checker's


def checker_budget_s(checker: CheckerProgram | None, compile_timeout_s: float, tests: int) -> float:
    """What a checker adds to a request's time: its compile, and one run per test."""
    if checker is None:
        return 0.0
    return compile_timeout_s + tests * (checker.time_s + PER_CHECK_SLACK_S)


@dataclass(frozen=True, slots=True)
class CheckerOutcome:
    """What one run of the checker decided: `failure` set means no verdict at all."""

    accepted: bool = False
    credit: float = 0.0  # the test's share of a `fraction` reward, in [0, 1]
    message: str = ""
    failure: str | None = None


def _message(raw: dict[str, Any]) -> str:
    text = "\n".join(str(raw.get(key) or "") for key in ("stderr", "stdout")).strip()
    return text[:MESSAGE_CHARS]


def checker_outcome(raw: dict[str, Any] | None, convention: CheckerConvention = "testlib") -> CheckerOutcome:
    """The verdict of the supervisor's report of one checker run (in_container/checker_runner.py):
    {"status", "exit_code", "signal", "stdout", "stderr", "memory_exceeded"} or, when it could not
    be prepared, {"status": "compile_error", "stderr"}. Never raises."""
    if not isinstance(raw, dict):
        return CheckerOutcome(failure="the checker did not run")
    status, code, message = raw.get("status"), raw.get("exit_code"), _message(raw)
    if status == "compile_error":
        return CheckerOutcome(failure=f"the checker does not compile: {message}")
    if raw.get("memory_exceeded"):
        return CheckerOutcome(failure="the checker exceeded its memory limit")
    if status != "exited":
        why = {"timeout": "exceeded its time limit", "output_limit": "flooded its output"}.get(str(status))
        if why is None and raw.get("signal") is not None:
            why = f"was killed by signal {raw['signal']}"
        return CheckerOutcome(failure=f"the checker {why or status}")
    if convention == "open-r1":
        tokens = str(raw.get("stdout") or "").split()
        if code == 0 and tokens and tokens[-1] == "1":
            return CheckerOutcome(accepted=True, credit=1.0, message=message)
        return CheckerOutcome(message=message or f"the checker exited with status {code}")
    if code == 0:
        return CheckerOutcome(accepted=True, credit=1.0, message=message)
    if code in WRONG_ANSWER_EXITS:
        return CheckerOutcome(message=message or WRONG_ANSWER_EXITS[code])
    if code == POINTS_EXIT:
        match = _POINTS.search(message)
        points = float(match.group(1)) if match else math.nan
        if not 0.0 <= points <= 1.0:
            return CheckerOutcome(failure=f"the checker's points are not a number in [0, 1]: {message!r}")
        return CheckerOutcome(accepted=points >= 1.0, credit=points, message=message)
    if code == FAIL_EXIT:
        return CheckerOutcome(failure=f"the checker failed (FAIL): {message}")
    return CheckerOutcome(failure=f"the checker exited with status {code}: {message}")
