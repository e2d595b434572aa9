"""Runs ONE `script` test of a Python program, inside the sandbox only: trusted test code in
this process, the program in another (planned and judged on the host by
referee.sandbox.script_format).

Why two processes: test code such as HumanEval's `check(candidate)`, or MBPP asserts that loop,
call `sys.getsizeof` or a tolerance helper, cannot be split into "the program's calls" and "a
check the host evaluates" (referee.sandbox.assert_format). Run next to the program in one interpreter,
it would let the program redefine what the tests rely on: a helper of the prompt (`poly`,
`encode_cyclic`), `math.isclose`, the `__eq__` of what it returns, AssertionError itself. So:

- This process (the *tester*) makes itself non-dumpable and forks the *program process* before
  it reads anything: at that moment it holds no test and no expected value, and the program
  (same uid, no capabilities) can then neither trace it, nor read its memory, nor open its file
  descriptors through /proc. It can kill it, which leaves no result: the test fails.
- The program process closes the spec and result descriptors, runs the reference's setup code
  (the prompt's helpers, which the program may call) and then the program, and answers calls.
- The tester reads the spec, runs the setup itself -- those definitions are what the tests
  see, whatever the program redefined -- then the test code, with each name the program
  defines bound to a proxy (the entry point always is the program's): calling one sends the
  arguments to the program process and gets the return value back as type-tagged plain data
  (`call_harness.tagged`), rebuilt here as fresh built-in objects. None of the program's objects,
  classes or methods enters this process: a value that is not plain data comes back as an
  `Opaque` that cannot be compared, hashed, iterated or tested for truth. List, dict, set and
  bytearray arguments are updated in place from the program's copies after the call, so tests
  of in-place functions work.

Result on fd 4: {"passed": true} or {"passed": false, "kind", "message"} with kind
"assertion" (the test's own assert failed); "raised", "exited", "opaque" or "missing" (the
program raised, its process ended, it returned something that is not plain data, or it does
not define the entry point -- and the test did not handle it); or "error" (the test code raised
something else, as it would in Python: `None < 3`). When the program's process ended, "memory"
or "signal" say how.
"""

import ast
import builtins
import contextlib
import ctypes
import importlib
import json
import os
import signal
import socket
import struct
import sys
import types

# The same two files either way (mypy sees two imports of one name, hence the ignores).
if __package__:  # imported on the host (tests): the package's own modules
    from . import call_harness, tagged
else:  # a script in the image: its siblings in /opt/referee (-I leaves the script's folder out)
    sys.path.insert(0, os.path.dirname(__file__))
    import call_harness  # type: ignore[no-redef]
    import tagged  # type: ignore[no-redef]

PR_SET_DUMPABLE = 4
MEMORY_EXIT = 86  # the program process died of a MemoryError
MAX_FRAME = 64 << 20  # what one reply may carry; the result channel's cap bounds the judge side
HEADER = struct.Struct(">I")


class ProgramFailed(Exception):
    """The program failed a call: it raised (`program_exception`), its process ended, or it
    returned something that is not plain data. `kind` says which (see judge_script)."""

    kind = "raised"

    def __init__(self, message="", kind=None):
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class Opaque:
    """A value of the program that is not plain data: it takes part in nothing."""

    def __init__(self, type_name, truth=None):
        self._type_name = type_name
        self._truth = truth

    def _refuse(self, *_args):
        raise ProgramFailed(
            f"the program returned a {self._type_name} object, which is not plain data", "opaque"
        )

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __iter__ = __len__ = _refuse
    __getattr__ = __getitem__ = __contains__ = __add__ = __radd__ = __sub__ = __mul__ = _refuse

    def __bool__(self):
        if self._truth is None:
            self._refuse()
        return self._truth

    def __repr__(self):
        return f"<{self._type_name} object>"


# ---- frames on the socket pair: 4-byte length, then JSON ---------------------------------------


