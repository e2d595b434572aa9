"""The `code` verifier's trusted side: reference validation, extraction, the judge's comparison
rules, verdict classification, and Docker being unreachable (no Docker needed here)."""

from __future__ import annotations

import asyncio
import collections
import decimal
import json
import re
import signal
import time
import weakref

import httpx
import pytest
from pydantic import ValidationError

from referee.runtime import Runtime
from referee.sandbox import judge
from referee.sandbox.in_container import call_harness
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.pool import SandboxPool
from referee.sandbox.protocol import Job, SandboxUnavailable, TestInput, TestRun
from referee.sandbox.run_limits import Limits
from referee.sandbox.script_format import plan_script
from referee.sandbox.settings import SandboxSettings
from referee.service.background import BackgroundServer
from referee.settings import Settings
from referee.verifiers import Resources
from referee.verifiers import code as code_module
from referee.verifiers.base import Check, VerifierError
from referee.verifiers.code import CodeOptions, CodeReference, CodeVerifier, classify, extract_program
from tests.timing import wait_until_async, within

PY = LANGUAGES["python"]
CPP = LANGUAGES["cpp"]


# ---- reference and options ------------------------------------------------------------------


@pytest.mark.parametrize(
    "reference",
    [
        {"language": "cobol", "tests": [{"input": "", "output": ""}]},
        {"language": "c", "test_format": "function", "tests": [{"fn_name": "f", "args": [], "expected": 1}]},
        {"language": "python", "test_format": "stdio", "tests": "assert f(1) == 2"},
        {"language": "python", "test_format": "assert", "tests": "assert f(1 =="},
        {"language": "python", "test_format": "assert", "tests": "x = 1"},
        {"language": "python", "test_format": "stdio", "tests": []},
        {"language": "python", "tests": [{"input": "1"}]},
        {"language": "python", "tests": [{"input": "", "output": ""}], "extra": 1},
        {"language": "python", "test_format": "assert", "tests": "assert True\nassert 1 == 1"},
        {"language": "python", "test_format": "assert", "tests": "assert f(1) == 1\nassert False"},
        {"language": "python", "tests": [{"input": "", "output": ""}], "output_limit_bytes": 10},
    ],
)
def test_bad_references_are_rejected(reference: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValidationError):
        CodeVerifier.validate_reference(reference)


def test_options_forbid_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        CodeOptions.model_validate({"timeout": 3})
    assert CodeOptions.model_validate({"reward": "fraction"}).reward == "fraction"


def test_the_default_reward_is_all_tests_pass() -> None:
    """Issue 17: most code-RL recipes reward a program only when every test passes."""
    assert CodeOptions().reward == "binary"
    assert CodeVerifier.validate_options({}).reward == "binary"  # type: ignore[attr-defined]


# ---- the output cap ----------------------------------------------------------------------------


def _stdio(output: str, **extra: object) -> CodeReference:
    return CodeVerifier.validate_reference(
        {
            "language": "python",
            "tests": [{"input": "", "output": "ok\n"}, {"input": "", "output": output}],
            **extra,
        }
    )


def test_a_problem_whose_expected_output_exceeds_its_cap_is_refused() -> None:
    big = "y" * 1_500_000 + "\n"
    with pytest.raises(ValueError, match=r"test 2 is 1500000 bytes, more than the 1048576-byte stdout cap"):
        CodeVerifier.validate_inputs(_stdio(big), CodeOptions())
    CodeVerifier.validate_inputs(_stdio(big, output_limit_bytes=2 << 20), CodeOptions())
    CodeVerifier.validate_inputs(_stdio(big), CodeOptions(output_limit_bytes=2 << 20))
    # The reference's own cap wins over the options'.
    with pytest.raises(ValueError, match="1048576-byte"):
        CodeVerifier.validate_inputs(
            _stdio(big, output_limit_bytes=1 << 20), CodeOptions(output_limit_bytes=2 << 20)
        )
    with pytest.raises(ValueError, match="4096-byte"):
        CodeVerifier.validate_inputs(_stdio("z" * 5000), CodeOptions(output_limit_bytes=4096))
    # What the judge ignores (trailing whitespace, trailing empty lines) is not counted.
    CodeVerifier.validate_inputs(_stdio("z" * 4096 + "   \n\n\n"), CodeOptions(output_limit_bytes=4096))
    # Bytes, not characters.
    with pytest.raises(ValueError, match="test 2 is 6000 bytes"):
        CodeVerifier.validate_inputs(_stdio("é" * 3000), CodeOptions(output_limit_bytes=4096))
    with pytest.raises(ValidationError):
        _stdio("x", output_limit_bytes=(16 << 20) + 1)


def test_the_service_default_cap_is_its_sandboxs_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """REFEREE_SANDBOX_STDOUT_LIMIT_BYTES -> Settings -> the runtime's sandbox -> validation:
    the cap a request is validated against is the one its tests will run under."""
    monkeypatch.setenv("REFEREE_SANDBOX_STDOUT_LIMIT_BYTES", str(2 << 20))
    raised = Runtime(Settings(workers=1)).resources
    CodeVerifier.validate_inputs(_stdio("y" * 1_500_000), CodeOptions(), raised)
    monkeypatch.setenv("REFEREE_SANDBOX_STDOUT_LIMIT_BYTES", "2048")
    lowered = Runtime(Settings(workers=1)).resources
    with pytest.raises(ValueError, match="2048-byte"):
        CodeVerifier.validate_inputs(_stdio("y" * 3000), CodeOptions(), lowered)
    # Without a sandbox (in-process use): the default cap, 1 MiB.
    CodeVerifier.validate_inputs(_stdio("y" * 3000), CodeOptions())
    with pytest.raises(ValueError, match="1048576-byte"):
        CodeVerifier.validate_inputs(_stdio("y" * 1_500_000), CodeOptions())


