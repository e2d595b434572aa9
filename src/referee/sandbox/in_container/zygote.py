"""Warm Python template inside the sandbox: every Python test is a fork of it, not a new
interpreter (stdlib only, Python 3.11; started by the supervisor, see supervisor.Zygote).

Why: a fresh `python3 -I sol.py` costs 7-15 ms of CPU before the first line of the program
runs; a fork of an interpreter that already started costs well under 1 ms. At RL scale
(hundreds of programs x tens of tests per step) that start-up is most of the work.

What it holds: nothing secret. It is exec'd by the supervisor before any request is read, and
afterwards only ever receives the command of the next child (argv, environment, rlimits, uid,
and the child's pipes as file descriptors, with, for a script, a sealed memfd holding the
script's compiled code, which only the child reads): never a program's text, a test, an input
or an expected output. A candidate forked from it finds a pristine interpreter: the same flags
(-I), standard streams on its own pipes that nothing has used, `__main__` a new module,
`sys.argv` as `python3` would set it, the environment of the request.

What a child does not redo (most of a trivial test's CPU was copy-on-write faults and
compiling): the standard streams are made once here, the program was compiled once by the
compile step (supervisor.take_code_cache), the image's harness scripts were compiled into it.

Isolation is the supervisor's: the child drops to the program's uid exactly as a spawned
process does (rlimits first, then setgroups/setresgid/setresuid, dumpable again so its own
/proc files are its own, oom_score_adj 1000). The template stays root with the container's
three capabilities and non-dumpable, so no candidate can signal, trace or read it.

Protocol on fd 3 (an AF_UNIX SOCK_SEQPACKET socket, one JSON message per packet):
supervisor -> {"argv", "env", "limits", "uid"} with the child's fds attached (SCM_RIGHTS);
template -> {"pid"} once forked, then {"pid", "status", "utime", "stime", "maxrss"} when
that child has exited (`status` as os.wait4 returns it).
"""

import atexit
import builtins
import contextlib
import ctypes
import gc
import json
import marshal
import os
import resource
import signal
import socket
import sys
import types

CONTROL_FD = 3
WORK = "/work"
MAX_FDS = 8
PR_SET_DUMPABLE = 4
PRCTL = ctypes.CDLL(None, use_errno=True).prctl
# Flags a command may carry (the supervisor sends only such commands, see its ZYGOTE_FLAGS):
# the template was started with -I; -B is honoured per child; -S changes nothing a program
# depends on (site is imported either way, so exit() and quit() exist as in `python3 -I`).
FLAGS = frozenset({"-I", "-S", "-B"})
STREAMS: dict = {}  # pristine_streams(), made once at start
# The image's own scripts a command may run (the test harnesses): their code, loaded once at
# start from the bytecode compiled into the read-only image, is the same for every child.
TRUSTED_SCRIPTS = ("/opt/referee/call_harness.py", "/opt/referee/script_tester.py")
TRUSTED_CODE: dict = {}
START_ENV: dict = {}  # the template's environment, which most commands ask for


def main():
    # Signal dispositions stay as the interpreter set them up (SIGPIPE and SIGXFSZ ignored,
    # SIGINT -> KeyboardInterrupt, the rest default): exactly what a child must find, so it
    # resets nothing. Nobody but the supervisor may signal this process anyway (uid 0).
    PRCTL(PR_SET_DUMPABLE, 0, 0, 0, 0)
    control = socket.socket(fileno=CONTROL_FD)
    STREAMS.update(pristine_streams())
    START_ENV.update(os.environ)
    TRUSTED_CODE.update(trusted_code())
    gc.collect()
    gc.freeze()  # the heap stays shared with every child (no copy-on-write by the collector)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 1 << 20, MAX_FDS)
        except OSError:
            return
        if not msg:
            return
        cmd = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            child(cmd, fds, control)  # never returns
        for fd in fds:
            os.close(fd)
        control.send(json.dumps({"pid": pid}).encode())
        _, status, usage = os.wait4(pid, 0)
        report = {"pid": pid, "status": status, "utime": usage.ru_utime, "stime": usage.ru_stime}
        control.send(json.dumps({**report, "maxrss": usage.ru_maxrss}).encode())


