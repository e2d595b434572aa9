"""The `checker` of a code reference without Docker: its contract (422s that name the field, the
OpenAPI schema), what the request carries, and what each way a checker can end means
(referee.sandbox.checker_format). End to end in the sandbox: tests/sandbox/test_checker.py."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import jsonschema
import pytest
import referencing
import referencing.jsonschema
from pydantic import ValidationError

from referee.sandbox.checker_format import (
    CHECKER_TIME_S,
    CheckedAnswer,
    CheckerProgram,
    checker_outcome,
)
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.protocol import Job, RunResult, TestRun, encode_request
from referee.sandbox.run_limits import Limits, supervisor_deadline_s
from referee.service.background import BackgroundServer
from referee.verifiers.code import CodeOptions, CodeVerifier, checker_failure, classify

PY = LANGUAGES["python"]
TESTS = [{"input": "3\n", "output": "2 3 1\n"}, {"input": "2\n", "output": "2 1\n"}]
CHECKER = {"language": "cpp", "source": '#include "testlib.h"\nint main() {}\n'}


def _reference(**changes: Any) -> dict[str, Any]:
    return {"language": "python", "tests": TESTS, "checker": CHECKER, **changes}


# ---- the contract -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "loc", "message"),
    [
        ({"checker": {**CHECKER, "language": "java"}}, ("checker", "language"), "'cpp' or 'python'"),
        ({"checker": {**CHECKER, "source": ""}}, ("checker", "source"), "at least 1 character"),
        ({"checker": {"language": "cpp"}}, ("checker", "source"), "Field required"),
        ({"checker": {**CHECKER, "args": ["x"]}}, ("checker", "args"), "Extra inputs"),
        (
            {"checker": {**CHECKER, "convention": "polygon"}},
            ("checker", "convention"),
            "'testlib' or 'open-r1'",
        ),
        ({"checker": {**CHECKER, "source": "x" * ((1 << 20) + 1)}}, ("checker", "source"), "at most"),
        ({"checker": "checker.cpp"}, ("checker",), "valid dictionary"),
    ],
)
def test_a_malformed_checker_is_refused_naming_the_field(
    changes: dict[str, Any], loc: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        CodeVerifier.validate_reference(_reference(**changes))
    [error] = raised.value.errors()
    assert error["loc"][-len(loc) :] == loc, error
    assert message in error["msg"]


def test_a_checker_belongs_to_stdio_tests() -> None:
    function = {"test_format": "function", "tests": [{"fn_name": "f", "args": [1], "expected": 2}]}
    with pytest.raises(ValidationError, match="checker belongs to stdio tests"):
        CodeVerifier.validate_reference(_reference(**function))


def test_through_the_service_a_bad_checker_is_a_422_and_its_schema_is_published(
    server: BackgroundServer,
) -> None:
    """The OpenAPI document leaves a structured reference's shape to `GET /v1/verifiers/code`
    (`reference_schema`): the checker is there, strict, and the service refuses what it refuses."""
    described = httpx.get(f"{server.url}/v1/verifiers/code", timeout=30).json()["reference_schema"]
    resource = referencing.Resource.from_contents(described, referencing.jsonschema.DRAFT202012)
    registry: referencing.Registry[Any] = referencing.Registry().with_resource("urn:ref", resource)
    validator = jsonschema.Draft202012Validator({"$ref": "urn:ref"}, registry=registry)
    for reference, valid in (
        (_reference(), True),
        (_reference(checker={**CHECKER, "convention": "open-r1"}), True),
        (_reference(checker={**CHECKER, "language": "java"}), False),
        (_reference(checker={**CHECKER, "extra": 1}), False),
        (_reference(checker={"source": "x"}), False),
    ):
        assert validator.is_valid(reference) is valid, reference
        body = {"verifier": "code", "response": "print(1)", "reference": reference}
        response = httpx.post(f"{server.url}/v1/score", json=body, timeout=30)
        assert (response.status_code == 200) is valid, response.text  # no sandbox: a masked error
        if not valid:
            assert "checker" in json.dumps(response.json()["detail"]), response.text


def test_with_a_checker_the_expected_output_is_no_cap_on_what_is_printed() -> None:
    """The answer may be far longer than a valid output (or the other way round): the stdout
    cap check of plain stdio problems does not apply."""
    big = [{"input": "1\n", "output": "x" * 2_000_000}]
    CodeVerifier.validate_inputs(CodeVerifier.validate_reference(_reference(tests=big)), CodeOptions())


# ---- what travels to the sandbox ----------------------------------------------------------------


def test_prepare_sends_the_answers_and_the_checker_and_extends_the_deadline() -> None:
    prepared = CodeVerifier().prepare(_reference(), CodeOptions())
    assert prepared.checker == CheckerProgram("cpp", CHECKER["source"].encode())
    assert prepared.expected == (CheckedAnswer("2 3 1\n"), CheckedAnswer("2 1\n"))
    assert [t.answer for t in prepared.inputs] == [b"2 3 1\n", b"2 1\n"]
    limits = Limits(
        time_s=2.0, memory_mb=256, stdout_bytes=1 << 20, stderr_bytes=4096, compile_timeout_s=30.0
    )
    job = Job(PY, "stdio", b"print(1)", prepared.inputs, limits, checker=prepared.checker)
    request = json.loads(encode_request(job, [0, 1]))
    assert [base64.b64decode(t["answer"]) for t in request["tests"]] == [b"2 3 1\n", b"2 1\n"]
    checker = request["checker"]
    assert base64.b64decode(checker["source"]) == CHECKER["source"].encode()
    assert checker["compile"][:1] == ["g++"] and "/opt/referee/testlib" in checker["compile"]
    assert (checker["args"], checker["time_s"]) == (["input", "output", "answer"], CHECKER_TIME_S)
    assert request["memory_mb"] == 256  # the checker's memory limit is the test's
    # The checker's compile and one run per test come on top of the program's own time.
    assert request["deadline_s"] == pytest.approx(
        supervisor_deadline_s(limits, 2) + 30.0 + 2 * (CHECKER_TIME_S + 1)
    )
    plain = json.loads(encode_request(Job(PY, "stdio", b"", prepared.inputs, limits), [0, 1]))
    assert plain["checker"] is None and plain["deadline_s"] == pytest.approx(supervisor_deadline_s(limits, 2))


def test_open_r1_checkers_get_the_answer_before_the_output() -> None:
    program = CheckerProgram("python", b"print(1)", "open-r1")
    request = program.request()
    assert request["args"] == ["input", "answer", "output"]
    assert request["run"][:3] == ["python3", "-I", "-c"]  # the wrapper: an exception exits 3


# ---- what a checker's end means -----------------------------------------------------------------


def _ran(code: int | None, stdout: str = "", stderr: str = "", **extra: Any) -> dict[str, Any]:
    return {"status": "exited", "exit_code": code, "stdout": stdout, "stderr": stderr, **extra}


@pytest.mark.parametrize(
    ("raw", "accepted", "credit", "failure"),
    [
        (_ran(0, stderr="ok 3 numbers"), True, 1.0, None),
        (_ran(1, stderr="wrong answer 2 appears twice"), False, 0.0, None),
        (_ran(2, stderr="wrong output format Expected int"), False, 0.0, None),
        (_ran(4, stderr="wrong output format Extra information"), False, 0.0, None),
        (_ran(8, stderr="unexpected eof"), False, 0.0, None),
        (_ran(7, stderr="points 0.25 a quarter"), False, 0.25, None),
        (_ran(7, stderr="points 1 all of it"), True, 1.0, None),
        (_ran(7, stderr="points 7"), False, 0.0, "not a number in [0, 1]"),
        (_ran(7, stderr="no number"), False, 0.0, "not a number in [0, 1]"),
        (_ran(3, stderr="FAIL bad test"), False, 0.0, "the checker failed (FAIL): FAIL bad test"),
        (_ran(42), False, 0.0, "exited with status 42"),
        ({"status": "signaled", "signal": 11}, False, 0.0, "killed by signal 11"),
        ({"status": "timeout"}, False, 0.0, "exceeded its time limit"),
        ({"status": "output_limit"}, False, 0.0, "flooded its output"),
        ({"status": "starved"}, False, 0.0, "the checker starved"),
        (_ran(0, memory_exceeded=True), False, 0.0, "exceeded its memory limit"),
        ({"status": "compile_error", "stderr": "error: x"}, False, 0.0, "does not compile: error: x"),
        (None, False, 0.0, "did not run"),
    ],
)
def test_testlib_outcomes(raw: Any, accepted: bool, credit: float, failure: str | None) -> None:
    outcome = checker_outcome(raw)
    assert (outcome.accepted, outcome.credit) == (accepted, credit)
    if failure is None:
        assert outcome.failure is None
    else:
        assert outcome.failure is not None and failure in outcome.failure


@pytest.mark.parametrize(
    ("raw", "accepted", "failure"),
    [
        (_ran(0, stdout="1\n"), True, False),
        (_ran(0, stdout="checking...\n1"), True, False),
        (_ran(0, stdout="0\n"), False, False),
        (_ran(0, stdout=""), False, False),
        (_ran(3, stderr="ValueError: invalid literal for int()"), False, False),  # raised on garbage
        (_ran(1, stdout="1"), False, False),
        ({"status": "timeout"}, False, True),
        ({"status": "signaled", "signal": 9}, False, True),
    ],
)
def test_open_r1_outcomes(raw: dict[str, Any], accepted: bool, failure: bool) -> None:
    outcome = checker_outcome(raw, "open-r1")
    assert outcome.accepted is accepted
    assert (outcome.failure is not None) is failure


def test_a_checked_test_is_judged_by_the_checker_and_its_failure_masks_the_response() -> None:
    answer = CheckedAnswer("2 1\n")
    ok = TestRun(status="exited", exit_code=0, stdout=b"anything", checker=_ran(0, stderr="ok"))
    wrong = TestRun(status="exited", exit_code=0, stdout=b"2 1\n", checker=_ran(1, stderr="wrong answer p_1"))
    assert classify(ok, PY, "stdio", answer) == ("accepted", None)
    assert classify(wrong, PY, "stdio", answer) == ("wrong_answer", "checker: wrong answer p_1")
    # The program's own failures come first: the checker never ran.
    assert classify(TestRun(status="timeout"), PY, "stdio", answer)[0] == "time_limit_exceeded"
    prepared = CodeVerifier().prepare(_reference(), CodeOptions())
    failed = TestRun(status="exited", exit_code=0, checker=_ran(3, stderr="FAIL"))
    assert checker_failure(RunResult(tests=[ok, wrong]), prepared) is None
    assert (
        checker_failure(RunResult(tests=[ok, failed]), prepared) == "test 2: the checker failed (FAIL): FAIL"
    )


def test_points_count_in_a_fraction_reward() -> None:
    verifier = CodeVerifier()
    prepared = verifier.prepare(_reference(), CodeOptions())
    half = TestRun(status="exited", exit_code=0, checker=_ran(7, stderr="points 0.5"))
    full = TestRun(status="exited", exit_code=0, checker=_ran(0))
    check = verifier._check(RunResult(tests=[full, half]), prepared, CodeOptions(reward="fraction"))
    assert (check.score, check.details["passed"], check.details["tests"][1]["points"]) == (0.75, 1, 0.5)
    binary = verifier._check(RunResult(tests=[full, half]), prepared, CodeOptions())
    assert (binary.score, binary.details["verdict"]) == (0.0, "wrong_answer")
