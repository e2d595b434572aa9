"""Checker programs in the Docker sandbox: a problem with many valid outputs judged by the
problem's own checker (testlib C++, Python, open-r1's generated_checker), the checker's
failures as masked errors, and candidates that try to change what the checker sees.

The problem: print a derangement of 1..n (a permutation with no fixed point, p_i != i).
Every n >= 2 has many; the reference stores one of them as each test's answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from referee.sandbox.pool import SandboxPool
from referee.verifiers.base import Check, VerifierError
from tests.sandbox.test_code_humaneval_mbpp import judge_group
from tests.verifiers.test_code_formats import codeforces_row

pytestmark = pytest.mark.docker

SIZES = (2, 3, 5, 6)


def _shifted(n: int) -> str:
    return " ".join(str(i % n + 1) for i in range(1, n + 1)) + "\n"


TESTS = [{"input": f"{n}\n", "output": _shifted(n)} for n in SIZES]

TESTLIB_CHECKER = r"""
#include "testlib.h"
#include <vector>

int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt();
    std::vector<bool> seen(n + 1, false);
    for (int i = 1; i <= n; i++) {
        int p = ouf.readInt(1, n, "p_i");
        if (seen[p]) quitf(_wa, "%d appears twice", p);
        if (p == i) quitf(_wa, "p_%d = %d is a fixed point", i, i);
        seen[p] = true;
    }
    quitf(_ok, "a derangement of %d", n);  // testlib: extra output is "wrong output format"
}
"""

PYTHON_CHECKER = """
import sys

n = int(open(sys.argv[1]).read().split()[0])
tokens = open(sys.argv[2]).read().split()
if len(tokens) != n:
    print(f"expected {n} numbers, got {len(tokens)}")
    sys.exit(1)
if not all(t.isdigit() for t in tokens):
    print("not integers")
    sys.exit(2)
p = [int(t) for t in tokens]
if sorted(p) != list(range(1, n + 1)):
    print("not a permutation")
    sys.exit(1)
if any(v == i for i, v in enumerate(p, 1)):
    print("a fixed point")
    sys.exit(1)
print("ok")
"""

# open-r1/codeforces' generated_checker: `checker.py input answer output`, prints 1 or 0. It
# raises on malformed output (int("x")), which open-r1 counts as a failed test.
OPEN_R1_CHECKER = """
import sys