def child(cmd, fds, control):
    """Become the candidate's process and run its program; never returns."""
    try:
        control.detach()
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.setsid()
        high = [os.dup(fd) for fd in fds]  # above the target range first: dup2 never clobbers
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        os.closerange(len(fds), 65536)
        for name, soft, hard in cmd["limits"]:
            resource.setrlimit(name, (soft, hard))
        uid = cmd["uid"]
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        PRCTL(PR_SET_DUMPABLE, 1, 0, 0, 0)
        oom = os.open("/proc/self/oom_score_adj", os.O_WRONLY)  # raising it needs no privilege
        os.write(oom, b"1000")
        os.close(oom)
        os.chdir(WORK)
        code = load_code(cmd.get("code_fd"))  # as the program's uid: the bytes came from it
        if cmd["env"] != START_ENV:  # the usual case is the template's own environment
            os.environ.clear()
            os.environ.update(cmd["env"])
        for name, stream in STREAMS.items():
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            os.write(2, f"sandbox: cannot start {cmd['argv'][0]}: {exc!r}\n".encode())
        os._exit(127)
    os._exit(run_python(cmd["argv"], code))


def pristine_streams():
    """sys.std* for fds 0-2 as the interpreter configures them for pipes, made once, before
    any fork: every child gets them untouched (copy-on-write), so a test does not pay for
    three new stream stacks (most of the copy-on-write faults a trivial test used to take).

    They are made while 0-2 are pipes, so what they find out about their fd at creation
    (not seekable, not a tty, a pipe's block size) is what they would find in the child; the
    template's own fds are put back afterwards and the streams are never used here."""
    like = {name: getattr(sys, f"__{name}__") for name in ("stdin", "stdout", "stderr")}
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    read_end, write_end = os.pipe()
    streams = {}
    try:
        for fd, end in ((0, read_end), (1, write_end), (2, write_end)):
            os.dup2(end, fd)
        for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
            old = like[name]
            buffering = 1 if old.line_buffering else -1
            stream = open(fd, mode, buffering, encoding=old.encoding, errors=old.errors, closefd=False)  # noqa: SIM115
            stream.seekable()  # cached by the raw file now, while fd is a pipe
            streams[name] = stream
    finally:
        for fd, copy in zip((0, 1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(read_end)
        os.close(write_end)
    return streams


def trusted_code():
    """{script path: code} from the image's __pycache__ (`compileall` at build time). Loaded,
    not compiled here: compiling would leave the parser's garbage in this process, which every
    fork copies and the container's memory limit counts. A missing or foreign file: that script
    is compiled by each child, as before."""
    magic = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER
    found = {}
    for path in TRUSTED_SCRIPTS:
        folder, name = os.path.split(path)
        cached = os.path.join(folder, "__pycache__", f"{name[:-3]}.{sys.implementation.cache_tag}.pyc")
        with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
            with open(cached, "rb") as handle:
                data = handle.read()
            code = marshal.loads(data[16:]) if data[:4] == magic else None
            if type(code) is types.CodeType and code.co_filename == path:
                found[path] = code
    return found


def load_code(fd):
    """The script's compiled code from the supervisor's sealed memfd on `fd` (closed before
    anything of the program runs), or None: then the script is compiled as usual."""
    if fd is None:
        return None
    try:
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        code = marshal.loads(data)
    except Exception:
        code = None
    finally:
        os.close(fd)
    return code if type(code) is types.CodeType else None


def run_python(argv, code=None):
    """What `python3 <flags> (script | -c code) args` does from here on; returns the exit code.
    `code`: the script's code as compiling it here would make it (used when it is for that
    script: same file name)."""
    rest = list(argv[1:])
    while rest and rest[0] in FLAGS:
        if rest.pop(0) == "-B":
            sys.dont_write_bytecode = True
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    try:
        if rest[0] == "-c":
            filename, source, code = "<string>", rest[1], None
            sys.argv = ["-c", *rest[2:]]
        else:
            filename = os.path.abspath(rest[0])  # as the interpreter has it since 3.9
            sys.argv = rest
            main.__file__ = filename
            if code is None or code.co_filename != filename:
                code = TRUSTED_CODE.get(filename)
            if code is None:
                with open(filename, "rb") as handle:
                    source = handle.read()
        sys.modules["__main__"] = main
        if code is None:
            code = compile(source, filename, "exec", dont_inherit=True)  # safe: sandbox only
        exec(code, main.__dict__)  # safe: runs only inside the sandbox container  # noqa: S102
        status = 0
    except SystemExit as exc:
        status = exit_status(exc.code)
    except BaseException as exc:
        # As the interpreter reports an uncaught exception: without this function's frame.
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        with contextlib.suppress(BaseException):
            sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        status = 1
    return finalize(status)


def exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1


def finalize(status):
    """The interpreter's shutdown in its order: non-daemon threads, atexit, flush stdio."""
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        status = exit_status(exc.code)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            if stream in (sys.stdout, sys.__stdout__):
                status = 120  # what CPython exits with when stdout cannot be flushed
    return status


if __name__ == "__main__":
    main()