def test_a_too_large_expected_output_is_a_422_through_the_service(server: BackgroundServer) -> None:
    """Through the engine's validation path: 422 naming the test and the cap, before anything
    runs; with the cap raised (reference or options) the request is accepted for scoring."""
    big = {"language": "python", "tests": [{"input": "", "output": "y" * 1_500_000 + "\n"}]}
    payload = {"verifier": "code", "response": "print(1)", "reference": big}
    response = httpx.post(f"{server.url}/v1/score", json=payload, timeout=60)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_error"
    [error] = body["detail"]
    assert error["loc"] == ["reference"]
    assert "test 1 is 1500000 bytes, more than the 1048576-byte stdout cap" in error["msg"]
    assert "set output_limit_bytes" in error["msg"]
    groups = {"groups": [{"verifier": "code", "reference": big, "responses": ["print(1)"]}]}
    assert httpx.post(f"{server.url}/v1/groups", json=groups, timeout=60).status_code == 422
    too_low = {**payload, "reference": {**big, "tests": [{"input": "", "output": "z" * 5000}]}}
    too_low["options"] = {"output_limit_bytes": 4096}
    assert httpx.post(f"{server.url}/v1/score", json=too_low, timeout=60).status_code == 422
    for fixed in (
        {**payload, "reference": {**big, "output_limit_bytes": 2 << 20}},
        {**payload, "options": {"output_limit_bytes": 2 << 20}},
    ):
        response = httpx.post(f"{server.url}/v1/score", json=fixed, timeout=60)
        assert response.status_code == 200, response.text  # no sandbox here: a masked error


class _NoRunSandbox:
    """A healthy sandbox whose stdout cap differs from the one validation assumed."""

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings

    def health(self) -> tuple[bool, str]:
        return True, "ok"

    async def run(self, job: Job) -> object:
        raise AssertionError("nothing may run")


async def test_a_service_cap_below_the_expected_output_is_an_error_not_a_zero() -> None:
    verifier = CodeVerifier()
    prepared = verifier.prepare(_stdio("y" * 3000), CodeOptions())
    sandbox = _NoRunSandbox(SandboxSettings(stdout_limit_bytes=2048))
    [result] = await verifier.check_group(["print(1)"], prepared, CodeOptions(), Resources(sandbox=sandbox))
    assert isinstance(result, VerifierError) and "2048-byte stdout cap" in str(result)


class _RecordingSandbox(_NoRunSandbox):
    """Runs nothing: every program "prints" its own source, and each job's source is recorded."""

    def __init__(self, settings: SandboxSettings) -> None:
        super().__init__(settings)
        self.sources: list[bytes] = []

    async def run(self, job: Job) -> object:
        from referee.sandbox.protocol import RunResult

        self.sources.append(job.source)
        await asyncio.sleep(0)
        return RunResult(tests=[TestRun(status="exited", exit_code=0, stdout=job.source) for _ in job.tests])


async def test_identical_programs_of_a_group_run_once_and_share_the_verdict() -> None:
    """A group of 6 responses with 3 distinct programs (fenced or not, prose around them): three
    jobs, and each copy gets its first occurrence's verdict, marked `same_program_as`."""
    verifier = CodeVerifier()
    reference = {"language": "python", "tests": [{"input": "", "output": "a\n"}]}
    prepared = verifier.prepare(CodeVerifier.validate_reference(reference), CodeOptions())
    sandbox = _RecordingSandbox(SandboxSettings())
    responses = ["a", "b", "Here:\n```python\na\n```", "a", "c", "b"]
    results = await verifier.check_group(responses, prepared, CodeOptions(), Resources(sandbox=sandbox))
    assert sorted(sandbox.sources) == [b"a", b"a\n", b"b", b"c"]  # the fenced "a" keeps its newline
    scores = [r.score for r in results if not isinstance(r, VerifierError)]
    assert scores == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    shared = [r.details.get("same_program_as") for r in results if not isinstance(r, VerifierError)]
    assert shared == [None, None, None, 0, None, 1]


def test_the_run_limits_use_the_references_cap() -> None:
    verifier = CodeVerifier()
    pool = SandboxPool(SandboxSettings(retry_interval_s=60))
    for reference, options, cap in [
        (_stdio("a"), CodeOptions(), 1 << 20),
        (_stdio("a"), CodeOptions(output_limit_bytes=4096), 4096),
        (_stdio("a", output_limit_bytes=8192), CodeOptions(output_limit_bytes=4096), 8192),
    ]:
        prepared = verifier.prepare(reference, options)
        assert verifier._limits(pool, prepared, options).stdout_bytes == cap


# ---- extraction -----------------------------------------------------------------------------


def test_extracts_the_last_block_of_the_language() -> None:
    text = "<think>```python\nprint(0)\n```</think>Plan:\n```python\nprint(1)\n```\n```text\nout\n```\n```py\nprint(2)\n```"
    assert extract_program(text, PY, "auto") == "print(2)\n"
    assert extract_program("print(3)\n", PY, "auto") == "print(3)\n"
    assert extract_program("```\nint main(){}\n```", CPP, "auto") == "int main(){}\n"
    assert extract_program("```c\nint main(){}\n```", CPP, "auto") == "int main(){}\n"
    assert extract_program("```py\nx\n```", PY, "none") == "```py\nx\n```"


