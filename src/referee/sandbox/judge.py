"""The trusted judge: compares what the sandbox returned with the expected values, outside it.

Rules (the judging policy, first line of code_dev.jsonl):
- stdio: CRLF -> LF, trailing whitespace stripped on every line, trailing empty lines ignored;
  the remaining lines must match exactly, except that two corresponding tokens that both parse
  as numbers, the expected one being a float literal ('.', 'e' or 'E'), may differ by
  1e-6 * max(1, |expected|).
- function: the JSON value the harness returned vs the expected JSON value; numbers compare
  numerically (tolerance only when the expected is a float), bools are not numbers, dict key
  order is ignored, lists compare element-wise.
- assert: each assert statement was split (by `plan_asserts`) into expressions evaluated in the
  sandbox and a comparison done here on plain, reconstructed Python values.
"""

from __future__ import annotations

import ast
import base64
import json
import math
import operator
import re
from dataclasses import dataclass
from typing import Any

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TOKEN_SPLIT = re.compile(r"(\s+)")


def _close(got: float, exp: float, tol: float) -> bool:
    if math.isnan(exp) or math.isnan(got):
        return math.isnan(exp) and math.isnan(got)
    if math.isinf(exp) or math.isinf(got):
        return got == exp
    return abs(got - exp) <= tol * max(1.0, abs(exp))


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _line_matches(got: str, exp: str, tol: float) -> bool:
    if got == exp:
        return True
    got_parts, exp_parts = _TOKEN_SPLIT.split(got), _TOKEN_SPLIT.split(exp)
    if len(got_parts) != len(exp_parts):
        return False
    for g, e in zip(got_parts, exp_parts, strict=True):
        if g == e:
            continue
        if not (_NUMBER.fullmatch(g) and _NUMBER.fullmatch(e) and any(c in e for c in ".eE")):
            return False
        if not _close(float(g), float(e), tol):
            return False
    return True


def compare_stdio(got: bytes, expected: str, tol: float = 1e-6) -> tuple[bool, str | None]:
    got_lines = _lines(got.decode("utf-8", "replace"))
    exp_lines = _lines(expected)
    for i, (g, e) in enumerate(zip(got_lines, exp_lines, strict=False)):
        if not _line_matches(g, e, tol):
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
            return _close(float(got), exp, tol)
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


# ---- assert format --------------------------------------------------------------------------


class Opaque:
    """A value the sandbox could not express as plain data (an instance of a candidate class).
    It equals nothing and has no truth value: a test that depends on it fails."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


class OpaqueValue(Exception):
    pass


def decode_tagged(obj: Any) -> Any:
    kind = obj.get("t")
    if kind == "none":
        return None
    if kind == "bool":
        return bool(obj["v"])
    if kind == "int":
        return int(obj["v"], 16)
    if kind == "float":
        return float.fromhex(obj["v"])
    if kind == "complex":
        return complex(float.fromhex(obj["re"]), float.fromhex(obj["im"]))
    if kind == "str":
        return str(obj["v"])
    if kind in ("bytes", "bytearray"):
        data = base64.b64decode(obj["v"])
        return data if kind == "bytes" else bytearray(data)
    if kind in ("list", "tuple", "set", "frozenset"):
        items = [decode_tagged(x) for x in obj["v"]]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
    if kind == "dict":
        return {decode_tagged(k): decode_tagged(v) for k, v in obj["v"]}
    return Opaque(str(obj.get("type", "?")))


_COMPARE: dict[type[ast.cmpop], Any] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


@dataclass(frozen=True, slots=True)
class AssertTest:
    source: str
    setup: str  # statements before this assert (imports, helper values), run in the sandbox
    exprs: tuple[str, ...]  # evaluated in the sandbox, in order
    plan: Any  # ("value", i) | ("literal", v) | ("not", plan) | ("compare", op, left, right)


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _plan(node: ast.expr, exprs: list[str]) -> Any:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ("not", _plan(node.operand, exprs))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        sides = []
        for side in (node.left, node.comparators[0]):
            is_lit, value = _literal(side)
            if is_lit:
                sides.append(("literal", value))
            else:
                exprs.append(ast.unparse(side))
                sides.append(("value", len(exprs) - 1))
        return ("compare", type(node.ops[0]), sides[0], sides[1])
    exprs.append(ast.unparse(node))
    return ("value", len(exprs) - 1)


def plan_asserts(tests: str) -> list[AssertTest]:
    """One AssertTest per assert statement; other statements become setup for later asserts.

    Splitting keeps the expected side of `assert f(x) == <literal>` out of the sandbox and the
    comparison away from the candidate's __eq__ (the literal is compared here)."""
    module = ast.parse(tests)
    planned: list[AssertTest] = []
    setup: list[str] = []
    for stmt in module.body:
        if isinstance(stmt, ast.Assert):
            exprs: list[str] = []
            plan = _plan(stmt.test, exprs)
            planned.append(AssertTest(ast.unparse(stmt), "\n".join(setup), tuple(exprs), plan))
        else:
            setup.append(ast.unparse(stmt))
    return planned


def _evaluate(plan: Any, values: list[Any]) -> Any:
    kind = plan[0]
    if kind == "literal":
        return plan[1]
    if kind == "value":
        return values[plan[1]]
    if kind == "not":
        inner = _evaluate(plan[1], values)
        if isinstance(inner, Opaque):
            raise OpaqueValue(f"the truth value of {inner!r} is not trusted")
        return not inner
    _, op, left_plan, right_plan = plan
    left, right = _evaluate(left_plan, values), _evaluate(right_plan, values)
    if op in (ast.Is, ast.IsNot):
        if isinstance(left, Opaque) or isinstance(right, Opaque):  # identity vs None/True/False
            return _COMPARE[op](left, right)
        if left is None or right is None or isinstance(left, bool) or isinstance(right, bool):
            return _COMPARE[op](left, right)
        return (left == right) is (op is ast.Is)  # `is` on rebuilt values: value identity
    if _contains_opaque(left) or _contains_opaque(right):
        raise OpaqueValue("the comparison involves an object of a candidate-defined class")
    return _COMPARE[op](left, right)


def _contains_opaque(value: Any, depth: int = 0) -> bool:
    if isinstance(value, Opaque):
        return True
    if depth > 200:
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return any(_contains_opaque(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_contains_opaque(k, depth + 1) or _contains_opaque(v, depth + 1) for k, v in value.items())
    return False


def judge_assert(test: AssertTest, payload: Any) -> tuple[str, str | None]:
    """(verdict, reason) of one assert from the harness payload."""
    if not isinstance(payload, dict):
        return "wrong_answer", "the test produced no result"
    if "assertion_error" in payload:
        return "wrong_answer", "AssertionError raised while evaluating the assert"
    raw = payload.get("values")
    if not isinstance(raw, list) or len(raw) != len(test.exprs):
        return "wrong_answer", "the test produced no result"
    try:
        values = [decode_tagged(v) for v in raw]
        outcome = _evaluate(test.plan, values)
        if isinstance(outcome, Opaque):
            raise OpaqueValue(f"the truth value of {outcome!r} is not trusted")
        passed = bool(outcome)
    except OpaqueValue as exc:
        return "wrong_answer", str(exc)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        # What Python itself would raise evaluating this comparison (e.g. None < 3).
        return "runtime_error", f"{type(exc).__name__}: {exc}"[:200]
    return ("accepted", None) if passed else ("wrong_answer", f"assertion failed: {test.source[:200]}")


def parse_payload(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None