def send_frame(sock, obj):
    data = json.dumps(obj, separators=(",", ":")).encode()
    sock.sendall(HEADER.pack(len(data)) + data)


def recv_exact(sock, size):
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock):
    (size,) = HEADER.unpack(recv_exact(sock, HEADER.size))
    if size > MAX_FRAME:
        raise ProgramFailed("the program's reply is larger than the sandbox's cap", "opaque")
    return json.loads(recv_exact(sock, size))


# ---- plain data both ways ------------------------------------------------------------------------


def untag(obj):
    """call_harness.tagged() undone: fresh built-in objects, a real iterator for a materialised
    one, and this module's Opaque for what is not plain data (tagged.py, shared with the host)."""
    try:
        return tagged.decode_tagged(obj, Opaque, iter)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        raise ProgramFailed("the program's value could not be decoded", "opaque") from None


def refresh_in_place(arg, new):
    """The program's copy of a mutable argument, written back into the test's object."""
    try:
        if type(arg) is type(new) and type(arg) in (list, bytearray):
            arg[:] = new
        elif type(arg) is type(new) and type(arg) in (dict, set):
            arg.clear()
            arg.update(new)
    except TypeError:
        pass


def program_exception(name, message):
    """An exception like the one the program raised: of the built-in class of that name when
    there is one (so `except ValueError:` in a test works), always a ProgramFailed."""
    base = getattr(builtins, name, None)
    if isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
        try:
            return type(name, (base, ProgramFailed), {"__module__": "program"})(message)
        except TypeError:  # a class whose constructor wants more (UnicodeDecodeError)
            pass
    return type(name, (ProgramFailed,), {"__module__": "program"})(message)


# ---- the program process ---------------------------------------------------------------------


def program_process(sock):
    """Runs the setup and the program, then answers `names` and `call` requests; never returns.
    Exits MEMORY_EXIT on a MemoryError, so the tester can tell that death from others."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc is its own
    try:
        hello = recv_frame(sock)
        namespace = call_harness.load_candidate(hello.get("setup"))
        send_frame(sock, {"loaded": True})
        while True:
            req = recv_frame(sock)
            if req["op"] == "names":
                send_frame(sock, {"names": {n: describe(namespace, n) for n in req["names"]}})
            else:
                send_frame(sock, call(namespace, req))
    except MemoryError:
        os._exit(MEMORY_EXIT)
    except BaseException:
        pass
    os._exit(0)


def describe(namespace, name):
    """What the program binds to `name`: a function (or class), a plain value, or a module."""
    value = namespace.get(name, namespace)  # the namespace itself: "not bound"
    if value is namespace:
        try:
            call_harness.find_function(namespace, name)  # a method of a LeetCode-style Solution
        except NameError:
            return {"kind": "missing"}
        return {"kind": "callable"}
    if isinstance(value, types.ModuleType):
        return {"kind": "module"}
    if callable(value):
        return {"kind": "callable"}
    return {"kind": "value", "v": call_harness.tagged(value)}


def call(namespace, req):
    try:
        fn = call_harness.find_function(namespace, req["name"])
        args = [untag(a) for a in req["args"]]
        kwargs = {k: untag(v) for k, v in req["kwargs"].items()}
        value = fn(*args, **kwargs)
        return {"value": call_harness.tagged(value), "args": [call_harness.tagged(a) for a in args]}
    except MemoryError:
        raise
    except Exception as exc:
        return {"raised": call_harness.raised(exc)}


# ---- the tester ------------------------------------------------------------------------------


class Program:
    """The program process, seen from the tester."""

    def __init__(self, sock, pid):
        self.sock = sock
        self.pid = pid
        self.ended = False  # its socket closed: it exited or was killed

    def request(self, obj):
        try:
            send_frame(self.sock, obj)
            return recv_frame(self.sock)
        except (EOFError, OSError):
            self.ended = True
            raise ProgramFailed(
                "the program's process ended (it exited or was killed) before it answered", "exited"
            ) from None

    def proxy(self, name):
        def program_function(*args, **kwargs):
            reply = self.request(
                {
                    "op": "call",
                    "name": name,
                    "args": [call_harness.tagged(a) for a in args],
                    "kwargs": {str(k): call_harness.tagged(v) for k, v in kwargs.items()},
                }
            )
            if "raised" in reply:
                raised = reply["raised"]
                raise program_exception(
                    str(raised.get("type", "Exception"))[:100], str(raised.get("message", ""))
                )
            for arg, new in zip(args, reply.get("args", []), strict=False):
                refresh_in_place(arg, untag(new))
            return untag(reply["value"])

        program_function.__name__ = program_function.__qualname__ = name
        return program_function


def free_names(*sources):
    """Names the code loads but never binds anywhere (nor are builtins): the program's."""
    loaded: set = set()
    bound = set(dir(builtins))
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Name):
                (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.alias):
                bound.add(node.asname or node.name.split(".")[0])
    return sorted(loaded - bound)