# ---- stdio comparison -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        (b"3\r\n30  \n\n\n", "3\n30\n", True),
        (b"3\n", "3\n30\n", False),  # printing only the first line must not pass (open-r1's zip())
        (b"3\n30\n31\n", "3\n30\n", False),
        (b" 3\n", "3\n", False),  # leading whitespace is significant
        (b"yes\n", "YES\n", False),
        (b"0.3333333\n", "0.333333333\n", True),
        (b"0.3334\n", "0.333333333\n", False),
        (b"1e9\n", "1000000000.0\n", True),
        (b"3.0000001\n", "3\n", False),  # tolerance only for float literals in the expected
        (b"1 2\n", "1  2\n", False),
        (b"nan\n", "nan\n", True),
        (b"\n3\n", "3\n", False),  # leading empty lines count
        (b"", "", True),
    ],
)
def test_stdio_rules(got: bytes, expected: str, ok: bool) -> None:
    assert judge.compare_stdio(got, expected)[0] is ok


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        (b" 3 \n\n 4\n", "3\n4\n", True),  # lines stripped, blank lines dropped
        (b"1   2\n", "1 2\n", True),  # tokens split on any whitespace
        (b"2 1\n", "1 2\n", False),  # order matters: no token-set fallback
        (b"0.333334\n", "0.333333\n", True),  # within 1e-8 + 1e-5*|exp|
        (b"0.3334\n", "0.333333\n", False),
        (b"3.00001\n", "3\n", True),  # one token of the pair is not an integer: tolerance
        (b"4\n", "3\n", False),  # two integers: exact
        (b"10\n", "010\n", False),
        (b"yes\n", "YES\n", False),
        (b"3\n", "3\n4\n", False),
    ],
)
def test_stdio_apps_convention(got: bytes, expected: str, ok: bool) -> None:
    """The `apps` convention (verl's APPS-derived checkers), option stdio_convention="apps"."""
    assert judge.compare_stdio(got, expected, convention="apps")[0] is ok
    run = TestRun(status="exited", exit_code=0, stdout=got)
    verdict, _ = classify(run, PY, "stdio", expected, "apps")
    assert (verdict == "accepted") is ok


def test_a_huge_numeric_looking_token_is_judged_in_linear_time() -> None:
    started = time.perf_counter()
    for got in (b"1" * (1 << 20) + b"x", b"1" * (1 << 20), b"1." + b"1" * (1 << 20) + b"e"):
        assert judge.compare_stdio(got, "1.5\n")[0] is False
    assert time.perf_counter() - started < within(1.0)
    run = TestRun(status="exited", exit_code=0, stdout=b"9" * (1 << 20) + b".")
    started = time.perf_counter()
    assert classify(run, PY, "stdio", "1.0\n")[0] == "wrong_answer"
    assert time.perf_counter() - started < within(1.0)


def test_unreadable_result_payloads_never_raise() -> None:
    assert judge.parse_payload(b"[" * 200000) is None
    assert judge.parse_payload(b'{"ok": true, "value": ' + b"1" * 5000 + b"}") is None
    run = TestRun(status="exited", exit_code=0, result=b"[" * 200000)
    assert classify(run, PY, "function", 3)[0] == "wrong_answer"
    deep = b'{"ok": true, "value": ' + b"[" * 900 + b"]" * 900 + b"}"
    assert (
        classify(TestRun(status="exited", exit_code=0, result=deep), PY, "function", [1])[0] == "wrong_answer"
    )
    assert judge.values_equal(10**400, 1.0) is False  # float(10**400) overflows: not close


# ---- function comparison ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        (6, 6.0, True),
        (6.0000001, 6.0, True),
        (6.0000001, 6, False),
        (True, 1, False),  # bools are not numbers
        (1, True, False),
        ({"b": 1, "a": 2}, {"a": 2, "b": 1}, True),
        ([1, 2], [1, 2, 3], False),
        ("True", True, False),
        (None, None, True),
        ([[1, 2.0000000001]], [[1, 2.0]], True),
    ],
)
def test_function_values(got: object, expected: object, ok: bool) -> None:
    assert judge.values_equal(got, expected) is ok


# ---- assert planning ----------------------------------------------------------------------------


def test_assert_literals_stay_out_of_the_sandbox() -> None:
    [eq, neg, chained] = judge.plan_asserts("assert f(2) == 917531\nassert not g(1)\nassert 0 < h(1) < 5")
    assert eq.exprs == ("f(2)",)
    assert "917531" not in json.dumps(eq.exprs)
    assert neg.exprs == ("g(1)",)
    assert chained.exprs == ("h(1)",)  # only the program's call runs in the sandbox


@pytest.mark.parametrize(
    ("tests", "exprs"),
    [
        ("assert math.isclose(area(2), 12.56, rel_tol=1e-3)", ("area(2)",)),
        ("assert all([f(1), f(2)])", ("f(1)", "f(2)")),
        ("assert f(1) == 1 and not f(2)", ("f(1)", "f(2)")),
        ("assert f(1) == set((4, 5))", ("f(1)",)),
        ("assert abs(f(1) - 3) < 1e-6", ("f(1)",)),
        ("assert sorted(f([3, 1])) == [1, 3]", ("f([3, 1])",)),
        ("assert set(f(1)) == set([2, 3])", ("f(1)",)),
        ("assert Solution().two([1], 2)[0] == 3", ("Solution().two([1], 2)",)),
        ("assert collections_util(3) == 3", ("collections_util(3)",)),
    ],
)
def test_only_program_calls_go_to_the_sandbox(tests: str, exprs: tuple[str, ...]) -> None:
    [planned] = judge.plan_asserts(tests)
    assert planned.exprs == exprs


