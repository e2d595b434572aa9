"""The host side of the assert format: a whitelist interpreter over plain values.

It walks an already-planned assert expression (see referee.sandbox.assert_format), in which the
candidate's own calls have been replaced by slot names bound to the plain values the sandbox
returned. Only literals, comparisons, and/or/not, bounded arithmetic, containers, subscripts
and the pure functions below are evaluated -- with the host's own builtins and `math`, never
anything the candidate could have redefined -- and every operation is bounded in cost.
No eval/exec/compile: the evaluator walks the AST.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from referee.sandbox.in_container.tagged import Iterated, Opaque, OpaqueValue, check_hashes

# Bounds that keep one host evaluation cheap whatever the candidate returned.
MAX_INT_BITS = 1 << 17  # operands of int arithmetic (big-int division is quadratic)
MAX_SEQ_RESULT = 1 << 22  # items of a sequence built by `*`
MAX_ROUND_DIGITS = 1000


class UnsupportedAssert(ValueError):
    """The assert cannot be split into candidate calls and a host-side check."""


class CandidateRaised(Exception):
    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(f"{exc_type}: {message}"[:200])
        self.exc_type = exc_type


class TooLarge(Exception):
    pass


def _reversed(value: Any) -> list[Any]:
    return list(reversed(value))


def isinstance_(value: Any, types: Any) -> bool:
    return isinstance(value, types)


HOST_FUNCS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "len": len,
    "sorted": sorted,
    "set": set,
    "frozenset": frozenset,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "sum": sum,
    "min": min,
    "max": max,
    "all": all,
    "any": any,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "reversed": _reversed,  # materialised: a reversed() iterator is not plain data
    "isinstance": isinstance_,
}
MATH_FUNCS: dict[str, Callable[..., Any]] = {
    "isclose": math.isclose,
    "sqrt": math.sqrt,
    "fabs": math.fabs,
    "floor": math.floor,
    "ceil": math.ceil,
}
MATH_CONSTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}
ALLOWED_KEYWORDS = {
    "sorted": {"reverse"},
    "sum": {"start"},
    "min": {"default"},
    "max": {"default"},
    "isclose": {"rel_tol", "abs_tol"},
}
# Only usable as isinstance()'s second argument.
TYPE_NAMES: dict[str, type] = {
    t.__name__: t for t in (int, float, complex, str, bytes, bool, list, tuple, dict, set, frozenset)
}

BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _check_plain(value: Any) -> Any:
    if isinstance(value, Opaque):
        raise OpaqueValue(f"{value!r} is not plain data: its methods are not trusted")
    return value


def _guard_int(*values: Any) -> None:
    for v in values:
        if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
            raise TooLarge("an integer too large for the judge's arithmetic")


def _binop(op: type[ast.operator], left: Any, right: Any) -> Any:
    _check_plain(left)
    _check_plain(right)
    if op is ast.Mod and isinstance(left, str | bytes):
        raise UnsupportedAssert("string formatting with % is not supported")
    if op in (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow):
        _guard_int(left, right)
    if op is ast.Mult:
        for seq, n in ((left, right), (right, left)):
            too_long = (
                isinstance(seq, str | bytes | list | tuple)
                and isinstance(n, int)
                and len(seq) * n > MAX_SEQ_RESULT
            )
            if too_long:
                raise TooLarge("a sequence too large for the judge")
    int_pow = op is ast.Pow and isinstance(left, int) and isinstance(right, int) and right > 0
    if int_pow and abs(left) > 1 and left.bit_length() * right > MAX_INT_BITS:
        raise TooLarge("a power too large for the judge")
    return BINOPS[op](left, right)


def _call(name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    for value in (*args, *kwargs.values()):
        if isinstance(value, Opaque) and name not in ("isinstance", "bool"):  # bool: see Opaque
            raise OpaqueValue(f"{value!r} is not plain data: {name}() of it is not trusted")
    if name == "round" and len(args) > 1 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        raise TooLarge("round() to too many digits")
    if name in ("int", "float", "str") and args and isinstance(args[0], int):
        _guard_int(args[0])
    for value in args[:1]:
        if (
            isinstance(value, range)
            and name not in ("len", "bool", "isinstance")
            and len(value) > MAX_SEQ_RESULT
        ):
            raise TooLarge("a range too long for the judge")
        if name in ("set", "frozenset") and isinstance(value, list | tuple | Iterated):
            check_hashes(list(value))  # a list of values sharing one hash: quadratic set()
    impl = HOST_FUNCS.get(name) or MATH_FUNCS[name]
    return impl(*args, **kwargs)


class Evaluator:
    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env

    def truth(self, value: Any) -> bool:
        # An Opaque value has a truth value only when the harness could take it without running
        # the program's code (a built-in type's instance: re.Match); otherwise this raises.
        return bool(value)

    def evaluate(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            value = self.env[node.id]
            if isinstance(value, CandidateRaised):
                raise value
            return value
        if isinstance(node, ast.Tuple):
            return tuple(self.evaluate(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [self.evaluate(e) for e in node.elts]
        if isinstance(node, ast.Set):
            return {_check_plain(self.evaluate(e)) for e in node.elts}
        if isinstance(node, ast.Dict):
            return {
                _check_plain(self.evaluate(k)): self.evaluate(v)
                for k, v in zip(node.keys, node.values, strict=True)
                if k
            }
        if isinstance(node, ast.BoolOp):
            result: Any = None
            for part in node.values:
                result = self.evaluate(part)
                if self.truth(result) is isinstance(node.op, ast.Or):
                    return result
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.evaluate(node.operand)
            if isinstance(node.op, ast.Not):
                return not self.truth(operand)
            _check_plain(operand)
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            return _binop(type(node.op), self.evaluate(node.left), self.evaluate(node.right))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return (
                self.evaluate(node.body)
                if self.truth(self.evaluate(node.test))
                else self.evaluate(node.orelse)
            )
        if isinstance(node, ast.Subscript):
            container = _check_plain(self.evaluate(node.value))
            return container[_check_plain(self.evaluate(node.slice))]
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(None if p is None else _check_plain(self.evaluate(p)) for p in parts))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [self.evaluate(a) for a in node.args]
            kwargs = {kw.arg: self.evaluate(kw.value) for kw in node.keywords if kw.arg}
            return _call(node.func.id, args, kwargs)
        raise UnsupportedAssert(f"cannot evaluate {type(node).__name__}")

    def _compare(self, node: ast.Compare) -> bool:
        left = self.evaluate(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.evaluate(right_node)
            if isinstance(op, ast.Is | ast.IsNot):
                # Planned only against None/True/False, which are singletons here too.
                ok = (left is right) is isinstance(op, ast.Is)
            else:
                ok = bool(_COMPARE[type(op)](_check_plain(left), _check_plain(right)))
            if not ok:
                return False
            left = right
        return True
