"""The trusted judge: compares what the sandbox returned with the expected values, outside it.

Rules (the judging policy, first line of code_dev.jsonl):
- stdio: CRLF -> LF, trailing whitespace stripped on every line, trailing empty lines ignored;
  the remaining lines must match exactly, except that two corresponding tokens that both parse
  as numbers, the expected one being a float literal ('.', 'e' or 'E'), may differ by
  1e-6 * max(1, |expected|).
- function: the JSON value the call harness returned (in_container/call_harness.py, .js) vs the
  expected JSON value; numbers compare numerically (tolerance only when the expected is a
  float), bools are not numbers, dict key order is ignored, lists compare element-wise.
- assert: see referee.sandbox.assert_format (only the candidate's own calls run in the sandbox;
  the rest of each assert is evaluated here by a whitelist interpreter over plain values; an
  assert that involves no program expression is no test).
- script: see referee.sandbox.script_format (judged in the container by its script tester).

Which in-container file runs each format: the table in referee.sandbox.in_container.

Everything here runs on candidate-controlled data: it is linear-time (the number pattern is
unambiguous, numeric tokens are capped at MAX_NUMBER_CHARS) and never raises on a forged payload.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from referee.sandbox.assert_format import (
    AssertTest,
    UnsupportedAssert,
    judge_assert,
    plan_asserts,
    trivial_failure,
)
from referee.sandbox.in_container.tagged import Opaque, OpaqueValue, decode_tagged

__all__ = [
    "AssertTest",
    "Opaque",
    "OpaqueValue",
    "UnsupportedAssert",
    "compare_stdio",
    "decode_tagged",
    "judge_assert",
    "parse_payload",
    "plan_asserts",
    "stdio_bytes",
    "trivial_failure",
    "values_equal",
]

# Unambiguous: every digit belongs to exactly one of the integer part, the fraction or the
# exponent, so a mismatch fails in linear time (the old `\d+\.?\d*` backtracked quadratically).
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
MAX_NUMBER_CHARS = 64
_TOKEN_SPLIT = re.compile(r"(\s+)")


def _close(got: float, exp: float, tol: float) -> bool:
    if math.isnan(exp) or math.isnan(got):
        return math.isnan(exp) and math.isnan(got)
    if math.isinf(exp) or math.isinf(got):
        return got == exp
    return abs(got - exp) <= tol * max(1.0, abs(exp))


# How stdout is compared (the `stdio_convention` option of the code verifier):
# - "policy" (the default, code_dev.jsonl's rule): trailing whitespace of each line and trailing
#   empty lines ignored; tokens equal, except numbers where the expected token is a float
#   literal, within 1e-6 * max(1, |expected|).
# - "apps": the convention of the APPS-derived checkers that verl's code data sources (apps,
#   taco, codecontests, primeintellect) are scored with (verl/utils/reward_score/prime_code/
#   testing_util.py): each line stripped at both ends, empty lines dropped, tokens split on any
#   whitespace, numbers (any, once one token of the pair is not an integer) within numpy's
#   allclose defaults |got - exp| <= 1e-8 + 1e-5 * |exp|. Not adopted from there: its last
#   resort that compares the *sets* of tokens (any order), which accepts wrong outputs.
StdioConvention = Literal["policy", "apps"]
APPS_RTOL, APPS_ATOL = 1e-5, 1e-8
_INTEGER = re.compile(r"[+-]?\d+")


def _lines(text: str, convention: StdioConvention = "policy") -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    if convention == "apps":
        return [line.strip() for line in lines if line.strip()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _numeric_pair(g: str, e: str) -> bool:
    return (
        len(g) <= MAX_NUMBER_CHARS  # a longer token is no number we compare with tolerance
        and len(e) <= MAX_NUMBER_CHARS
        and _NUMBER.fullmatch(g) is not None
        and _NUMBER.fullmatch(e) is not None
    )


def _line_matches(got: str, exp: str, tol: float, convention: StdioConvention = "policy") -> bool:
    if got == exp:
        return True
    if convention == "apps":
        got_parts, exp_parts = got.split(), exp.split()
    else:
        got_parts, exp_parts = _TOKEN_SPLIT.split(got), _TOKEN_SPLIT.split(exp)
    if len(got_parts) != len(exp_parts):
        return False
    for g, e in zip(got_parts, exp_parts, strict=True):
        if g == e:
            continue
        if not _numeric_pair(g, e):
            return False
        if convention == "apps":
            if _INTEGER.fullmatch(g) and _INTEGER.fullmatch(e):
                return False  # two integers: exact, as there
            if not abs(float(g) - float(e)) <= APPS_ATOL + APPS_RTOL * abs(float(e)):
                return False
        elif not (any(c in e for c in ".eE") and _close(float(g), float(e), tol)):
            return False
    return True


def stdio_bytes(expected: str) -> int:
    """What a program must print to match `expected`: its bytes without the trailing whitespace
    of each line and the trailing empty lines that the comparison ignores."""
    return len("\n".join(_lines(expected)).encode("utf-8", "surrogatepass"))


def compare_stdio(
    got: bytes, expected: str, tol: float = 1e-6, convention: StdioConvention = "policy"
) -> tuple[bool, str | None]:
    got_lines = _lines(got.decode("utf-8", "replace"), convention)
    exp_lines = _lines(expected, convention)
    for i, (g, e) in enumerate(zip(got_lines, exp_lines, strict=False)):
        if not _line_matches(g, e, tol, convention):
            return False, f"line {i + 1} differs: got {g[:80]!r}, expected {e[:80]!r}"
    if len(got_lines) != len(exp_lines):
        return False, f"got {len(got_lines)} lines, expected {len(exp_lines)}"
    return True, None


def values_equal(got: Any, exp: Any, tol: float = 1e-6) -> bool:
    """JSON values: bool is not a number; tolerance only when the expected number is a float."""
    if isinstance(exp, bool) or isinstance(got, bool):
        return isinstance(exp, bool) and isinstance(got, bool) and got is exp
    if isinstance(exp, int | float) and isinstance(got, int | float):
        if isinstance(exp, float):
            try:
                return _close(float(got), exp, tol)
            except OverflowError:  # an int beyond float range is not close to any float
                return False
        return got == exp
    if isinstance(exp, str) or exp is None:
        return type(got) is type(exp) and got == exp
    if isinstance(exp, list):
        return (
            isinstance(got, list)
            and len(got) == len(exp)
            and all(values_equal(g, e, tol) for g, e in zip(got, exp, strict=True))
        )
    if isinstance(exp, dict):
        return (
            isinstance(got, dict)
            and got.keys() == exp.keys()
            and all(values_equal(got[k], exp[k], tol) for k in exp)
        )
    return False


def parse_payload(data: bytes | None) -> Any:
    """The harness's JSON result, or None when absent or unreadable. The candidate can write
    anything on that fd (b"[" * 200000 makes json.loads raise RecursionError): never raises."""
    if not data:
        return None
    try:
        return json.loads(data)
    except Exception:
        return None