@pytest.mark.parametrize(
    "tests",
    [
        "assert all(f(x) for x in [1, 2])",  # a generator: cannot be split
        "assert collections.Counter(f(1)) == {}",  # a stdlib module the candidate could patch
        "import collections\nassert collections.Counter(f(1)) == {}",
        "assert print(f(1))",  # a builtin outside the whitelist
        "assert isinstance(f(1), Foo)",
        "assert f(1) is 3",
        "assert f'{f(1)}' == '1'",
        "def helper(x):\n    return x\nassert helper(f(1)) == 1",
        "assert math.comb(f(1), 2) == 1",
        "assert sorted(f(1), key=len) == []",
    ],
)
def test_asserts_the_host_cannot_split_go_to_the_tester(tests: str) -> None:
    """Beyond the host's whitelist evaluator, test code is judged by the in-sandbox tester
    (sandbox/script_format.py, in_container/script_tester.py) instead of being refused: one
    test per assert."""
    with pytest.raises(judge.UnsupportedAssert):
        judge.plan_asserts(tests)
    ref = CodeVerifier.validate_reference({"language": "python", "test_format": "assert", "tests": tests})
    prepared = CodeVerifier().prepare(ref, CodeOptions())
    assert prepared.mode == "script" and prepared.notes["judged_by"] == "tester"
    assert len(prepared.inputs) == 1
    spec = json.loads(prepared.inputs[0].spec or b"")
    assert spec["test"].startswith("assert") and "f(" in spec["test"]


@pytest.mark.parametrize(
    ("tests", "planned"),
    [
        # A loop of asserts is one test; the helper and the import are every test's prelude.
        (
            "import math\ndef close(a, b):\n    return abs(a - b) < 1e-9\n"
            "for x in [1, 2]:\n    assert close(f(x), x)\nassert f(0) == 0\n",
            [(4, "for x in [1, 2]:"), (6, "assert f(0) == 0")],
        ),
        # HumanEval: no top-level assert, a check function -> check(entry_point).
        ("def check(candidate):\n    assert candidate(1) == 2\n", [(0, "check(inc)")]),
        # A call of a test function is a test; `assert True` is none (not counted).
        ("def test_all():\n    assert g() == 1\nassert True\ntest_all()\n", [(4, "test_all()")]),
    ],
)
def test_how_test_code_is_cut_into_tests(tests: str, planned: list[tuple[int, str]]) -> None:
    cut = plan_script(tests, None, "inc")
    assert [(t.line, t.test.splitlines()[0]) for t in cut if not t.trivial] == planned
    for test in cut:  # no test runs twice: none is in another's prelude
        assert all(test.test.splitlines()[0] not in other.prelude.splitlines() for other in cut)


@pytest.mark.parametrize(
    ("reference", "error"),
    [
        ({"tests": "def check(candidate):\n    assert candidate(1)\n"}, "no `check` function|no assert"),
        ({"tests": "assert f(1) == 1", "setup": "def ("}, "does not parse"),
        (
            {"test_format": "stdio", "tests": [{"input": "", "output": "1"}], "setup": "x = 1"},
            "setup belongs to Python assert and function tests",
        ),
        ({"tests": "assert f(1) == 1", "entry_point": "not a name"}, "entry_point"),
    ],
)
def test_script_references_that_cannot_run_are_refused(reference: dict[str, object], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        CodeVerifier.validate_reference({"language": "python", "test_format": "assert", **reference})


def test_benchmark_rows_as_published() -> None:
    """HumanEval's and MBPP's row shapes are references as they are (the extra fields dropped)."""
    humaneval = {
        "task_id": "HumanEval/0",
        "prompt": "from typing import List\n\ndef inc(x: int) -> int:\n    ...\n",
        "canonical_solution": "    return x + 1\n",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    }
    ref = CodeVerifier.validate_reference(humaneval)
    assert (ref.entry_point, ref.setup, ref.test_format) == ("inc", humaneval["prompt"], "assert")
    mbpp = {"task_id": 596, "code": "...", "test_imports": ["import sys"], "test_list": ["assert f(1) == 1"]}
    ref = CodeVerifier.validate_reference(mbpp)
    assert ref.tests == "import sys\nassert f(1) == 1" and ref.setup is None
    original = {"task_id": 1, "text": "...", "test_setup_code": "X = 1", "test_list": ["assert f(X) == 1"]}
    assert CodeVerifier.validate_reference(original).setup == "X = 1"


def _t(value: object) -> dict[str, object]:
    """The harness's tagged encoding of a plain value (test helper)."""
    if value is None:
        return {"t": "none"}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": hex(value)}
    if isinstance(value, float):
        return {"t": "float", "v": value.hex()}
    if isinstance(value, str):
        return {"t": "str", "v": value}
    kind = type(value).__name__
    if isinstance(value, dict):
        return {"t": "dict", "v": [[_t(k), _t(v)] for k, v in value.items()]}
    return {"t": kind, "v": [_t(v) for v in value]}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("tests", "values", "verdict"),
    [
        ("assert math.isclose(area(2), 12.566, rel_tol=1e-3)", [12.5664], "accepted"),
        ("assert math.isclose(area(2), 12.566, rel_tol=1e-3)", [0], "wrong_answer"),
        ("assert abs(f(1) - 3) < 1e-6", [3.0000000001], "accepted"),
        ("assert abs(f(1) - 3) < 1e-6", [0], "wrong_answer"),
        ("assert set(f(1)) == set([2, 3])", [[3, 2, 2]], "accepted"),
        ("assert set(f(1)) == set([2, 3])", [0], "runtime_error"),  # set(0): TypeError, as in Python
        ("assert sorted(f(1)) == [1, 2, 3]", [[3, 1, 2]], "accepted"),
        ("assert sorted(f(1)) == [1, 2, 3]", [[9]], "wrong_answer"),
        ("assert f(1) == 1 and f(2) == 2", [1, 2], "accepted"),
        ("assert f(1) == set((4, 5))", [{4, 5}], "accepted"),
        ("assert f(1) == set((4, 5))", [[4, 5]], "wrong_answer"),
        ("assert len(f(1)) == 2 and f(1)[0] == 'a'", [["a", "b"], ["a", "b"]], "accepted"),
        ("assert round(f(1), 2) == 0.33", [1 / 3], "accepted"),
        ("assert isinstance(f(1), int)", [True], "accepted"),  # Python: bool is an int
        ("assert f(1) == 10 ** 3", [1000], "accepted"),
    ],
)
def test_assert_wrappers_are_evaluated_on_the_host(tests: str, values: list[object], verdict: str) -> None:
    [planned] = judge.plan_asserts(tests)
    assert judge.judge_assert(planned, _payload(*(_t(v) for v in values)))[0] == verdict


