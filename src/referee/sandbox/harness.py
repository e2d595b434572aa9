"""Runs ONE `function` or `assert` test of a Python program, inside the sandbox only.

Started by the supervisor as a fresh process per test with the test's spec on fd 3 and a
result pipe on fd 4. It loads the candidate (module name `solution`, so an
`if __name__ == "__main__":` demo block does not run), then:

- function: calls fn_name(*args) (or Solution().fn_name(*args)) and writes the return value
  as plain JSON (tuples become lists; anything else that is not a JSON value fails). The judge
  compares outside the container: the candidate's __eq__ is never called and the expected
  value never enters the sandbox.
- assert: the judge has split each assert into the expressions to evaluate here (e.g. the
  `f(x)` of `assert f(x) == 3`) and the comparison it performs itself. Values come back in a
  type-tagged form that keeps Python's equality semantics (tuple vs list, sets, int vs float)
  without trusting any method of a candidate-defined class (those come back as opaque).
  An AssertionError raised while evaluating is reported as such (wrong_answer).

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
    return {"t": "object", "type": getattr(kind, "__qualname__", "?")}


def load_candidate():
    module = types.ModuleType("solution")
    module.__file__ = SOURCE
    sys.modules["solution"] = module
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
            values = [
                tagged(eval(compile(expr, "<test>", "eval"), namespace))  # safe: sandbox only  # noqa: S307
                for expr in spec["exprs"]
            ]
            payload = {"values": values}
        except AssertionError as exc:
            payload = {"assertion_error": str(exc)[:500]}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    write_result(payload)
    os._exit(0)


if __name__ == "__main__":
    main()
