"""Interactive problems in the Docker sandbox: a guessing game judged by its interactor (testlib
C++ and plain Python), with honest, wrong, greedy, hanging and flooding candidates, and the
interactor's own failures as masked errors.

The game: a secret x in 1..10^6 (each test's input, the interactor's alone). The program asks
`? y` and reads `<` (x < y), `>` (x > y) or `=`; it answers `! y`. At most 25 queries
(a binary search needs 20); the answer does not count as a query.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from referee.sandbox.pool import SandboxPool
from referee.verifiers.base import Check, VerifierError
from tests.sandbox.test_code_humaneval_mbpp import judge_group
from tests.timing import within

pytestmark = pytest.mark.docker

SECRETS = (1, 1_000_000, 123_457, 999_999)
TESTS = [{"input": f"{x}\n", "output": f"{x}\n"} for x in SECRETS]

TESTLIB_INTERACTOR = r"""
#include "testlib.h"
#include <iostream>
#include <string>

int main(int argc, char* argv[]) {
    registerInteraction(argc, argv);
    int secret = inf.readInt(1, 1000000, "x");
    for (int queries = 0;; ) {
        std::string kind = ouf.readToken("[?!]", "kind");
        int y = ouf.readInt(1, 1000000, "y");
        if (kind == "!") {
            if (y != secret) quitf(_wa, "answered %d, the secret is %d", y, secret);
            quitf(_ok, "found %d in %d queries", secret, queries);
        }
        if (++queries > 25) quitf(_wa, "more than 25 queries");
        std::cout << (secret < y ? "<" : secret > y ? ">" : "=") << std::endl;
    }
}
"""

# The same game without testlib: exit 0 accepted, 1 wrong, 2 malformed (testlib's codes).
PYTHON_INTERACTOR = """
import sys

secret = int(open(sys.argv[1]).read())
queries = 0
for line in sys.stdin:
    parts = line.split()
    if len(parts) != 2 or parts[0] not in "?!" or not parts[1].isdigit():
        print(f"malformed line {line[:40]!r}", file=sys.stderr)
        sys.exit(2)
    y = int(parts[1])
    if parts[0] == "!":
        if y != secret:
            print(f"answered {y}, the secret is {secret}", file=sys.stderr)
            sys.exit(1)
        sys.exit(0)
    queries += 1
    if queries > 25:
        print("more than 25 queries", file=sys.stderr)
        sys.exit(1)
    print("<" if secret < y else ">" if secret > y else "=", flush=True)
