"""The `script` format, planned and judged on the host (parsing only); its tests run in the
sandbox under in_container/script_tester.py, a trusted process of their own.

The host's assert evaluator (assert_format.py) judges each assert outside the container, but
it can express only a whitelist of operations. Test code beyond it -- HumanEval's
`def check(candidate)` called with an entry point, MBPP asserts that loop, call
`sys.getsizeof` or a tolerance helper of the tests, any reference with trusted `setup` code --
is judged by the script tester instead: the test code runs in a process of its own that only ever receives the
program's return values as plain data (see script_tester.py for why the program cannot
influence it).

How test code is cut into tests: each top-level statement that asserts (an `assert`, a loop or
block with asserts in it) or calls a function of the tests (`check(candidate)`) is one test,
run after every other top-level statement above it (imports, helpers, constants) but no other
test; test code with no such statement that defines `check` is one test, `check(<entry
point>)` (HumanEval). A test that loads no name besides builtins and the modules the tests
import involves nothing of the program: it is no test (not run, not counted), as in the assert
format.
"""

from __future__ import annotations

import ast
import builtins
import signal
from dataclasses import dataclass
from typing import Any

from referee.sandbox.protocol import Judgement

__all__ = ["ScriptTest", "judge_script", "plan_script"]

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True, slots=True)
class ScriptTest:
    prelude: str  # the top-level statements above the test (never another assert)
    test: str  # the assert, or `check(<entry point>)`
    line: int  # its line in the test text (0: the generated `check(...)` call)
    trivial: bool = False  # involves nothing of the program

    def spec(self, setup: str | None, entry_point: str | None) -> dict[str, str | None]:
        return {"setup": setup, "prelude": self.prelude, "test": self.test, "entry_point": entry_point}


def _imported(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name.split(".")[0] for alias in stmt.names}
    return names


def _involves_program(stmt: ast.stmt, harmless: set[str]) -> bool:
    loaded = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bool(loaded - harmless)


def _asserts_outside_functions(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
        return False
    return any(_asserts_outside_functions(child) for child in ast.iter_child_nodes(node))


def _is_test(stmt: ast.stmt, functions: set[str]) -> bool:
    """An assert, a block with asserts in it (`for x, y in cases: assert f(x) == y`), or a call
    of a function of the tests (`check(candidate)`, `test_all()`)."""
    if _asserts_outside_functions(stmt):
        return True
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id in functions
    )


def plan_script(tests: str, setup: str | None = None, entry_point: str | None = None) -> list[ScriptTest]:
    """The tests of `tests` (see the module docstring). Raises SyntaxError when the test code or
    the setup does not parse, ValueError when there is nothing to run."""
    module = ast.parse(tests)
    if setup:
        ast.parse(setup)
    functions = {s.name for s in module.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    if not any(_is_test(stmt, functions) for stmt in module.body):
        if not ("check" in functions and entry_point):
            raise ValueError(
                "the test code has no assert outside a function and no `check` function to call "
                "with the entry_point"
            )
        return [ScriptTest(tests, f"check({entry_point})", 0)]
    harmless = set(_BUILTINS) | _imported(module)
    prelude: list[str] = []
    planned = []
    for stmt in module.body:
        if _is_test(stmt, functions):
            trivial = not _involves_program(stmt, harmless)
            planned.append(ScriptTest("\n".join(prelude), ast.unparse(stmt), stmt.lineno, trivial))
        else:
            prelude.append(ast.unparse(stmt))
    return planned


def judge_script(test: ScriptTest, payload: Any) -> Judgement:
    """(verdict, reason) of one script test from the tester's result. The program cannot write
    that result (script_tester.py), but it can kill the tester: no result is a failure."""
    if not isinstance(payload, dict) or not isinstance(payload.get("passed"), bool):
        return "wrong_answer", "the test produced no result (its process was killed)"
    if payload["passed"]:
        return "accepted", None
    kind, message = payload.get("kind"), str(payload.get("message") or "")[:200]
    if payload.get("memory") is True:
        return "memory_limit_exceeded", None
    if payload.get("signal") == signal.SIGXCPU:
        return "time_limit_exceeded", None
    if kind == "assertion":
        where = f"line {test.line}: " if test.line else ""
        return "wrong_answer", f"assertion failed ({where}{test.test[:160]})" + (
            f": {message}" if message else ""
        )
    if kind in ("raised", "error"):
        return "runtime_error", message
    return "wrong_answer", message  # exited, opaque, missing