def test_assert_exceptions_follow_python_evaluation_order() -> None:
    [planned] = judge.plan_asserts("assert f(1) == 1 and f(2) == 2")
    boom = {"t": "raised", "type": "ZeroDivisionError", "message": "division by zero"}
    # f(1) != 1: Python never evaluates f(2), so its exception does not count.
    assert judge.judge_assert(planned, _payload(_t(0), boom))[0] == "wrong_answer"
    assert judge.judge_assert(planned, _payload(_t(1), boom))[0] == "runtime_error"
    raised_assert = {"t": "raised", "type": "AssertionError", "message": ""}
    assert judge.judge_assert(planned, _payload(raised_assert, _t(2)))[0] == "wrong_answer"


def test_assert_judge_survives_forged_results() -> None:
    [planned] = judge.plan_asserts("assert set(f(1)) == {1}")
    forged = [
        {"t": "set", "v": [{"t": "list", "v": []}]},  # unhashable set member
        {"t": "int", "v": "zz"},
        {"t": "set", "v": [_t(k * (2**61 - 1) + 7) for k in range(2000)]},  # hash flooding
        "not a dict",
    ]
    for value in forged:
        assert judge.judge_assert(planned, _payload(value))[0] == "wrong_answer"
    started = time.perf_counter()
    [power, repeat] = judge.plan_asserts("assert f(1) ** f(2) == 1\nassert f(3) * 'x' == ''")
    assert judge.judge_assert(power, _payload(_t(3), _t(10**9)))[0] == "runtime_error"  # bounded
    assert judge.judge_assert(repeat, _payload(_t(10**12)))[0] == "runtime_error"
    assert time.perf_counter() - started < within(1.0)


def test_setup_statements_run_before_later_asserts() -> None:
    tests = judge.plan_asserts("import math\nassert f(1) == 1\nx = 2\nassert f(x) == 2")
    assert [t.setup for t in tests] == ["import math", "import math\nx = 2"]


def _payload(*values: object) -> dict[str, object]:
    return {"values": list(values)}


def test_assert_judging_keeps_python_semantics() -> None:
    [t] = judge.plan_asserts("assert f(1) == (1, 2)")
    as_list = {"t": "list", "v": [{"t": "int", "v": "0x1"}, {"t": "int", "v": "0x2"}]}
    as_tuple = dict(as_list, t="tuple")
    assert judge.judge_assert(t, _payload(as_list))[0] == "wrong_answer"
    assert judge.judge_assert(t, _payload(as_tuple))[0] == "accepted"
    [t] = judge.plan_asserts("assert f(1) == 1")
    assert judge.judge_assert(t, _payload({"t": "float", "v": float.hex(1.0)}))[0] == "accepted"
    assert judge.judge_assert(t, _payload({"t": "object", "type": "AlwaysEqual"}))[0] == "wrong_answer"
    assert judge.judge_assert(t, {"assertion_error": ""})[0] == "wrong_answer"
    assert judge.judge_assert(t, None)[0] == "wrong_answer"
    [t] = judge.plan_asserts("assert f(1) < 3")
    assert judge.judge_assert(t, _payload({"t": "none"}))[0] == "runtime_error"  # None < 3: TypeError
    [t] = judge.plan_asserts("assert f(1) is not None")
    assert judge.judge_assert(t, _payload({"t": "object", "type": "Node"}))[0] == "accepted"


# ---- classification -------------------------------------------------------------------------------