print("unexpected end of the dialogue", file=sys.stderr)
sys.exit(1)
"""

BINARY_SEARCH = """```python
lo, hi = 1, 10**6
while True:
    mid = (lo + hi) // 2
    print("?", mid, flush=True)
    reply = input().strip()
    if reply == "=":
        print("!", mid, flush=True)
        break
    if reply == "<":
        hi = mid - 1
    else:
        lo = mid + 1
```"""

BINARY_SEARCH_CPP = """```cpp
#include <cstdio>
int main() {
    int lo = 1, hi = 1000000;
    char reply[4];
    while (true) {
        int mid = (lo + hi) / 2;
        std::printf("? %d\\n", mid);
        std::fflush(stdout);
        if (std::scanf("%3s", reply) != 1) return 1;
        if (reply[0] == '=') { std::printf("! %d\\n", mid); return 0; }
        if (reply[0] == '<') hi = mid - 1; else lo = mid + 1;
    }
}
```"""

OFF_BY_ONE = BINARY_SEARCH.replace('print("!", mid, flush=True)', 'print("!", mid + 1, flush=True)')
# Linear search from 1: right for the secret 1 only, then over the 25-query limit.
LINEAR = """```python
for y in range(1, 10**6 + 1):
    print("?", y, flush=True)
    if input().strip() == "=":
        print("!", y, flush=True)
        break
```"""
# Waits for a first line that never comes: the interactor waits for its query too.
HANGS = "```python\nimport sys\nsys.stdin.readline()\n```"
FLOODS = "```python\nimport sys\nwhile True:\n    sys.stdout.write('? 1\\n' * 4096)\n```"
SILENT = "```python\nprint('nothing to ask')\n```"


def _reference(language: str, source: str, **extra: Any) -> dict[str, Any]:
    return {
        "language": "python",
        "tests": TESTS,
        "interactor": {"language": language, "source": source},
        **extra,
    }


def _verdicts(results: list[Any]) -> list[tuple[float, str]]:
    assert all(isinstance(r, Check) for r in results), results
    return [(r.score, r.details["verdict"]) for r in results]


INTERACTORS = [("cpp", TESTLIB_INTERACTOR), ("python", PYTHON_INTERACTOR)]


@pytest.mark.parametrize(("language", "source"), INTERACTORS)
async def test_an_honest_binary_search_is_accepted(
    sandbox_pool: SandboxPool, language: str, source: str
) -> None:
    [python] = await judge_group(sandbox_pool, [BINARY_SEARCH], _reference(language, source))
    [cpp] = await judge_group(
        sandbox_pool, [BINARY_SEARCH_CPP], {**_reference(language, source), "language": "cpp"}
    )
    assert _verdicts([python, cpp]) == [(1.0, "accepted")] * 2
    assert python.details["passed"] == len(SECRETS)
    assert python.details["judged_by"] == f"interactor ({language})"


@pytest.mark.parametrize(("language", "source"), INTERACTORS)
async def test_wrong_greedy_and_flooding_candidates_are_wrong_answers(
    sandbox_pool: SandboxPool, language: str, source: str
) -> None:
    results = await judge_group(
        sandbox_pool, [OFF_BY_ONE, LINEAR, FLOODS, SILENT], _reference(language, source)
    )
    assert _verdicts(results) == [(0.0, "wrong_answer")] * 4, results
    off_by_one, linear, flood, silent = (r.details["tests"] for r in results)
    assert "the secret is" in off_by_one[0]["reason"]
    assert linear[0]["verdict"] == "accepted"  # the secret 1 is its first query
    assert "more than 25 queries" in linear[1]["reason"]
    assert all(t["reason"].startswith("interactor: ") for t in flood + silent)
    # The flood ends with the interactor's verdict (its 26th `? 1`), long before a time limit.
    assert all(t["time_ms"] < within(1.0) * 1000 for t in flood)


async def test_a_hanging_candidate_times_out_within_its_limit(sandbox_pool: SandboxPool) -> None:
    reference = _reference("cpp", TESTLIB_INTERACTOR)
    [result] = await judge_group(sandbox_pool, [HANGS], reference, time_limit_s=1.0, reward="fraction")
    assert _verdicts([result]) == [(0.0, "time_limit_exceeded")]
    assert {t["verdict"] for t in result.details["tests"]} == {"time_limit_exceeded"}
    limit_ms = result.details["time_limit_s"] * 1000
    assert all(limit_ms <= t["time_ms"] < limit_ms + within(0.5) * 1000 for t in result.details["tests"])
    # Both processes are killed at the program's limit: the test does not wait for the
    # interactor's own (the test's time plus 10 s) to pass. Timed warm (the pool's
    # containers started, the interactor compiled) by an honest run first.
    one = {**reference, "tests": TESTS[:1]}
    assert _verdicts(await judge_group(sandbox_pool, [BINARY_SEARCH], one, time_limit_s=1.0)) == [
        (1.0, "accepted")
    ]
    started = time.monotonic()
    [again] = await judge_group(sandbox_pool, [HANGS], one, time_limit_s=1.0)
    assert _verdicts([again]) == [(0.0, "time_limit_exceeded")]
    assert time.monotonic() - started < result.details["time_limit_s"] + within(2)


async def test_a_child_left_holding_the_pipe_cannot_stall_the_interactor(sandbox_pool: SandboxPool) -> None:
    """The program exits at once, leaving a child that holds its stdout: the child is killed
    when the program ends, so the interactor reads EOF (a wrong answer) instead of waiting
    into its own time limit (a failure, which would mask the response)."""
    leaves_a_child = "```python\nimport os, time\nif os.fork() == 0:\n    time.sleep(60)\n```"
    started = time.monotonic()
    [result] = await judge_group(sandbox_pool, [leaves_a_child], _reference("cpp", TESTLIB_INTERACTOR))
    assert _verdicts([result]) == [(0.0, "wrong_answer")], result
    assert all(t["reason"].startswith("interactor: ") for t in result.details["tests"])
    # Not masked (a stalled interactor would fail at its own limit, the test's + 10 s: an error).
    assert time.monotonic() - started < within(10)


BROKEN_INTERACTORS = [
    pytest.param("cpp", "int main() { __builtin_trap(); }", "killed by signal", id="cpp-crash"),
    pytest.param(
        "cpp",
        '#include "testlib.h"\nint main(int c, char* v[]) { registerInteraction(c, v); quitf(_fail, "bad test"); }',
        "FAIL",
        id="testlib-fail",
    ),
    pytest.param("cpp", "int main() { return 42; }", "status 42", id="cpp-unknown-status"),
    pytest.param("cpp", "int main() { oops }", "does not compile", id="cpp-compile-error"),
    pytest.param("python", "raise RuntimeError('interactor bug')\n", "FAIL", id="python-raises"),
]


@pytest.mark.parametrize(("language", "source", "why"), BROKEN_INTERACTORS)
async def test_a_failing_interactor_is_no_verdict(
    sandbox_pool: SandboxPool, language: str, source: str, why: str
) -> None:
    [result] = await judge_group(sandbox_pool, [BINARY_SEARCH], _reference(language, source))
    assert isinstance(result, VerifierError), result
    assert "the problem's interactor failed" in str(result) and why in str(result), str(result)


async def test_the_secret_is_nowhere_the_candidate_can_read(sandbox_pool: SandboxPool) -> None:
    """The interactor's input is a memfd of another uid: neither /work, /tmp nor the
    interactor's /proc entries show the program its secret."""
    snoop = """```python
import os, sys
needle = str(123456 + 1).encode()  # not in this source, which /work holds
found = []
for top in ("/work", "/tmp"):
    for root, dirs, files in os.walk(top):
        for name in files:
            try:
                if needle in open(os.path.join(root, name), "rb").read():
                    found.append(os.path.join(root, name))
            except OSError:
                pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    for leaf in ("fd/3", "environ", "cmdline"):
        try:
            if needle in open(f"/proc/{pid}/{leaf}", "rb").read():
                found.append(f"/proc/{pid}/{leaf}")
        except OSError:
            pass
print("!", int(needle) if found else 1, flush=True)
print(found, file=sys.stderr)
```"""
    tests = [{"input": "123457\n", "output": "123457\n"}]
    [result] = await judge_group(sandbox_pool, [snoop], _reference("cpp", TESTLIB_INTERACTOR, tests=tests))
    assert _verdicts([result]) == [(0.0, "wrong_answer")], result.details["tests"][0]
    assert "the secret is 123457" in result.details["tests"][0]["reason"]
