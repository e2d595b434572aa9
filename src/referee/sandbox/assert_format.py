"""The assert format, judged on the host: only the candidate's own calls run in the sandbox
(in_container/call_harness.py evaluates them there; assert_eval.py evaluates the rest here).

Each assert line is split at plan time (when the reference is validated):

- *candidate expressions* -- the maximal `f(...)`, `obj.method(...)`, `NAME` chains rooted at a
  name the candidate defines (not a builtin, not a standard-library module, not a host
  constant or import of the test lines; a name they bind to a candidate value counts) --
  are sent to the sandbox as source text and evaluated there, after the candidate's
  definitions. Their values come back as type-tagged plain data (`decode_tagged`);
- everything else -- literals, comparisons, and/or/not, arithmetic, containers, subscripts and
  a fixed table of pure functions (abs, sorted, set, math.isclose, ...) -- is evaluated HERE by
  `Evaluator`, a whitelist interpreter over those plain values. Nothing the candidate can
  redefine (builtins, `math` attributes, `__eq__`) takes part in the comparison.

An assert that cannot be split this way is rejected when the reference is validated (422).
No eval/exec/compile on the host: the evaluator walks the already-parsed AST.

Builtin-named entry points: when the test lines call no function of the program except names
that are also builtins or standard modules (MBPP's `assert sum(10, 15) == 25`), those calls
are the program's, as they are in Python: they run in the sandbox, and each such test checks
there that the program defines at least one of those names (`guard`), so a program that
defines nothing gets no reward from Python's own `sum`. When the tests also call other
functions of the program, a builtin name stays the host's builtin (a program that redefines
`sorted` cannot change `assert sorted(f(x)) == [1, 2]`).

An assert that involves no program expression at all (`assert True`, `assert len([1]) == 1`)
is `trivial`: it is no test of the program (see `trivial_failure`).
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from referee.sandbox.assert_eval import (
    ALLOWED_KEYWORDS,
    BINOPS,
    HOST_FUNCS,
    MATH_CONSTS,
    MATH_FUNCS,
    TYPE_NAMES,
    CandidateRaised,
    Evaluator,
    TooLarge,
    UnsupportedAssert,
    isinstance_,
)
from referee.sandbox.in_container.tagged import OpaqueValue, decode_tagged
from referee.sandbox.protocol import Judgement

__all__ = ["AssertTest", "UnsupportedAssert", "judge_assert", "plan_asserts", "trivial_failure"]


# A standard-library module name is never the candidate's: `collections.Counter(f(x))` would
# otherwise run in the sandbox, where the candidate can patch the module.
_RESERVED_NAMES = frozenset(dir(builtins)) | frozenset(sys.stdlib_module_names)


def _slot(index: int) -> str:
    return f" v{index}"  # a space: no Python identifier can collide with it


@dataclass(frozen=True, slots=True)
class AssertTest:
    source: str
    setup: str  # statements before this assert that the sandbox needs (imports, candidate values)
    # The candidate expressions, evaluated in the sandbox in order (then the guard's, if any).
    exprs: tuple[str, ...]
    plan: ast.expr  # the assert's test with candidate expressions replaced by slot names
    env: dict[str, Any]  # host constants bound by earlier test lines
    line: int = 0  # its line in the test text
    # Builtin-named entry points: the program must define at least one of them (checked by
    # the last expression in the sandbox) for this test to pass.
    guard: tuple[str, ...] = ()

    @property
    def trivial(self) -> bool:
        """Nothing of the program takes part: the assert is true or false whatever it does."""
        return not self.exprs


@dataclass
class _Scope:
    """What the names used by the test lines mean, line after line."""

    math_aliases: set[str]
    host_funcs: dict[str, Callable[..., Any]]
    host_consts: dict[str, Any]
    foreign: set[str]  # bound by imports of other modules: neither host nor candidate
    candidate_bound: set[str]  # bound by test lines to candidate-derived values
    entry: frozenset[str] = frozenset()  # builtin-named functions that are the program's


class _Planner:
    def __init__(self, scope: _Scope) -> None:
        self.scope = scope
        self.exprs: list[str] = []

    def _root(self, node: ast.expr) -> ast.expr:
        while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node

    def _is_candidate_name(self, name: str) -> bool:
        s = self.scope
        if name in s.candidate_bound or name in s.entry:
            return True
        taken = s.math_aliases | s.host_funcs.keys() | s.host_consts.keys() | s.foreign
        return name not in taken and name not in _RESERVED_NAMES

    def _sandbox(self, node: ast.expr) -> ast.expr:
        self.exprs.append(ast.unparse(node))
        return ast.copy_location(ast.Name(id=_slot(len(self.exprs) - 1), ctx=ast.Load()), node)

    def plan(self, node: ast.expr) -> ast.expr:
        s = self.scope
        if isinstance(node, ast.Name | ast.Call | ast.Attribute):
            root = self._root(node)
            if isinstance(root, ast.Name) and self._is_candidate_name(root.id):
                return self._sandbox(node)
        if isinstance(node, ast.Constant):
            return node
        if isinstance(node, ast.Name):
            if node.id in s.host_consts:
                return node
            raise UnsupportedAssert(f"the name {node.id!r} cannot be used outside a call")
        if isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and node.value.id in s.math_aliases
                and node.attr in MATH_CONSTS
            ):
                return ast.Constant(MATH_CONSTS[node.attr])
            raise UnsupportedAssert(f"unsupported attribute {ast.unparse(node)!r}")
        if isinstance(node, ast.Call):
            return self._plan_call(node)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise UnsupportedAssert("*unpacking is not supported")
            node.elts = [self.plan(e) for e in node.elts]
            return node
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise UnsupportedAssert("**unpacking is not supported")
            node.keys = [self.plan(k) for k in node.keys if k is not None]
            node.values = [self.plan(v) for v in node.values]
            return node
        if isinstance(node, ast.BoolOp):
            node.values = [self.plan(v) for v in node.values]
            return node
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
            node.operand = self.plan(node.operand)
            return node
        if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
            node.left, node.right = self.plan(node.left), self.plan(node.right)
            return node
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, ast.Is | ast.IsNot) and not (
                    isinstance(right, ast.Constant) and right.value in (None, True, False)
                ):
                    raise UnsupportedAssert("`is` is only supported against None, True or False")
            node.left = self.plan(node.left)
            node.comparators = [self.plan(c) for c in node.comparators]
            return node
        if isinstance(node, ast.IfExp):
            node.test, node.body, node.orelse = (
                self.plan(node.test),
                self.plan(node.body),
                self.plan(node.orelse),
            )
            return node
        if isinstance(node, ast.Subscript):
            node.value, node.slice = self.plan(node.value), self.plan(node.slice)
            return node
        if isinstance(node, ast.Slice):
            for field in ("lower", "upper", "step"):
                part = getattr(node, field)
                if part is not None:
                    setattr(node, field, self.plan(part))
            return node
        raise UnsupportedAssert(f"unsupported expression {type(node).__name__}: {ast.unparse(node)[:80]!r}")

    def _plan_call(self, node: ast.Call) -> ast.expr:
        s = self.scope
        func = node.func
        if isinstance(func, ast.Name) and func.id in s.host_funcs:
            name = func.id
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in s.math_aliases
            and func.attr in MATH_FUNCS
        ):
            name = func.attr
            node.func = ast.Name(id=name, ctx=ast.Load())
        else:
            raise UnsupportedAssert(
                f"unsupported call {ast.unparse(func)[:80]!r} (not a function of the program)"
            )
        impl = s.host_funcs.get(name) or MATH_FUNCS.get(name)
        if impl is None:
            raise UnsupportedAssert(f"unsupported call {name!r}")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise UnsupportedAssert("*args are not supported")
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in ALLOWED_KEYWORDS.get(_canonical(impl), set()):
                raise UnsupportedAssert(f"unsupported keyword argument in {ast.unparse(node)[:80]!r}")
        if impl is isinstance_:
            if len(node.args) != 2:
                raise UnsupportedAssert("isinstance takes two arguments")
            node.args = [self.plan(node.args[0]), _plan_types(node.args[1])]
        else:
            node.args = [self.plan(a) for a in node.args]
        for kw in node.keywords:
            kw.value = self.plan(kw.value)
        node.func = ast.Name(id=_canonical(impl), ctx=ast.Load())
        return node


def _canonical(impl: Callable[..., Any]) -> str:
    for table in (HOST_FUNCS, MATH_FUNCS):
        for name, fn in table.items():
            if fn is impl:
                return name
    raise KeyError(impl)


def _plan_types(node: ast.expr) -> ast.expr:
    names = node.elts if isinstance(node, ast.Tuple) else [node]
    if not all(isinstance(n, ast.Name) and n.id in TYPE_NAMES for n in names):
        raise UnsupportedAssert(f"isinstance needs built-in type names, not {ast.unparse(node)[:60]!r}")
    types = tuple(TYPE_NAMES[n.id] for n in names if isinstance(n, ast.Name))
    return ast.Constant(types)  # type: ignore[arg-type]  # only the evaluator reads it


def _bound_names(targets: list[ast.expr]) -> list[str]:
    if not all(isinstance(t, ast.Name) for t in targets):
        raise UnsupportedAssert("only `name = value` assignments are supported between asserts")
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _free_names(sources: list[str]) -> set[str]:
    found: set[str] = set()
    for source in sources:
        found |= {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    return found


def _test_bound_names(module: ast.Module) -> set[str]:
    bound = {"math"}
    for stmt in module.body:
        if isinstance(stmt, ast.Assign):
            bound |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.Import):
            bound |= {a.asname or a.name.split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.ImportFrom):
            bound |= {a.asname or a.name for a in stmt.names}
    return bound


def _entry_points(module: ast.Module) -> frozenset[str]:
    """The builtin-named functions that the tests call as the program's: every name they call
    (not bound by a test line) when no name they use is the program's by the usual rule."""
    bound = _test_bound_names(module)
    exprs = [
        stmt.test if isinstance(stmt, ast.Assert) else stmt.value
        for stmt in module.body
        if isinstance(stmt, ast.Assert | ast.Assign)
    ]
    nodes = [node for expr in exprs for node in ast.walk(expr)]
    names = {n.id for n in nodes if isinstance(n, ast.Name)} - bound
    if any(name not in _RESERVED_NAMES for name in names):
        return frozenset()  # the tests call the program's own functions: builtins are builtins
    called = {n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return frozenset(called - bound)


def _guard_expr(names: tuple[str, ...]) -> str:
    # Evaluated in the program's namespace after its own expressions: which of the names it
    # defines itself (a name it does not define would be Python's builtin there).
    return f"[name for name in {names!r} if name in globals()]"


def plan_asserts(tests: str) -> list[AssertTest]:
    """One AssertTest per assert statement. Raises SyntaxError or UnsupportedAssert."""
    module = ast.parse(tests)
    entry = _entry_points(module)
    guard = tuple(sorted(entry))
    # `math` is the host's own module even when only the candidate imports it (a test line
    # that uses it without an import works in Python when the program imported it).
    scope = _Scope({"math"}, dict(HOST_FUNCS), {}, set(), set(), entry)
    planned: list[AssertTest] = []
    # (statement source, names it binds, goes to the sandbox only when one of them is used there)
    setup: list[tuple[str, set[str], bool]] = []
    for stmt in module.body:
        if isinstance(stmt, ast.Assert):
            source = ast.unparse(stmt)
            planner = _Planner(scope)
            plan = planner.plan(stmt.test)
            needed = _free_names(planner.exprs + [src for src, _, lazy in setup if not lazy])
            lines = [src for src, names, lazy in setup if not lazy or names & needed]
            exprs = tuple(planner.exprs)
            own_guard: tuple[str, ...] = ()
            if exprs and guard:
                exprs, own_guard = (*exprs, _guard_expr(guard)), guard
            planned.append(
                AssertTest(
                    source,
                    "\n".join(lines),
                    exprs,
                    plan,
                    dict(scope.host_consts),
                    line=stmt.lineno,
                    guard=own_guard,
                )
            )
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            _plan_import(stmt, scope)
            setup.append((ast.unparse(stmt), set(), False))
        elif isinstance(stmt, ast.Assign):
            names = _bound_names(stmt.targets)
            planner = _Planner(scope)
            value = planner.plan(stmt.value)
            if not planner.exprs:  # a host constant: evaluated here, sent only where needed
                try:
                    result = Evaluator({**scope.host_consts}).evaluate(value)
                except Exception as exc:
                    raise UnsupportedAssert(
                        f"line {stmt.lineno}: {type(exc).__name__}: {exc}"[:200]
                    ) from None
                for name in names:
                    scope.host_consts[name] = result
                    scope.candidate_bound.discard(name)
                setup.append((ast.unparse(stmt), set(names), True))
            else:
                for name in names:
                    scope.host_consts.pop(name, None)
                    scope.candidate_bound.add(name)
                setup.append((ast.unparse(stmt), set(names), False))
        elif isinstance(stmt, ast.Pass):
            continue
        else:
            raise UnsupportedAssert(
                f"line {stmt.lineno}: only assert, import and `name = value` lines are supported"
            )
    return planned


def _plan_import(stmt: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            bound = alias.asname or alias.name.split(".")[0]
            (scope.math_aliases if alias.name == "math" else scope.foreign).add(bound)
        return
    for alias in stmt.names:
        bound = alias.asname or alias.name
        if stmt.module == "math" and alias.name in MATH_FUNCS:
            scope.host_funcs[bound] = MATH_FUNCS[alias.name]
        elif stmt.module == "math" and alias.name in MATH_CONSTS:
            scope.host_consts[bound] = MATH_CONSTS[alias.name]
        else:
            scope.foreign.add(bound)


def _decode_value(raw: Any) -> Any:
    if isinstance(raw, dict) and raw.get("t") == "raised":
        return CandidateRaised(str(raw.get("type", "Exception"))[:100], str(raw.get("message", ""))[:200])
    return decode_tagged(raw)


def judge_assert(test: AssertTest, payload: Any) -> Judgement:
    """(verdict, reason) of one assert from the harness payload (candidate-controlled data)."""
    if not isinstance(payload, dict):
        return "wrong_answer", "the test produced no result"
    if "assertion_error" in payload:
        return "wrong_answer", "AssertionError raised while evaluating the assert"
    raw = payload.get("values")
    if not isinstance(raw, list) or len(raw) != len(test.exprs):
        return "wrong_answer", "the test produced no result"
    if test.guard:
        try:
            defined = _decode_value(raw[-1])
        except Exception:
            return "wrong_answer", "the test's result is malformed"
        if not (isinstance(defined, list) and defined):
            names = " or ".join(test.guard)
            return "wrong_answer", f"the program does not define {names}, which the tests call as its own"
        raw = raw[:-1]
    try:
        env = dict(test.env)
        env.update({_slot(i): _decode_value(v) for i, v in enumerate(raw)})
    except Exception:  # a forged or malformed result: the candidate wrote it
        return "wrong_answer", "the test's result is malformed"
    try:
        passed = Evaluator(env).truth(Evaluator(env).evaluate(test.plan))
    except CandidateRaised as exc:
        if exc.exc_type == "AssertionError":
            return "wrong_answer", "AssertionError raised by the program"
        return "runtime_error", str(exc)
    except OpaqueValue as exc:
        return "wrong_answer", str(exc)
    except (TooLarge, UnsupportedAssert) as exc:
        return "runtime_error", str(exc)[:200]
    except Exception as exc:  # what Python itself would raise evaluating the check (None < 3)
        return "runtime_error", f"{type(exc).__name__}: {exc}"[:200]
    return ("accepted", None) if passed else ("wrong_answer", f"assertion failed: {test.source[:200]}")


def trivial_failure(test: AssertTest) -> str | None:
    """For a trivial assert (no program expression): why it fails whatever the program does,
    or None when it holds. Evaluated by the host's whitelist evaluator, bounded as always."""
    try:
        passed = Evaluator(dict(test.env)).truth(Evaluator(dict(test.env)).evaluate(test.plan))
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"[:200]
    else:
        if passed:
            return None
        why = "it is false"
    called = sorted(
        n.func.id
        for n in ast.walk(test.plan)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _RESERVED_NAMES
    )
    hint = (
        f" ({', '.join(dict.fromkeys(called))} is Python's own here: a function of the program named like a builtin "
        "is called only when the tests call no other function of the program)"
        if called
        else ""
    )
    return f"{why}{hint}"
