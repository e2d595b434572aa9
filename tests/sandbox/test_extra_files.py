"""A problem's extra files (`files` in a code reference: headers, data files) in the Docker
sandbox: the program includes or reads them, cannot change them for the next test, and the
compile cache tells two programs apart by their files as well as their source."""

from __future__ import annotations

from typing import Any

import pytest

from referee.sandbox.pool import SandboxPool
from tests.sandbox.test_code_humaneval_mbpp import _judge

pytestmark = pytest.mark.docker

HEADER = "#pragma once\nconstexpr long long SCALE = 3;\ninline long long scaled(long long x) { return SCALE * x; }\n"
USES_HEADER = """```cpp
#include <cstdio>
#include "scale.h"
int main() { long long x; std::scanf("%lld", &x); std::printf("%lld\\n", scaled(x)); }
```"""


def reference(language: str, tests: list[dict[str, Any]], files: dict[str, str]) -> dict[str, Any]:
    return {"language": language, "tests": tests, "files": files}


async def test_a_program_includes_the_problems_header(sandbox_pool: SandboxPool) -> None:
    (check,) = await _judge(
        sandbox_pool,
        [USES_HEADER],
        reference("cpp", [{"input": "14\n", "output": "42\n"}], {"scale.h": HEADER}),
    )
    assert check.score == 1.0, check.details
    # The same source with another header is another program: compiled again, not served the
    # first one's binary from the compile cache.
    other = HEADER.replace("SCALE = 3", "SCALE = 2")
    (check,) = await _judge(
        sandbox_pool,
        [USES_HEADER],
        reference("cpp", [{"input": "14\n", "output": "28\n"}], {"scale.h": other}),
    )
    assert check.score == 1.0 and check.details["compile"]["cached"] is False, check.details


READS_AND_TAMPERS = """```python
import os
with open("words.txt") as handle:
    words = handle.read().split()
print(len(words), words[int(input())])
for attempt in (lambda: open("words.txt", "w").write("gone"), lambda: os.remove("words.txt")):
    try:
        attempt()
    except OSError:
        pass
```"""


async def test_a_program_reads_a_data_file_and_cannot_change_it(sandbox_pool: SandboxPool) -> None:
    """Each test tries to overwrite and to delete the file after reading it; every next test
    still reads the original (root-owned, read-only, in a sticky directory)."""
    tests = [
        {"input": f"{i}\n", "output": f"3 {word}\n"} for i, word in enumerate(["alpha", "beta", "gamma"])
    ]
    (check,) = await _judge(
        sandbox_pool, [READS_AND_TAMPERS], reference("python", tests, {"words.txt": "alpha beta\ngamma\n"})
    )
    assert (check.score, check.details["passed"]) == (1.0, 3), check.details


GRADER_H = "#pragma once\nlong long triangle(int n);\n"
GRADER_CPP = """#include <cstdio>
#include "triangle.h"
int main() { int n; std::scanf("%d", &n); std::printf("%lld\\n", triangle(n)); }
"""
TRIANGLE = """```cpp
#include "triangle.h"
long long triangle(int n) { return 1LL * n * (n + 1) / 2; }
```"""
GO_DRIVER = """package main

import "fmt"

func main() {
	var n int
	fmt.Scan(&n)
	fmt.Println(triangle(n))
}
"""
GO_TRIANGLE = "```go\npackage main\n\nfunc triangle(n int) int { return n * (n + 1) / 2 }\n```"


async def test_an_ioi_style_grader_is_compiled_with_the_candidates_function(
    sandbox_pool: SandboxPool,
) -> None:
    """The problem ships `main` (a grader, or a Go driver) and the candidate writes the function."""
    tests = [{"input": "4\n", "output": "10\n"}, {"input": "100000\n", "output": "5000050000\n"}]
    cpp_files = {"triangle.h": GRADER_H, "grader.cpp": GRADER_CPP}
    right, wrong = await _judge(
        sandbox_pool, [TRIANGLE, TRIANGLE.replace("(n + 1)", "(n - 1)")], reference("cpp", tests, cpp_files)
    )
    assert (right.score, right.details["passed"]) == (1.0, 2), right.details
    assert (wrong.score, wrong.details["verdict"]) == (0.0, "wrong_answer"), wrong.details
    (go,) = await _judge(sandbox_pool, [GO_TRIANGLE], reference("go", tests, {"driver.go": GO_DRIVER}))
    assert (go.score, go.details["passed"]) == (1.0, 2), go.details
    # A candidate that writes its own `main` too clashes with the grader's: a compile error.
    clash = TRIANGLE.removesuffix("```") + "int main() { return 0; }\n```"
    (check,) = await _judge(sandbox_pool, [clash], reference("cpp", tests, cpp_files))
    assert check.details["verdict"] == "compile_error", check.details
