"""Test code beyond the host's assert evaluator, judged by the in-sandbox tester (issue 11, §4).

HumanEval rows (`check(candidate)` with an entry point, the prompt as trusted setup) and MBPP
rows (assert lists with test imports) go in as published (tests/data/*_sample.jsonl: HumanEval,
MIT licence; MBPP sanitized, CC BY 4.0). The tester runs the test code in a process of its own
that receives only plain data from the program: a program that redefines the prompt's helpers,
returns an object equal to everything, kills or reads the tester, or patches builtins gets 0.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from referee.sandbox.pool import SandboxPool
from referee.verifiers import Resources
from referee.verifiers.base import Check
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.data import DATA_DIR

pytestmark = pytest.mark.docker


def _rows(name: str) -> dict[Any, dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA_DIR / name).read_text().splitlines() if line.strip()]
    return {row["task_id"]: row for row in rows}


HUMANEVAL = _rows("humaneval_sample.jsonl")
MBPP = _rows("mbpp_sample.jsonl")


async def _judge(
    pool: SandboxPool, programs: list[str], reference: dict[str, Any], **options: Any
) -> list[Check]:
    verifier = CodeVerifier()
    opts = CodeOptions.model_validate(options)
    prepared = verifier.prepare(verifier.validate_reference(reference), opts)
    checks = await verifier.check_group(programs, prepared, opts, Resources(sandbox=pool))
    assert all(isinstance(c, Check) for c in checks), checks
    return [c for c in checks if isinstance(c, Check)]


def _asserts(tests: str) -> dict[str, Any]:
    return {"language": "python", "test_format": "assert", "tests": tests}


def _humaneval_ref(task: str) -> dict[str, Any]:
    return {k: HUMANEVAL[task][k] for k in ("prompt", "test", "entry_point", "canonical_solution", "task_id")}


async def test_humaneval_rows_as_published(sandbox_pool: SandboxPool, escape_check: None) -> None:
    """Every sampled row: its canonical solution (prompt + completion) scores 1, a stub that
    returns None scores 0, and the row goes to the tester (one test: check(entry_point))."""
    for task, row in HUMANEVAL.items():
        good = row["prompt"] + row["canonical_solution"]
        stub = f"def {row['entry_point']}(*args):\n    return None\n"
        checks = await _judge(sandbox_pool, [good, stub], _humaneval_ref(task))
        assert [c.score for c in checks] == [1.0, 0.0], (task, [c.reason for c in checks])
        assert checks[0].details["judged_by"] == "tester"
        assert checks[0].details["total"] == 1


@pytest.mark.parametrize(
    ("task", "hack"),
    [
        # find_zero's test checks `poly(coeffs, solution)` with the prompt's poly.
        ("HumanEval/32", "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"),
        # decode_cyclic's test encodes with the prompt's encode_cyclic.
        ("HumanEval/38", "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n"),
        ("HumanEval/50", "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n"),
    ],
)
async def test_redefining_the_prompts_helper_does_not_pass(
    sandbox_pool: SandboxPool, escape_check: None, task: str, hack: str
) -> None:
    """The tests see the prompt's helpers (the trusted setup), not the program's redefinitions;
    a correct program that calls the helper itself still passes."""
    row = HUMANEVAL[task]
    checks = await _judge(
        sandbox_pool, [hack, row["prompt"] + row["canonical_solution"]], _humaneval_ref(task)
    )
    assert [c.score for c in checks] == [0.0, 1.0], [c.details["tests"] for c in checks]
    assert checks[0].details["verdict"] == "wrong_answer"


async def test_a_completion_may_use_the_prompts_imports_and_helpers(sandbox_pool: SandboxPool) -> None:
    """HumanEval/10's canonical completion calls the prompt's is_palindrome; the program sent is
    only the function (no import, no helper): the setup runs before it, as in HumanEval."""
    row = HUMANEVAL["HumanEval/10"]
    body = "def make_palindrome(string: str) -> str:\n" + row["canonical_solution"]
    (check,) = await _judge(sandbox_pool, [body], _humaneval_ref("HumanEval/10"))
    assert check.score == 1.0, check.details


HOSTILE = {
    "equal to everything": (
        "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "def add(x, y):\n    return Any()\n"
    ),
    "exits before the tests run": "import sys\nsys.exit(0)\ndef add(x, y):\n    return x + y\n",
    "exits inside the call": "import os\ndef add(x, y):\n    os._exit(0)\n",
    "kills the tester": "import os, signal\ndef add(x, y):\n    os.kill(os.getppid(), signal.SIGKILL)\n",
    # Correct only if the program could open the tester's spec, result channel or memory.
    "opens the tester through /proc": (
        "import os\ndef add(x, y):\n"
        "    for name in ('fd/3', 'fd/4', 'mem', 'environ'):\n"
        "        try:\n"
        "            open(f'/proc/{os.getppid()}/{name}', 'rb').close()\n"
        "            return x + y\n"
        "        except OSError:\n"
        "            pass\n"
        "    return None\n"
    ),
    "patches builtins": (
        "import builtins\nclass Never(Exception):\n    pass\nbuiltins.AssertionError = Never\n"
        "builtins.abs = lambda v: 0\ndef add(x, y):\n    return 0\n"  # passes only if abs leaks
    ),
    "returns a generator that lies": "def add(x, y):\n    yield x + y + 1\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_programs_get_zero(sandbox_pool: SandboxPool, escape_check: None, name: str) -> None:
    """Test code the host evaluator cannot express (a loop, a helper of the tests), judged in
    the tester: each hack scores 0, and the honest program beside it scores 1."""
    tests = (
        "def close(a, b):\n    return abs(a - b) < 1e-9\n\n"
        "for x, y in [(1, 2), (3, 4), (10, -10)]:\n    assert close(add(x, y), x + y)\n"
        "assert add(0.5, 0.25) == 0.75\n"
    )
    honest = "def add(x, y):\n    return x + y\n"
    ref = _asserts(tests)
    checks = await _judge(sandbox_pool, [HOSTILE[name], honest], ref, reward="fraction")
    assert [c.score for c in checks] == [0.0, 1.0], [c.details["tests"] for c in checks]
    assert checks[1].details["judged_by"] == "tester" and checks[1].details["total"] == 2


async def test_verdicts_of_the_program_s_failures(sandbox_pool: SandboxPool) -> None:
    """What the program causes is its verdict: an exception it raises is a runtime_error (and a
    test may expect it), a loop is time_limit_exceeded, a memory bomb memory_limit_exceeded."""
    tests = (
        "import math\nfor v in (4, 9):\n    assert math.isclose(root(v), math.sqrt(v))\n"
        "try:\n    root(-1)\n    raised = False\nexcept ValueError:\n    raised = True\nassert raised\n"
    )
    ref = _asserts(tests)
    good = "import math\ndef root(v):\n    if v < 0:\n        raise ValueError('negative')\n    return math.sqrt(v)\n"
    raises = "def root(v):\n    raise KeyError(v)\n"
    loops = "def root(v):\n    while True:\n        pass\n"
    hog = "def root(v):\n    block = []\n    while True:\n        block.append(bytearray(1 << 24))\n"
    # A small memory limit: the hog reaches it in a few allocations even on a loaded machine.
    checks = await _judge(
        sandbox_pool, [good, raises, loops, hog], ref, reward="fraction", time_limit_s=2, memory_limit_mb=96
    )
    assert checks[0].score == 1.0, checks[0].details
    assert [c.details["tests"][0]["verdict"] for c in checks[1:]] == [
        "runtime_error",
        "time_limit_exceeded",
        "memory_limit_exceeded",
    ]
    assert "KeyError" in checks[1].details["tests"][0]["reason"]


async def test_in_place_functions_and_program_constants(sandbox_pool: SandboxPool) -> None:
    """A list the test passes is updated from the program's copy (in-place functions work);
    a plain value the program defines is visible to the tests; math imported by the program is
    the tests' own untouched module."""
    tests = (
        "data = [3, 1, 2]\nsort_in_place(data)\nassert data == [1, 2, 3]\n"
        "assert LIMIT == 10 and math.floor(2.5) == 2\n"
    )
    ref = _asserts(tests)
    good = "import math\nLIMIT = 10\ndef sort_in_place(v):\n    v.sort()\n"
    copies = "import math\nLIMIT = 10\ndef sort_in_place(v):\n    v = sorted(v)\n"
    checks = await _judge(sandbox_pool, [good, copies], ref, reward="fraction")
    assert [c.score for c in checks] == [1.0, 0.5], [c.details["tests"] for c in checks]


async def test_mbpp_rows_as_published(sandbox_pool: SandboxPool) -> None:
    """MBPP rows go in as published: the host evaluator where it can express the asserts, the
    tester where it cannot (task 596 compares with sys.getsizeof)."""
    for task, row in MBPP.items():
        ref = {"test_list": row["test_list"], "test_imports": row["test_imports"], "task_id": task}
        options = {"time_limit_s": 10} if task == 123 else {}  # its canonical solution is slow
        (check,) = await _judge(sandbox_pool, [row["code"]], ref, **options)
        assert check.score == 1.0, (task, check.details)
        assert ("judged_by" in check.details) == (task == 596), task
    hack = "def tuple_size(t):\n    return 0\n"
    (check,) = await _judge(
        sandbox_pool, [hack], {"test_list": MBPP[596]["test_list"], "test_imports": ["import sys"]}
    )
    assert check.score == 0.0
