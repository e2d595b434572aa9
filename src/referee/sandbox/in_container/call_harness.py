"""Runs ONE `function` or `assert` test of a Python program, inside the sandbox only (the
host halves of these formats: judge.values_equal and referee.sandbox.assert_format).

Started by the supervisor as a fresh process per test with the test's spec on fd 3 and a
result pipe on fd 4. It loads the candidate (module name `solution`, so an
`if __name__ == "__main__":` demo block does not run), then:

- function: calls fn_name(*args) (or Solution().fn_name(*args)) and writes the return value
  as plain JSON (tuples become lists; anything else that is not a JSON value fails). The judge
  compares outside the container: the candidate's __eq__ is never called and the expected
  value never enters the sandbox.
- assert: the judge has split each assert into the candidate's own expressions (the `f(x)`
  of `assert abs(f(x) - 3) < 1e-6`), evaluated here in order, and the rest of the check, which
  it evaluates itself on the values returned. Values come back type-tagged (tuple vs list,
  sets, int vs float) without trusting any method of a candidate-defined class (those come
  back as opaque; an opaque value of a built-in type such as re.Match carries its truth
  value); generators/iterators are materialised. An exception raised by one
  expression is reported for that expression: the judge decides whether the check needed it
  (`f(1) == 1 and f(2) == 2` skips f(2) when f(1) != 1, as Python would).

Writing the result is the proof that the test ran: a program that exits early (sys.exit(0),
os._exit(0)) leaves no result and gets wrong_answer. Any other exception propagates, so the
process exits non-zero: runtime_error (MemoryError: memory_limit_exceeded).
"""

import base64
import json
import os
import sys
import types

SOURCE = "/work/sol.py"
MAX_DEPTH = 100
MAX_ITEMS = 1 << 20
# Exact types only: what Python's own iterators are; materialised so the judge can list() them.
ITERATOR_TYPES = frozenset(
    {
        types.GeneratorType,
        map,
        filter,
        zip,
        enumerate,
        reversed,
        type(iter([])),
        type(iter(())),
        type(iter("")),
        type(iter(range(0))),
        type({}.keys()),
        type({}.values()),
        type({}.items()),
    }
)


# Py_TPFLAGS_IMMUTABLETYPE: set on types defined in C (int, re.Match, ...), never on a class
# a program defines, and their methods cannot be replaced.
IMMUTABLE_TYPE = 1 << 8
# C types with a length or value of their own whose truth value is computed natively, without
# calling any Python code (unlike weakref proxies or mappingproxy, which ask what they wrap).
NATIVE_TRUTH = frozenset(
    {("collections", "deque"), ("array", "array"), ("decimal", "Decimal"), ("datetime", "timedelta")}
)


def read_spec():
    chunks = []
    while True:
        chunk = os.read(3, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(3)
    return json.loads(b"".join(chunks))


def write_result(payload):
    data = json.dumps(payload, separators=(",", ":")).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(4, view) :]


def _reject(value):
    raise TypeError(f"a {type(value).__name__} is not a JSON value")


def tagged(value, depth=0):
    """Type-tagged encoding. Uses `type()` and the built-in types' own methods, so a class
    that fakes __class__, __eq__, __iter__ or __int__ cannot pass for a plain value."""
    kind = type(value)
    if depth > MAX_DEPTH:
        return {"t": "object", "type": "(nested too deep)"}
    if kind is range:
        return {"t": "range", "start": value.start, "stop": value.stop, "step": value.step}
    if kind in ITERATOR_TYPES:
        items: list = []
        for item in value:  # may run candidate code (a generator): exceptions propagate
            if len(items) >= MAX_ITEMS:
                return {"t": "object", "type": "(iterator too long)"}
            items.append(tagged(item, depth + 1))
        return {"t": "iter", "v": items}
    try:
        if value is None:
            return {"t": "none"}
        if kind is bool:
            return {"t": "bool", "v": value is True}
        if issubclass(kind, int):
            return {"t": "int", "v": hex(int.__int__(value))}
        if issubclass(kind, float):
            return {"t": "float", "v": float.hex(value)}
        if issubclass(kind, complex):
            return {
                "t": "complex",
                "re": float.hex(complex.real.__get__(value)),
                "im": float.hex(complex.imag.__get__(value)),
            }
        if issubclass(kind, str):
            return {"t": "str", "v": str.__str__(value)}
        if issubclass(kind, (bytes, bytearray)):
            name = "bytes" if issubclass(kind, bytes) else "bytearray"
            return {"t": name, "v": base64.b64encode(bytes(memoryview(value))).decode()}
        for base, name in ((tuple, "tuple"), (list, "list"), (frozenset, "frozenset"), (set, "set")):
            if issubclass(kind, base):
                return {"t": name, "v": [tagged(x, depth + 1) for x in base.__iter__(value)]}
        if issubclass(kind, dict):
            return {
                "t": "dict",
                "v": [[tagged(k, depth + 1), tagged(v, depth + 1)] for k, v in dict.items(value)],
            }
    except (TypeError, ValueError):
        pass
    opaque = {"t": "object", "type": getattr(kind, "__qualname__", "?")}
    truth = opaque_truth(kind, value)
    if truth is not None:
        opaque["truth"] = truth
    return opaque