def test_classify_by_how_the_process_ended() -> None:
    ok = TestRun(status="exited", exit_code=0, stdout=b"3\n")
    assert classify(ok, PY, "stdio", "3\n") == ("accepted", None)
    assert classify(TestRun(status="timeout"), PY, "stdio", "3\n")[0] == "time_limit_exceeded"
    assert classify(TestRun(status="output_limit"), PY, "stdio", "3\n")[0] == "output_limit_exceeded"
    killed = TestRun(status="signaled", signal=signal.SIGKILL, oom=True)
    assert classify(killed, PY, "stdio", "3\n")[0] == "memory_limit_exceeded"
    memerr = TestRun(
        status="exited", exit_code=1, stderr=b"Traceback (most recent call last):\n  File x\nMemoryError\n"
    )
    assert classify(memerr, PY, "stdio", "3\n")[0] == "memory_limit_exceeded"
    printed = TestRun(status="exited", exit_code=1, stderr=b"MemoryError\nbye\n")
    assert classify(printed, PY, "stdio", "3\n")[0] == "runtime_error"
    caught = TestRun(status="exited", exit_code=3, stderr=b"MemoryError\n")
    bare = TestRun(status="exited", exit_code=1, stderr=b"MemoryError\n")  # print(...); exit(1)
    assert classify(bare, PY, "stdio", "3\n")[0] == "runtime_error"
    assert classify(caught, PY, "stdio", "3\n")[0] == "runtime_error"
    peak = TestRun(status="exited", exit_code=0, stdout=b"3\n", max_rss_kb=270 << 10, memory_exceeded=True)
    assert classify(peak, PY, "stdio", "3\n")[0] == "memory_limit_exceeded"
    self_xcpu = TestRun(status="signaled", signal=signal.SIGXCPU, cpu_s=0.01, cpu_limit_s=3)
    assert classify(self_xcpu, PY, "stdio", "3\n")[0] == "runtime_error"
    limit_xcpu = TestRun(status="signaled", signal=signal.SIGXCPU, cpu_s=3.0, cpu_limit_s=3)
    assert classify(limit_xcpu, PY, "stdio", "3\n")[0] == "time_limit_exceeded"
    big_result = TestRun(status="result_limit", exit_code=None)
    assert classify(big_result, PY, "function", 1)[0] == "output_limit_exceeded"
    bad_alloc = TestRun(status="signaled", signal=signal.SIGABRT, stderr=b"what():  std::bad_alloc\n")
    assert classify(bad_alloc, CPP, "stdio", "3\n")[0] == "memory_limit_exceeded"
    segv = TestRun(status="signaled", signal=signal.SIGSEGV)
    assert classify(segv, CPP, "stdio", "3\n") == ("runtime_error", "killed by SIGSEGV")
    early_exit = TestRun(status="exited", exit_code=0, result=None)
    assert classify(early_exit, PY, "function", 3)[0] == "wrong_answer"
    not_json = TestRun(status="exited", exit_code=0, result=b'{"ok": false, "error": "a set"}')
    assert classify(not_json, PY, "function", [1])[0] == "wrong_answer"
    lost = TestRun(status="lost", note="tampered")
    assert classify(lost, PY, "stdio", "")[0] == "runtime_error"


def test_a_java_heap_out_of_memory_error_is_memory_limit_exceeded() -> None:
    """The JVM's heap limit comes before the container's: its uncaught OutOfMemoryError (then
    the stack trace, exit 1) is the memory verdict; the same words in another exception's
    message, or on their own, are a runtime error."""
    java = LANGUAGES["java"]
    trace = b"\tat Main.main(Main.java:1)\n\t... 2 more\n"
    heap = b'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n' + trace
    assert classify(TestRun(status="exited", exit_code=1, stderr=heap), java, "stdio", "3\n")[0] == (
        "memory_limit_exceeded"
    )
    other = b'Exception in thread "main" java.lang.RuntimeException: java.lang.OutOfMemoryError\n' + trace
    assert classify(TestRun(status="exited", exit_code=1, stderr=other), java, "stdio", "3\n")[0] == (
        "runtime_error"
    )
    printed = heap + b"bye\n"
    assert classify(TestRun(status="exited", exit_code=1, stderr=printed), java, "stdio", "3\n")[0] == (
        "runtime_error"
    )


def test_over_the_memory_limit_comes_before_out_of_time() -> None:
    """A memory hog that also ran out of time (a collector thrashing near its limit, a loaded
    node) was over the limit all the same; an OOM kill in its tree makes it so too."""
    hog = TestRun(status="timeout", tree_peak_kb=300 << 10, memory_exceeded=True)
    assert classify(hog, PY, "stdio", "3\n")[0] == "memory_limit_exceeded"
    killed_child = TestRun(status="exited", exit_code=0, stdout=b"3\n", oom=True, memory_exceeded=True)
    assert classify(killed_child, PY, "stdio", "3\n") == ("memory_limit_exceeded", "killed out of memory")


class _StarvedSandbox(_NoRunSandbox):
    """The node's load kept the second test from a CPU past its backstop, for the first
    `starved_runs` runs; later runs pass every test."""

    def __init__(self, settings: SandboxSettings, starved_runs: int) -> None:
        super().__init__(settings)
        self.starved_runs, self.runs = starved_runs, 0

    async def run(self, job: Job) -> object:
        from referee.sandbox.protocol import RunResult

        self.runs += 1
        ok = TestRun(status="exited", exit_code=0, stdout=b"a\n")
        if self.runs <= self.starved_runs:
            return RunResult(tests=[ok, TestRun(status="starved"), TestRun(status="starved")])
        return RunResult(tests=[ok, ok, ok])


async def _score_on(sandbox: _StarvedSandbox) -> Check | VerifierError:
    verifier = CodeVerifier()
    reference = {"language": "python", "tests": [{"input": "", "output": "a\n"}] * 3}
    options = CodeOptions(reward="fraction")
    prepared = verifier.prepare(CodeVerifier.validate_reference(reference), options)
    [result] = await verifier.check_group(["print('a')"], prepared, options, Resources(sandbox=sandbox))
    return result


async def test_a_starved_program_is_no_verdict_never_a_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """`starved` (the supervisor's wall-clock backstop fired while the program had used far
    less than its time) makes the response an error (masked), not a time-out, once every
    retry starved too."""
    monkeypatch.setattr(code_module, "STARVED_PAUSE_S", 0.0)
    sandbox = _StarvedSandbox(SandboxSettings(starved_retries=2), starved_runs=10)
    result = await _score_on(sandbox)
    assert isinstance(result, VerifierError) and "overloaded" in str(result)
    assert sandbox.runs == 3


