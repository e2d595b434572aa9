"""Code problems as their datasets store them (referee.verifiers.code_formats).

Each row below is written in its dataset's exact schema (every field, with the upstream loader or
card it was matched against named), so a drift between the stored form and what the verifier
reads shows up here rather than as a silent mis-parse on real data.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import pickle
import posix
import zlib
from typing import Any

import pytest
from pydantic import ValidationError

from referee.verifiers import code_formats
from referee.verifiers.code import CodeReference, CodeVerifier
from referee.verifiers.code_formats import (
    CALL_PRELUDE,
    MAX_DECODED_BYTES,
    PickleRefused,
    decode_private_tests,
)


def _ref(row: Any) -> CodeReference:
    ref = CodeVerifier.validate_reference(row)
    assert isinstance(ref, CodeReference)
    return ref


def _pairs(ref: CodeReference) -> list[tuple[Any, Any]]:
    assert isinstance(ref.tests, list)
    return [(t.input, t.output) if ref.test_format == "stdio" else (t.args, t.expected) for t in ref.tests]  # type: ignore[union-attr]


def _packed(value: object) -> str:
    """LiveCodeBench's storage of private tests: base64(zlib(pickle(json text)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(value))).decode()


# ---- TACO / APPS ------------------------------------------------------------------------------


def taco_row(input_output: dict[str, Any], starter_code: str = "") -> dict[str, Any]:
    """BAAI/TACO's columns (its dataset card, `load_dataset("BAAI/TACO")`), JSON-text fields as stored."""
    return {
        "question": "Add the numbers.",
        "solutions": json.dumps(["print(sum(map(int, input().split())))"]),
        "starter_code": starter_code,
        "input_output": json.dumps(input_output),
        "difficulty": "EASY",
        "raw_tags": "['Mathematics']",
        "name": None,
        "source": "codewars",
        "tags": "['Mathematics']",
        "skill_types": "[]",
        "url": "https://www.codewars.com/kata/x",
        "Expected Auxiliary Space": None,
        "time_limit": None,
        "date": None,
        "picture_num": None,
        "memory_limit": None,
        "Expected Time Complexity": None,
    }


