"""The `code` verifier's trusted side: reference validation, extraction, the judge's comparison
rules, verdict classification, and Docker being unreachable (no Docker needed here)."""

from __future__ import annotations

import json
import signal

import pytest
from pydantic import ValidationError

from referee.sandbox import judge
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.pool import SandboxPool
from referee.sandbox.protocol import TestRun
from referee.sandbox.settings import SandboxSettings
from referee.verifiers.base import VerifierError
from referee.verifiers.code import CodeOptions, CodeVerifier, classify, extract_program

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
    ],
)
def test_bad_references_are_rejected(reference: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValidationError):
        CodeVerifier.validate_reference(reference)


def test_options_forbid_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        CodeOptions.model_validate({"timeout": 3})
    assert CodeOptions.model_validate({"reward": "binary"}).reward == "binary"


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
    assert chained.exprs == ("0 < h(1) < 5",)  # not split: evaluated whole in the sandbox


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
    memerr = TestRun(status="exited", exit_code=1, stderr=b"Traceback...\nMemoryError\n")
    assert classify(memerr, PY, "stdio", "3\n")[0] == "memory_limit_exceeded"
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
            await verifier.check_group([example["response"]], prepared, CodeOptions(), {"sandbox": pool})
        with pytest.raises(VerifierError, match="not configured"):
            await verifier.check_group([example["response"]], prepared, CodeOptions(), {})
    finally:
        await pool.close()