async def test_a_starved_program_is_run_again_for_its_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_module, "STARVED_PAUSE_S", 0.0)
    sandbox = _StarvedSandbox(SandboxSettings(), starved_runs=1)
    result = await _score_on(sandbox)
    assert isinstance(result, Check) and result.score == 1.0, result
    assert sandbox.runs == 2
    never_again = _StarvedSandbox(SandboxSettings(starved_retries=0), starved_runs=1)
    assert isinstance(await _score_on(never_again), VerifierError) and never_again.runs == 1


class _FailedThenStarvedSandbox(_NoRunSandbox):
    """The first test runs and fails (a wrong answer, or a time-out in its own time); the
    node's load then keeps the others from a CPU, on every run."""

    def __init__(self, settings: SandboxSettings, first: TestRun) -> None:
        super().__init__(settings)
        self.first, self.runs = first, 0

    async def run(self, job: Job) -> object:
        from referee.sandbox.protocol import RunResult

        self.runs += 1
        return RunResult(tests=[self.first, TestRun(status="starved"), TestRun(status="starved")])


@pytest.mark.parametrize(
    "first",
    [TestRun(status="exited", exit_code=0, stdout=b"b\n"), TestRun(status="timeout")],
    ids=["wrong_answer", "time_limit_exceeded"],
)
async def test_a_failed_test_before_a_starved_one_is_a_zero_not_masked(
    monkeypatch: pytest.MonkeyPatch, first: TestRun
) -> None:
    """Under the binary reward a test the program ran to its own end and failed decides its 0:
    a wrong or endless program on a busy node was masked (its negative advantage gone)."""
    monkeypatch.setattr(code_module, "STARVED_PAUSE_S", 0.0)
    verifier = CodeVerifier()
    reference = {"language": "python", "tests": [{"input": "", "output": "a\n"}] * 3}
    for reward, zero in (("binary", True), ("fraction", False)):
        options = CodeOptions(reward=reward)
        prepared = verifier.prepare(CodeVerifier.validate_reference(reference), options)
        sandbox = _FailedThenStarvedSandbox(SandboxSettings(), first)
        [result] = await verifier.check_group(["print(1)"], prepared, options, Resources(sandbox=sandbox))
        if zero:  # decided at once, not run again
            assert isinstance(result, Check) and result.score == 0.0, result
            assert result.details["verdict"] != "accepted" and sandbox.runs == 1
        else:  # passed/total is unknown: no verdict
            assert isinstance(result, VerifierError) and "overloaded" in str(result)


# ---- Docker unreachable ---------------------------------------------------------------------------


async def test_unreachable_docker_is_an_error_not_a_zero() -> None:
    pool = SandboxPool(SandboxSettings(docker_host="unix:///nonexistent/docker.sock", retry_interval_s=60))
    await pool.start()  # must not raise
    try:
        healthy, reason = pool.health()
        assert not healthy
        assert "unreachable" in reason
        verifier = CodeVerifier()
        example = verifier.example
        prepared = verifier.prepare(verifier.validate_reference(example["reference"]), CodeOptions())
        with pytest.raises(VerifierError, match="unavailable"):
            await verifier.check_group(
                [example["response"]], prepared, CodeOptions(), Resources(sandbox=pool)
            )
        with pytest.raises(VerifierError, match="not configured"):
            await verifier.check_group([example["response"]], prepared, CodeOptions(), Resources())
    finally:
        await pool.close()


async def test_a_full_queue_fails_fast_with_a_clear_reason() -> None:
    pool = SandboxPool(SandboxSettings(max_parallel=1, max_queued=1, retry_interval_s=60))
    limits = Limits.from_settings(pool.settings)
    job = Job(PY, "stdio", b"print(1)", (TestInput(),), limits)
    # The only run slot is busy (no public way to occupy it without Docker: the test takes it).
    await pool._running_sem.acquire()
    waiting = asyncio.create_task(pool.run(job))
    await wait_until_async(lambda: pool.queued == 1, 5, what="the first job to queue")
    with pytest.raises(SandboxUnavailable, match="sandbox overloaded"):
        await pool.run(job)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert pool.queued == 0


# ---- issue 17: builtin-named entry points -------------------------------------------------------


def test_a_builtin_named_entry_point_is_the_programs() -> None:
    """MBPP's `def sum(a, b)`: when the tests call no other function of the program, the
    builtin-named calls are the program's (as in Python) and run in the sandbox, with a guard."""
    first, second = judge.plan_asserts("assert sum(10, 15) == 25\nassert abs(sum(-1, -2)) == 3")
    assert first.exprs[0] == "sum(10, 15)" and second.exprs[0] == "abs(sum(-1, -2))"
    assert first.guard == second.guard == ("abs", "sum")
    assert "globals()" in first.exprs[-1] and len(first.exprs) == 2
    defined, nothing = _t(["sum"]), _t([])
    assert judge.judge_assert(first, _payload(_t(25), defined)) == ("accepted", None)
    assert judge.judge_assert(first, _payload(_t(24), defined))[0] == "wrong_answer"
    verdict, reason = judge.judge_assert(first, _payload(_t(25), nothing))
    assert verdict == "wrong_answer" and "does not define abs or sum" in (reason or "")
    assert judge.judge_assert(first, _payload(_t(25), _t(0)))[0] == "wrong_answer"  # forged
    # A value bound by a test line and stdlib-module-named functions work the same way.
    [bound] = judge.plan_asserts("x = pow(2, 10)\nassert x == 1024")
    assert bound.exprs[0] == "x" and bound.setup == "x = pow(2, 10)" and bound.guard == ("pow",)
    [module_named] = judge.plan_asserts("assert array(3) == [0, 0, 0]")
    assert module_named.exprs[0] == "array(3)"


