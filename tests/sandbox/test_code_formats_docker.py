"""Stored rows of TACO, CodeContests, LiveCodeBench and open-r1's Codeforces judged end to end in
the Docker sandbox: a right and a wrong program per format (the rows are the exact-schema ones
of tests/verifiers/test_code_formats.py)."""

from __future__ import annotations

import json

import pytest

from referee.sandbox.pool import SandboxPool
from tests.sandbox.test_code_humaneval_mbpp import _judge
from tests.verifiers.test_code_formats import (
    FUNCTIONAL,
    STDIN,
    _packed,
    codeforces_row,
    contests_row,
    lcb_row,
    taco_row,
)

pytestmark = pytest.mark.docker

ADD = "```python\nprint(sum(map(int, input().split())))\n```"
MUL = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"
# LeetCode-style answers as models write them: `List` and `defaultdict` never imported (the
# prelude lcb_runner and TACO run before the program defines them).
TWO_SUM = """```python
class Solution:
    def twoSum(self, nums: List[int], target: int) -> List[int]:
        seen = defaultdict(int)
        for i, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], i]
            seen[x] = i
```"""
TWO_SUM_WRONG = TWO_SUM.replace("return [seen[target - x], i]", "return (i, seen[target - x])")


async def test_code_contests_and_codeforces_rows(sandbox_pool: SandboxPool) -> None:
    right, wrong = await _judge(sandbox_pool, [ADD, MUL], contests_row())
    assert (right.score, right.details["passed"], right.details["total"]) == (1.0, 4, 4)
    assert (wrong.score, wrong.details["verdict"]) == (0.0, "wrong_answer")
    right, wrong = await _judge(sandbox_pool, [ADD, MUL], codeforces_row())
    assert (right.score, right.details["total"]) == (1.0, 2)
    assert (wrong.score, wrong.details["verdict"]) == (0.0, "wrong_answer")


async def test_taco_call_based_row_runs_a_solution_method(sandbox_pool: SandboxPool) -> None:
    row = taco_row(
        {
            "fn_name": "twoSum",
            "inputs": [[[2, 7, 11, 15], 9], [[3, 2, 4], 6]],
            "outputs": [[[0, 1]], [[1, 2]]],
        }
    )
    right, wrong = await _judge(sandbox_pool, [TWO_SUM, TWO_SUM_WRONG], row)
    assert (right.score, right.details["total"]) == (1.0, 2), right.details
    assert (wrong.score, wrong.details["verdict"]) == (0.0, "wrong_answer")


async def test_livecodebench_functional_and_stdin_rows(sandbox_pool: SandboxPool) -> None:
    private = _packed(json.dumps([{"input": "[3, 3]\n6", "output": "[0, 1]", "testtype": "functional"}]))
    right, wrong = await _judge(
        sandbox_pool, [TWO_SUM, TWO_SUM_WRONG], lcb_row(FUNCTIONAL, private, {"func_name": "twoSum"})
    )
    assert (right.score, right.details["total"]) == (1.0, 3), right.details
    assert (wrong.score, wrong.details["verdict"]) == (0.0, "wrong_answer")
    stdin_private = _packed(json.dumps([{"input": "5 6\n", "output": "11\n", "testtype": "stdin"}]))
    right, wrong = await _judge(sandbox_pool, [ADD, MUL], lcb_row(STDIN, stdin_private, {}))
    assert (right.score, right.details["total"]) == (1.0, 2)
    assert wrong.score == 0.0


async def test_a_solution_method_wins_over_a_name_the_prelude_imports(sandbox_pool: SandboxPool) -> None:
    """`search` is also re.search once the prelude ran: lcb_runner calls Solution().search, so do we;
    a `from __future__` line in the program still compiles after the prelude."""
    program = (
        "```python\nfrom __future__ import annotations\nclass Solution:\n"
        "    def search(self, nums: List[int], target: int) -> int:\n"
        "        return nums.index(target) if target in nums else -1\n```"
    )
    tests = [
        {"input": "[-1, 0, 3, 5, 9, 12]\n9", "output": "4", "testtype": "functional"},
        {"input": "[-1, 0, 3, 5, 9, 12]\n2", "output": "-1", "testtype": "functional"},
    ]
    [check] = await _judge(sandbox_pool, [program], lcb_row(tests, "[]", {"func_name": "search"}))
    assert (check.score, check.details["total"]) == (1.0, 2), check.details