def test_taco_stdio_and_call_based_rows() -> None:
    stdio = _ref(taco_row({"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}))
    assert (stdio.language, stdio.test_format, stdio.setup) == ("python", "stdio", None)
    assert _pairs(stdio) == [("1 2\n", "3\n"), ("3 4\n", "7\n")]
    calls = _ref(
        taco_row(
            {
                "fn_name": "maxProfit",
                "inputs": [[[7, 1, 5, 3, 6, 4]], [[7, 6, 4, 3, 1]]],
                "outputs": [[5], [0]],
            },
            starter_code="class Solution:\n    def maxProfit(self, prices: List[int]) -> int:\n",
        )
    )
    assert calls.test_format == "function"
    assert _pairs(calls) == [([[7, 1, 5, 3, 6, 4]], 5), ([[7, 6, 4, 3, 1]], 0)]
    assert calls.setup == CALL_PRELUDE  # the harness's imports: `List` is defined for the program


def test_apps_row_as_stored() -> None:
    """codeparrot/apps (its loading script apps.py): problem_id, question, solutions, input_output,
    difficulty, url, starter_code; some test-split rows have an empty input_output."""
    row = {
        "problem_id": 4000,
        "question": "Add.",
        "solutions": json.dumps(["def add(a, b):\n    return a + b\n"]),
        "input_output": json.dumps({"fn_name": "add", "inputs": [[1, 2], [[5], 0]], "outputs": [[3], [[5]]]}),
        "difficulty": "introductory",
        "url": "https://www.codewars.com/kata/x",
        "starter_code": "def add(a, b):\n\t",
    }
    assert _pairs(_ref(row)) == [([1, 2], 3), ([[5], 0], [5])]
    assert _ref(
        {**row, "language": "javascript", "input_output": json.dumps({"inputs": ["1"], "outputs": ["1"]})}
    )
    with pytest.raises(ValidationError, match="no tests: its input_output is empty"):
        _ref({**row, "input_output": ""})


# ---- CodeContests -----------------------------------------------------------------------------


def contests_row() -> dict[str, Any]:
    """deepmind/code_contests (its dataset card / contest_problem.proto): every field of a row."""
    return {
        "name": "1548_A. Web of Lies",
        "description": "Add two numbers.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": ["3 4\n", "0 0\n"], "output": ["7\n", "0\n"]},
        "generated_tests": {"input": ["10 -3\n"], "output": ["7\n"]},
        "source": 2,
        "difficulty": 7,
        "solutions": {"language": [3], "solution": ["print(sum(map(int, input().split())))"]},
        "incorrect_solutions": {"language": [3], "solution": ["print(0)"]},
        "cf_contest_id": 1548,
        "cf_index": "A",
        "cf_points": 500.0,
        "cf_rating": 1400,
        "cf_tags": ["math"],
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": {"seconds": 2, "nanos": 0},
        "memory_limit_bytes": 256000000,
        "input_file": "",
        "output_file": "",
    }


def test_code_contests_uses_every_test_set_or_the_chosen_ones() -> None:
    ref = _ref(contests_row())
    assert (ref.language, ref.test_format) == ("python", "stdio")
    assert _pairs(ref) == [("1 2\n", "3\n"), ("3 4\n", "7\n"), ("0 0\n", "0\n"), ("10 -3\n", "7\n")]
    public = _ref({**contests_row(), "test_sets": ["public"], "language": "cpp"})
    assert (public.language, _pairs(public)) == ("cpp", [("1 2\n", "3\n")])
    with pytest.raises(ValidationError, match="test_sets must be"):
        _ref({**contests_row(), "test_sets": ["hidden"]})
    with pytest.raises(ValidationError, match="no tests in the chosen"):
        _ref({**contests_row(), "public_tests": {"input": [], "output": []}, "test_sets": ["public"]})
    with pytest.raises(ValidationError, match="same length"):
        _ref({**contests_row(), "private_tests": {"input": ["1\n"], "output": []}})


# ---- LiveCodeBench ----------------------------------------------------------------------------


def lcb_row(public: list[dict[str, str]], private: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """livecodebench/code_generation_lite, read as lcb_runner/benchmarks/code_generation.py does."""
    return {
        "question_title": "two-sum",
        "question_content": "...",
        "platform": "leetcode" if metadata else "atcoder",
        "question_id": "1",
        "contest_id": "weekly-contest-1",
        "contest_date": "2023-08-21T00:00:00",
        "starter_code": "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        "
        if metadata
        else "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(public),
        "private_test_cases": private,
        "metadata": json.dumps(metadata),
    }


FUNCTIONAL = [
    {"input": "[2, 7, 11, 15]\n9", "output": "[0, 1]", "testtype": "functional"},
    {"input": "[3, 2, 4]\n6", "output": "[1, 2]", "testtype": "functional"},
]
STDIN = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]


def test_livecodebench_functional_rows_call_a_solution_method() -> None:
    private = _packed(json.dumps([{"input": "[3, 3]\n6", "output": "[0, 1]", "testtype": "functional"}]))
    ref = _ref(lcb_row(FUNCTIONAL, private, {"func_name": "twoSum"}))
    assert (ref.test_format, ref.setup) == ("function", CALL_PRELUDE)
    assert _pairs(ref) == [([[2, 7, 11, 15], 9], [0, 1]), ([[3, 2, 4], 6], [1, 2]), ([[3, 3], 6], [0, 1])]
    assert {t.fn_name for t in ref.tests} == {"twoSum"}  # type: ignore[union-attr]
    public_only = _ref({**lcb_row(FUNCTIONAL, private, {"func_name": "twoSum"}), "test_sets": ["public"]})
    assert len(public_only.tests) == 2
    with pytest.raises(ValidationError, match=r"need metadata\.func_name"):
        _ref(lcb_row(FUNCTIONAL, "[]", {}))


def test_livecodebench_stdin_rows_and_plain_json_private_tests() -> None:
    private = json.dumps([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}])
    ref = _ref(lcb_row(STDIN, private, {}))
    assert (ref.test_format, ref.setup) == ("stdio", None)
    assert _pairs(ref) == [("1 2\n", "3\n"), ("5 5\n", "10\n")]
    with pytest.raises(ValidationError, match="must all be 'stdin' or all 'functional'"):
        _ref(lcb_row(STDIN + FUNCTIONAL, "[]", {"func_name": "twoSum"}))


class _Exploit:
    """Unpickled by pickle.loads, this would run os.system (its __reduce__)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def test_a_malicious_pickle_is_refused_without_running(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pwned"
    blob = _packed(_Exploit(str(marker)))
    # Nested inside plain data, or reaching a builtin, a global is refused the same way.
    others = [_packed([json.dumps(STDIN), _Exploit(str(marker))]), _packed({"k": getattr})]
    calls: list[str] = []
    for module in (os, posix):  # what pickle.loads would find by name, recording instead of running
        monkeypatch.setattr(module, "system", lambda cmd: calls.append(cmd) or 0)
    with pytest.raises(PickleRefused, match=r"names posix\.system"):
        decode_private_tests(blob)
    with pytest.raises(ValidationError, match="refused, loading it would run code"):
        _ref(lcb_row(STDIN, blob, {}))
    for other in others:
        with pytest.raises(PickleRefused, match="refused"):
            decode_private_tests(other)
    assert not marker.exists() and calls == []
    # The guard is real: pickle.loads would have run it (recorded by the stand-in, not executed).
    pickle.loads(zlib.decompress(base64.b64decode(blob)))
    assert calls == [f"touch {marker}"] and not marker.exists()


def test_a_zlib_bomb_and_malformed_blobs_are_refused() -> None:
    bomb = base64.b64encode(zlib.compress(b"\0" * (MAX_DECODED_BYTES + 1), 9)).decode()
    assert len(bomb) < MAX_DECODED_BYTES // 100  # small on the wire, huge once inflated
    with pytest.raises(ValueError, match="decompresses to more than"):
        decode_private_tests(bomb)
    with pytest.raises(ValueError, match="neither JSON text nor base64"):
        decode_private_tests("not json, not base64!")
    with pytest.raises(ValueError, match="not zlib data"):
        decode_private_tests(base64.b64encode(b"plain bytes").decode())
    truncated = base64.b64encode(zlib.compress(pickle.dumps("[]"))[:-4]).decode()
    with pytest.raises(ValueError, match="truncated"):
        decode_private_tests(truncated)
    with pytest.raises(ValueError, match="holds a list"):
        decode_private_tests(_packed([1, 2]))
    with pytest.raises(ValueError, match="not a readable pickle"):
        decode_private_tests(base64.b64encode(zlib.compress(b"\x80\x04garbage")).decode())
    assert decode_private_tests(_packed(json.dumps(STDIN))) == STDIN


# ---- Codeforces (open-r1) ---------------------------------------------------------------------


def codeforces_row(**changes: Any) -> dict[str, Any]:
    """open-r1/codeforces, default config (its dataset card's features; scored by
    open_r1/utils/competitive_programming/cf_scoring.py): every field of a row."""
    row = {
        "id": "2000/A",
        "aliases": None,
        "contest_id": "2000",
        "contest_name": "Codeforces Round 1",
        "contest_type": "CF",
        "contest_start": 1723300500,
        "contest_start_year": 2024,
        "index": "A",
        "time_limit": 1.0,
        "memory_limit": 256.0,
        "title": "Sum",
        "description": "Add two numbers.",
        "input_format": "Two integers.",
        "output_format": "Their sum.",
        "interaction_format": None,
        "note": None,
        "examples": [{"input": "1 2\n", "output": "3\n"}],
        "editorial": None,
        "rating": 800,
        "tags": ["math"],
        "testset_size": 2,
        "official_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "-4 4\n", "output": "0\n"}],
        "official_tests_complete": True,
        "input_mode": "stdio",
        "generated_checker": None,
        "executable": True,
        "generated_tests": 0,
    }
    return {**row, **changes}


def test_codeforces_rows_without_checker_are_stdio_tests() -> None:
    ref = _ref(codeforces_row())
    assert (ref.language, ref.test_format) == ("python", "stdio")
    assert _pairs(ref) == [("1 2\n", "3\n"), ("-4 4\n", "0\n")]
    assert _ref(codeforces_row(language="cpp", generated_checker="  ")).language == "cpp"


def test_codeforces_rows_with_a_generated_checker_are_judged_by_it() -> None:
    source = "import sys\nprint(1)\n"
    ref = _ref(codeforces_row(generated_checker=source))
    assert ref.checker is not None
    assert (ref.checker.language, ref.checker.source, ref.checker.convention) == ("python", source, "open-r1")
    assert _pairs(ref) == [("1 2\n", "3\n"), ("-4 4\n", "0\n")]  # the answers the checker gets


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"interaction_format": "Print `? x` to ask..."}, "2000/A is interactive: it needs an interactor"),
        ({"generated_checker": ["not", "source"]}, "generated_checker must be the checker's Python source"),
        ({"input_mode": "file"}, "reads and writes files"),
        ({"official_tests": []}, "has no official tests"),
        ({"official_tests": [{"input": "1"}]}, "official_tests must be"),
    ],
)
def test_codeforces_rows_the_verifier_cannot_judge_yet_are_refused(
    changes: dict[str, Any], error: str
) -> None:
    with pytest.raises(ValidationError, match=error):
        _ref(codeforces_row(**changes))


# ---- the program a setup runs before ----------------------------------------------------------


def test_with_setup_keeps_future_imports_first_and_binds_solution_methods() -> None:
    program = (
        'from __future__ import annotations\nclass Solution:\n    def search(self, x: "List[int]"): ...\n'
    )
    source = code_formats.with_setup(CALL_PRELUDE, program, ["search"])
    tree = ast.parse(source)  # a `from __future__` after the prelude would be a SyntaxError
    first = tree.body[0]
    assert isinstance(first, ast.ImportFrom) and first.module == "__future__"
    assert source.index(CALL_PRELUDE) < source.index("class Solution") < source.index("['search']")