def test_builtins_next_to_the_programs_functions_stay_the_hosts() -> None:
    [planned] = judge.plan_asserts("assert sorted(f([3, 1])) == [1, 3]")
    assert planned.exprs == ("f([3, 1])",) and planned.guard == ()
    # ... so an assert that calls only a builtin there is no test, and if it fails whatever the
    # program does the reference is refused with the reason.
    with pytest.raises(
        ValidationError, match=r"line 2 involves no function of the program.*TypeError.*sum is"
    ):
        CodeVerifier.validate_reference(
            {
                "language": "python",
                "test_format": "assert",
                "tests": "assert f(1) == 1\nassert sum(10, 15) == 25",
            }
        )


# ---- issue 17: trivially true asserts -------------------------------------------------------------


def test_asserts_that_do_not_involve_the_program_are_not_counted() -> None:
    tests = (
        "assert True, 'debug'\nassert f(1) == 2\nx = 3\nassert x == 3\nassert len([1]) == 1\nassert f(x) == 4"
    )
    verifier = CodeVerifier()
    reference = verifier.validate_reference({"language": "python", "test_format": "assert", "tests": tests})
    prepared = verifier.prepare(reference, CodeOptions())
    assert [t.source for t in prepared.expected] == ["assert f(1) == 2", "assert f(x) == 4"]
    assert len(prepared.inputs) == 2
    assert prepared.notes["not_counted"]["lines"] == [1, 4, 5]
    with pytest.raises(ValidationError, match="no assert involves the program"):
        verifier.validate_reference({"language": "python", "test_format": "assert", "tests": "assert True"})
    with pytest.raises(ValidationError, match=r"line 1 involves no function of the program.*it is false"):
        verifier.validate_reference(
            {"language": "python", "test_format": "assert", "tests": "assert 1 == 2\nassert f(1)"}
        )


# ---- issue 17: the truth value of built-in objects ------------------------------------------------


def test_opaque_values_have_a_truth_value_only_when_the_harness_took_it() -> None:
    [plain, negated, wrapped, inside] = judge.plan_asserts(
        "assert f(1)\nassert not f(2)\nassert bool(f(3))\nassert all([f(4)])"
    )
    match = {"t": "object", "type": "Match", "truth": True}
    unknown = {"t": "object", "type": "Yes"}
    assert judge.judge_assert(plain, _payload(match))[0] == "accepted"
    assert judge.judge_assert(negated, _payload(dict(match, truth=False)))[0] == "accepted"
    assert judge.judge_assert(wrapped, _payload(match))[0] == "accepted"
    assert judge.judge_assert(inside, _payload(match))[0] == "accepted"
    for test in (plain, negated, wrapped, inside):  # inside: all() used to call it true
        assert judge.judge_assert(test, _payload(unknown))[0] == "wrong_answer"
    assert judge.judge_assert(plain, _payload(dict(match, truth="yes")))[0] == "wrong_answer"
    [equal] = judge.plan_asserts("assert f(1) == True")
    assert judge.judge_assert(equal, _payload(match))[0] == "wrong_answer"  # a Match is not True


def test_the_harness_takes_the_truth_value_of_builtin_types_only() -> None:
    """call_harness.tagged (stdlib only, run here as it runs in the sandbox): a type defined in C
    reports its truth value; a class of the program never has its __bool__ called."""
    called = []

    class Yes:
        def __bool__(self) -> bool:
            called.append("bool")
            return True

    class Falsy:
        def __bool__(self) -> bool:
            called.append("proxied")
            return False

    kept = Falsy()
    match = re.match("a", "a")
    assert call_harness.tagged(match) == {"t": "object", "type": "Match", "truth": True}
    assert call_harness.tagged(re.compile("a"))["truth"] is True
    assert call_harness.tagged(len)["truth"] is True
    assert call_harness.tagged(collections.deque())["truth"] is False
    assert call_harness.tagged(decimal.Decimal("0.0"))["truth"] is False
    assert "truth" not in call_harness.tagged(Yes())
    assert "truth" not in call_harness.tagged(weakref.proxy(kept))
    assert "truth" not in call_harness.tagged(
        type("Meta", (type,), {"__bool__": lambda cls: True})("C", (), {})
    )
    assert called == []
    assert call_harness.tagged(range(0)) == {"t": "range", "start": 0, "stop": 0, "step": 1}


def test_the_dataset_form_of_code_rl_datasets_is_a_reference() -> None:
    """APPS/TACO/CodeContests/PrimeIntellect as verl stores them: {"inputs", "outputs", "fn_name"?},
    often as JSON text; stdio without fn_name (lists of lines joined), calls with it (outputs
    wrapped in a one-element list are unwrapped), Python unless a language is given."""
    verifier = CodeVerifier()
    stdio = verifier.validate_reference(json.dumps({"inputs": ["1 2\n", ["3 4"]], "outputs": ["3\n", ["7"]]}))
    assert (stdio.language, stdio.test_format) == ("python", "stdio")
    assert [(t.input, t.output) for t in stdio.tests] == [("1 2\n", "3\n"), ("3 4\n", "7\n")]  # type: ignore[union-attr]
    calls = verifier.validate_reference(
        {"inputs": [[1, 2], [[5], 0]], "outputs": [[3], [[5]]], "fn_name": "add"}
    )
    assert calls.test_format == "function"
    assert [(t.args, t.expected) for t in calls.tests] == [([1, 2], 3), ([[5], 0], [5])]  # type: ignore[union-attr]
    cpp = verifier.validate_reference({"inputs": ["1\n"], "outputs": ["1\n"], "language": "cpp"})
    assert cpp.language == "cpp"
    with pytest.raises(ValidationError, match="same length"):
        verifier.validate_reference({"inputs": ["1"], "outputs": []})