def opaque_truth(kind, value):
    """The truth value of a value that is not plain data, when no code of the program can take
    part: its exact type is defined in C (re.Match, re.Pattern, a function, a class) and has
    no __bool__/__len__ (always true, nothing is called) or is one of NATIVE_TRUTH. None for
    an instance of the program's own classes (their __bool__ is never called)."""
    try:
        if not type.__dict__["__flags__"].__get__(kind) & IMMUTABLE_TYPE:
            return None
        if not any("__bool__" in vars(k) or "__len__" in vars(k) for k in kind.__mro__):
            return True
        where = (type.__dict__["__module__"].__get__(kind), type.__dict__["__qualname__"].__get__(kind))
        return bool(value) if where in NATIVE_TRUTH else None
    except Exception:
        return None


def raised(exc):
    """How an exception of one assert expression is reported (never its traceback objects)."""
    if isinstance(exc, AssertionError):
        name = "AssertionError"
    else:
        try:
            name = str(type.__dict__["__name__"].__get__(type(exc)))
        except Exception:
            name = "Exception"
    try:
        message = str.__str__(str(exc))[:200]
    except Exception:
        message = ""
    return {"t": "raised", "type": name, "message": message}


def evaluate(expr, namespace):
    try:
        value = eval(compile(expr, "<test>", "eval"), namespace)  # safe: sandbox only  # noqa: S307
        return tagged(value)
    except MemoryError:
        raise  # memory_limit_exceeded: the process dies with the MemoryError traceback
    except Exception as exc:
        return raised(exc)


def load_candidate(setup=None):
    """The program as module `solution`; `setup` (a reference's helpers, see script_tester.py) first."""
    module = types.ModuleType("solution")
    module.__file__ = SOURCE
    sys.modules["solution"] = module
    if setup:
        exec(compile(setup, "<setup>", "exec"), module.__dict__)  # safe: sandbox only  # noqa: S102
    with open(SOURCE, "rb") as handle:
        code = compile(handle.read(), SOURCE, "exec")  # safe: runs only inside the sandbox container
    sys.argv = [SOURCE]
    exec(code, module.__dict__)  # safe: runs only inside the sandbox container  # noqa: S102
    return module.__dict__


def find_function(namespace, name):
    fn = namespace.get(name)
    if fn is None and isinstance(namespace.get("Solution"), type):
        fn = getattr(namespace["Solution"](), name, None)  # LeetCode-style class Solution
    if fn is None:
        raise NameError(f"name {name!r} is not defined")
    return fn


def main():
    spec = read_spec()
    namespace = load_candidate()
    if spec["mode"] == "function":
        value = find_function(namespace, spec["fn_name"])(*spec["args"])
        try:
            payload = {"ok": True, "value": json.loads(json.dumps(value, default=_reject))}
        except (TypeError, ValueError, RecursionError) as exc:
            payload = {"ok": False, "error": str(exc)[:500]}
    else:
        try:
            if spec.get("setup"):
                exec(compile(spec["setup"], "<tests>", "exec"), namespace)  # safe: sandbox only  # noqa: S102
            payload = {"values": [evaluate(expr, namespace) for expr in spec["exprs"]]}
        except AssertionError as exc:
            payload = {"assertion_error": str(exc)[:500]}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    write_result(payload)
    os._exit(0)


if __name__ == "__main__":
    main()