n = int(open(sys.argv[1]).read().split()[0])
p = [int(t) for t in open(sys.argv[3]).read().split()]
ok = sorted(p) == list(range(1, n + 1)) and all(v != i for i, v in enumerate(p, 1))
print(1 if ok else 0)
"""


def _py(body: str) -> str:
    return f"```python\nn = int(input())\n{body}\n```"


SHIFT = _py("print(*[i % n + 1 for i in range(1, n + 1)])")
# Another valid answer: swap neighbours, then the last two when n is odd (2 1 4 5 3).
SWAP = _py(
    "p = list(range(1, n + 1))\n"
    "for i in range(0, n - 1, 2):\n    p[i], p[i + 1] = p[i + 1], p[i]\n"
    "if n % 2:\n    p[-1], p[-2] = p[-2], p[-1]\n"
    "print(*p)"
)
VALID_CPP = """```cpp
#include <cstdio>
int main() { int n; std::scanf("%d", &n); for (int i = 1; i <= n; i++) std::printf("%d ", i == n ? 1 : i + 1); }
```"""

IDENTITY = _py("print(*range(1, n + 1))")  # every point fixed
SHORT = _py("print(*[i % n + 1 for i in range(1, n)])")  # one number missing
REPEATED = _py("print(*[2] * (n - 1), 1)")  # 2 twice (n >= 3), and p_2 = 2 itself for n = 2
TOO_LONG = _py("print(*[i % n + 1 for i in range(1, n + 1)], 1)")  # an extra number
GARBAGE = _py("print('yes')")
FIXED_POINT = _py("print(1, *[i % (n - 1) + 2 for i in range(1, n)])")  # p_1 = 1


def _reference(language: str, source: str, convention: str = "testlib", tests: Any = None) -> dict[str, Any]:
    checker = {"language": language, "source": source, "convention": convention}
    return {"language": "python", "tests": tests or TESTS, "checker": checker}


def _verdicts(results: list[Any]) -> list[tuple[float, str]]:
    assert all(isinstance(r, Check) for r in results), results
    return [(r.score, r.details["verdict"]) for r in results]


INVALID = [IDENTITY, SHORT, REPEATED, TOO_LONG, GARBAGE, FIXED_POINT]


@pytest.mark.parametrize(("language", "source"), [("cpp", TESTLIB_CHECKER), ("python", PYTHON_CHECKER)])
async def test_every_valid_answer_is_accepted_and_every_invalid_one_is_wrong(
    sandbox_pool: SandboxPool, language: str, source: str
) -> None:
    reference = _reference(language, source)
    valid = await judge_group(sandbox_pool, [SHIFT, SWAP], reference)
    assert _verdicts(valid) == [(1.0, "accepted")] * 2, valid
    # SWAP's outputs differ from the stored answers (2 1 / 2 3 1 / 2 1 4 5 3 / 2 1 4 3 6 5):
    # exact comparison would have failed it; the checker accepts each.
    assert valid[1].details["passed"] == len(SIZES)
    assert valid[1].details["judged_by"] == f"checker ({language}, testlib)"
    invalid = await judge_group(sandbox_pool, INVALID, reference)
    assert _verdicts(invalid) == [(0.0, "wrong_answer")] * len(INVALID), invalid
    for result in invalid:
        failing = [t for t in result.details["tests"] if t["verdict"] != "accepted"]
        assert failing and all(t["reason"].startswith("checker: ") for t in failing)


async def test_a_cpp_program_judged_by_a_testlib_checker(sandbox_pool: SandboxPool) -> None:
    [result] = await judge_group(
        sandbox_pool, [VALID_CPP], {**_reference("cpp", TESTLIB_CHECKER), "language": "cpp"}
    )
    assert _verdicts([result]) == [(1.0, "accepted")]


async def test_fraction_reward_counts_the_tests_the_checker_accepted(sandbox_pool: SandboxPool) -> None:
    even_only = _py("print(*range(n, 0, -1))")  # a derangement for even n only: 2 of 4 tests
    [result] = await judge_group(
        sandbox_pool, [even_only], _reference("cpp", TESTLIB_CHECKER), reward="fraction"
    )
    assert (result.score, result.details["passed"]) == (0.5, 2)
    assert [t["verdict"] for t in result.details["tests"]] == [
        "accepted",
        "wrong_answer",
        "wrong_answer",
        "accepted",
    ]
    assert "fixed point" in result.details["tests"][1]["reason"]


async def test_testlib_points_are_partial_credit(sandbox_pool: SandboxPool) -> None:
    """Exit 7 (quitp): the test's credit in [0, 1]; below 1 it is not accepted."""
    halves = TESTLIB_CHECKER.replace('quitf(_ok, "a derangement of %d", n);', 'quitp(0.5, "half of %d", n);')
    [result] = await judge_group(sandbox_pool, [SHIFT], _reference("cpp", halves), reward="fraction")
    assert (result.score, result.details["passed"], result.details["verdict"]) == (0.5, 0, "wrong_answer")
    assert {t["points"] for t in result.details["tests"]} == {0.5}


async def test_open_r1_rows_are_judged_by_their_generated_checker(sandbox_pool: SandboxPool) -> None:
    row = codeforces_row(official_tests=TESTS, generated_checker=OPEN_R1_CHECKER)
    results = await judge_group(sandbox_pool, [SHIFT, SWAP, IDENTITY, GARBAGE], row)
    assert _verdicts(results) == [(1.0, "accepted")] * 2 + [(0.0, "wrong_answer")] * 2
    assert results[0].details["judged_by"] == "checker (python, open-r1)"


# ---- the checker's own failures: no verdict ---------------------------------------------------

BROKEN_CHECKERS = [
    pytest.param(
        "cpp",
        TESTLIB_CHECKER.replace("registerTestlibCmd", "not_a_function"),
        "does not compile",
        id="cpp-compile-error",
    ),
    pytest.param(
        "cpp",
        '#include "testlib.h"\nint main(int c, char* v[]) { registerTestlibCmd(c, v); quitf(_fail, "bad test"); }',
        "FAIL",
        id="testlib-fail",
    ),
    pytest.param("cpp", "int main() { __builtin_trap(); }", "killed by signal", id="cpp-crash"),
    pytest.param("cpp", "int main() { return 42; }", "status 42", id="cpp-unknown-status"),
    pytest.param("python", "import sys\nraise RuntimeError('checker bug')\n", "FAIL", id="python-raises"),
    pytest.param("python", "def broken(:\n", "does not compile", id="python-syntax-error"),
    pytest.param(
        "python", "import sys\nprint('points', 7)\nsys.exit(7)\n", "points", id="points-out-of-range"
    ),
]


@pytest.mark.parametrize(("language", "source", "why"), BROKEN_CHECKERS)
async def test_a_failing_checker_is_an_error_never_a_score(
    sandbox_pool: SandboxPool, language: str, source: str, why: str
) -> None:
    results = await judge_group(sandbox_pool, [SHIFT, IDENTITY], _reference(language, source))
    for result in results:
        assert isinstance(result, VerifierError), result
        assert "checker failed" in str(result) and why in str(result), str(result)