def run_tests(program, spec):
    setup, prelude, test = spec.get("setup") or "", spec.get("prelude") or "", spec["test"]
    entry = spec.get("entry_point")
    namespace = {"__name__": "__tests__", "__builtins__": builtins}
    if setup:
        exec(compile(setup, "<setup>", "exec"), namespace)  # safe: sandbox only  # noqa: S102
    wanted = [n for n in free_names(prelude, test) if n not in namespace]
    if entry and entry not in wanted:
        wanted.append(entry)
    described = program.request({"op": "names", "names": wanted})["names"]
    for name, info in described.items():
        kind = info.get("kind")
        if kind == "callable":
            namespace[name] = program.proxy(name)
        elif kind == "value":
            namespace[name] = untag(info["v"])
        elif kind == "module" and name in sys.stdlib_module_names:
            # `import math` in the program, `math.isclose` in the tests (HumanEval's tests run
            # after the program): the tests get the tester's own, untouched module.
            namespace[name] = importlib.import_module(name)
    if entry and described.get(entry, {}).get("kind") != "callable":
        return {"passed": False, "kind": "missing", "message": f"the program does not define {entry}()"}
    if entry and "candidate" in wanted and "candidate" not in namespace:
        namespace["candidate"] = namespace[entry]  # asserts written against `candidate`
    code = compile(prelude + "\n" + test, "<tests>", "exec")  # safe: sandbox only
    try:
        exec(code, namespace)  # safe: runs only inside the sandbox container  # noqa: S102
    except ProgramFailed as exc:
        return failed_call(exc)
    except AssertionError as exc:
        return {"passed": False, "kind": "assertion", "message": str(exc)[:200]}
    except Exception as exc:
        return {"passed": False, "kind": "error", "message": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {"passed": True}


def failed_call(exc):
    name = type(exc).__name__
    shown = str(exc)[:200] if type(exc) is ProgramFailed else f"the program raised {name}: {str(exc)[:200]}"
    return {"passed": False, "kind": exc.kind, "message": shown}


def program_death(pid):
    """How the program process ended, once its socket closed: killed now if it still runs."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except OSError:
        return {}
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"memory": True} if os.WEXITSTATUS(status) == MEMORY_EXIT else {}


def main():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    tester_end, program_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        tester_end.close()
        os.close(3)  # the spec: the program never sees the tests
        os.close(4)  # the result channel: only the tester writes it
        program_process(program_end)
    program_end.close()
    spec = call_harness.read_spec()
    program = Program(tester_end, pid)
    try:
        program.request({"setup": spec.get("setup") or ""})
        result = run_tests(program, spec)
    except ProgramFailed as exc:
        result = failed_call(exc)
    tester_end.close()
    death = program_death(pid)
    if program.ended:
        result.update(death)
    call_harness.write_result(result)
    os._exit(0)


if __name__ == "__main__":
    main()