async def test_an_endless_checker_is_stopped_at_its_time_limit(sandbox_pool: SandboxPool) -> None:
    source = "int main() { for (volatile int i = 0;; i = i + 1) {} }"
    [result] = await judge_group(sandbox_pool, [SHIFT], _reference("cpp", source, tests=TESTS[:1]))
    assert isinstance(result, VerifierError) and "time limit" in str(result), result


async def test_a_program_that_fails_by_itself_never_reaches_the_checker(sandbox_pool: SandboxPool) -> None:
    """A timeout or crash is the program's verdict: a broken checker is never even run."""
    crash = _py("raise SystemExit(3)")
    [result] = await judge_group(sandbox_pool, [crash], _reference("python", "import sys\nsys.exit(3)\n"))
    assert _verdicts([result]) == [(0.0, "runtime_error")]


# ---- candidates against the checker -----------------------------------------------------------

# Prints an invalid answer (the identity) and leaves a daemon behind that, for seconds, puts a
# valid answer wherever the checker might read one (every file named output/answer under /tmp
# and /work, every directory that appears there) and kills every process it may: if it ever
# reached the checker, the verdict would be accepted or an error (masked), not a 0.
TAMPERING = _py(
    """import os, signal, time
start = time.time()
print(*range(1, n + 1), flush=True)
valid = " ".join(str(i % n + 1) for i in range(1, n + 1)) + "\\n"
main = os.getpid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while os.path.exists(f"/proc/{main}") and time.time() < start + 2:
            time.sleep(0.001)  # the program's own end first: then the checker's turn
        end = time.time() + 4
        while time.time() < end:
            for top in ("/tmp", "/work"):
                for root, dirs, files in os.walk(top):
                    for name in ("output", "answer", "input", "checker", "checker.py"):
                        try:
                            with open(os.path.join(root, name), "w") as f:
                                f.write(valid)
                        except OSError:
                            pass
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)
    os._exit(0)
for top in ("/tmp", "/work"):  # squat names a mkdtemp could pick, with valid answers inside
    for i in range(20):
        d = f"{top}/checker-{i:08x}"
        os.makedirs(d, exist_ok=True)
        for name in ("output", "answer", "input"):
            with open(os.path.join(d, name), "w") as f:
                f.write(valid)
        os.chmod(d, 0o777)
os.symlink("/work/checker-00000000/output", "/work/output")"""
)
FLOOD = _py("import sys\nsys.stdout.write('1 ' * (8 << 20))")


@pytest.mark.parametrize(("language", "source"), [("cpp", TESTLIB_CHECKER), ("python", PYTHON_CHECKER)])
async def test_a_hostile_candidate_cannot_change_the_checkers_verdict(
    sandbox_pool: SandboxPool, language: str, source: str, escape_check: None
) -> None:
    results = await judge_group(sandbox_pool, [TAMPERING, FLOOD, SHIFT], _reference(language, source))
    assert _verdicts(results) == [(0.0, "wrong_answer"), (0.0, "output_limit_exceeded"), (1.0, "accepted")]
    tampering = results[0].details["tests"]
    assert all("checker: " in t["reason"] for t in tampering), tampering


# A candidate that looks for the answer file wherever it could be (any file named like one in
# /work, /tmp, /opt; the command lines and open files of every process it can see) and prints
# what it finds. The checker accepts only the answer itself: found, it would be accepted.
ANSWER_HUNTER = """```python
import os, re
found = []
for top in ("/work", "/tmp", "/opt", "/"):
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr", "dev")]
        for name in files:
            if re.search("ans|out|check", name):
                try:
                    found.append(open(os.path.join(root, name)).read(64))
                except (OSError, UnicodeDecodeError):
                    pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    for path in (f"/proc/{pid}/cmdline", f"/proc/{pid}/environ"):
        try:
            found.append(open(path, "rb").read().decode("utf-8", "replace"))
        except OSError:
            pass
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            found.append(open(f"/proc/{pid}/fd/{fd}").read(64))
    except (OSError, UnicodeDecodeError):
        pass
numbers = [m for text in found for m in re.findall(r"\\b\\d{9}\\b", text)]
print(numbers[0] if numbers else 0)
```"""
SAME_AS_ANSWER = """
import sys
sys.exit(0 if open(sys.argv[2]).read().split() == open(sys.argv[3]).read().split() else 1)
"""


async def test_the_answer_is_never_where_the_candidate_can_read_it(sandbox_pool: SandboxPool) -> None:
    reference = _reference("python", SAME_AS_ANSWER, tests=[{"input": "\n", "output": "918273645\n"}])
    [result] = await judge_group(sandbox_pool, [ANSWER_HUNTER], reference)
    assert _verdicts([result]) == [(0.0, "wrong_answer")], result
    assert "918273645" not in result.details["tests"][0]["stdout"]
