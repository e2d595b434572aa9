"""A code session's kernel (stdlib only, Python 3.11): runs cells in one namespace, as a
notebook does, under the session's uid, started by the supervisor (session_host.py).

fd 3 brings requests, one JSON line each: first {"files": {name: base64}} (written into the
work dir as this uid, so the session owns them), then {"call": tag, "cell": n, "code": base64}. After each
cell the kernel flushes stdout/stderr (pipes the supervisor drains) and writes one JSON line
on fd 4: {"call": tag, "status": "ok"|"error", "value", "error", "truncated"}. The call's
random tag lets the supervisor tell its reply from anything the cell itself wrote on fd 4: the
cell runs in this process and can reach every fd, which only ever fools its own session.

The last statement of a cell, when it is an expression, is evaluated and its repr returned
(`value`), as Jupyter shows it. An exception is reported with the frames of the cells only;
SystemExit is an exception like any other here (a cell cannot end its session by accident),
and the kernel then carries on with its namespace intact.

A `bash` session's first request says {"language": "bash"}: its cells then run in one bash
process the kernel keeps (variables, functions, the working directory and the environment
persist), each sourced from a file with stdin from /dev/null; a non-zero status is an `error`
("exit status N"). A cell that ends the shell (`exit`) gets an error and the next cell a new
shell, as a Python cell that kills its kernel would (the files in /work are kept).
"""

import ast
import base64
import builtins
import contextlib
import json
import linecache
import os
import subprocess
import sys
import tempfile
import traceback

REQUESTS_FD, REPLIES_FD = 3, 4


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_lines(fd):
    buf = b""
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, _, buf = buf.partition(b"\n")
            yield json.loads(line)


def write_files(files):
    """The session's files, as this uid (relative paths checked by the host; checked again)."""
    for name, data in files.items():
        path = os.path.normpath(name)
        if path.startswith(("/", "..")):
            continue
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))


def cell_traceback(exc, filename_prefix):
    """The traceback without the kernel's own frames (they say nothing about the cell)."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(filename_prefix):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def run_cell(source, namespace, call):
    """(status, value repr or None, error text or None)."""
    filename = f"<cell-{call}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)  # tracebacks show the code
    try:
        tree = ast.parse(source, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), namespace)  # safe: runs only inside the sandbox container  # noqa: S102
        if last is None:
            return "ok", None, None
        value = eval(compile(last, filename, "eval"), namespace)  # safe: sandbox only  # noqa: S307
        if value is None:
            return "ok", None, None
        namespace["_"] = value
        return "ok", repr(value), None
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the cell's, not ours
        return "error", None, cell_traceback(exc, "<cell-")


class Shell:
    """One bash for a session's cells. Its status lines come on a pipe of their own (fd 5 in
    bash, closed for what a cell runs), tagged at random per cell: output a cell writes is
    never taken for its end."""

    def __init__(self):
        self.proc = None
        self.status = None
        self.cells = tempfile.mkdtemp(prefix=".cells-", dir="/tmp")

    def start(self):
        if self.status is not None:  # the ended shell's
            self.status.close()
        status_r, status_w = os.pipe()
        self.proc = subprocess.Popen(
            ["/bin/bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            pass_fds=(status_w,),
            close_fds=True,
        )
        os.close(status_w)
        self.status = os.fdopen(status_r, "rb")
        if status_w != 5:
            self.send(f"exec 5>&{status_w} {status_w}>&-\n")

    def send(self, text):
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.write(text.encode("utf-8", "surrogatepass"))
        proc.stdin.flush()

    def run(self, source, cell):
        """(status, None, error or None); a shell that ended is started again next time."""
        os.makedirs(self.cells, exist_ok=True)  # a cell may have emptied /tmp
        path = os.path.join(self.cells, f"cell-{cell}.sh")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(source)
        tag = os.urandom(8).hex()
        for attempt in (1, 2):
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            try:
                self.send(f"source {path} 5>&- </dev/null\nprintf '%s %s\\n' {tag} $? >&5\n")
                break
            except OSError:  # the shell ended meanwhile: a new one, once
                self.proc = None
                if attempt == 2:
                    return "error", None, "the shell could not be started"
        proc, status_pipe = self.proc, self.status
        assert proc is not None and status_pipe is not None
        while True:
            line = status_pipe.readline()
            if not line:  # the shell ended without a status: the cell ran `exit`, say
                code = proc.wait()
                self.proc = None
                return (
                    "error",
                    None,
                    f"the cell ended the shell (exit status {code}); the next cell gets a new one",
                )
            seen, _, status = line.decode("ascii", "replace").strip().partition(" ")
            if seen == tag:
                break
        if status == "0":
            return "ok", None, None
        return "error", None, f"exit status {status}"


def main():
    for fd in (REQUESTS_FD, REPLIES_FD):
        os.set_inheritable(fd, False)  # never handed to a subprocess the cell starts
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    shell = None
    for req in read_lines(REQUESTS_FD):
        if "files" in req:
            write_files(req["files"])
            if req.get("language") == "bash":
                shell = Shell()
            reply = {"call": 0, "status": "ok"}
        else:
            source = base64.b64decode(req["code"]).decode("utf-8", "surrogatepass")
            if shell is not None:
                status, value, error = shell.run(source, req["cell"])
            else:
                status, value, error = run_cell(source, namespace, req["cell"])
            cap = int(req.get("value_bytes") or 16384)
            truncated = value is not None and len(value) > cap
            if truncated:
                value = value[:cap]
            if error is not None and len(error) > cap:
                error, truncated = error[-cap:], True
            reply = {
                "call": req["call"],
                "status": status,
                "value": value,
                "error": error,
                "truncated": truncated,
            }
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # closed or broken by the cell
                stream.flush()
        write_all(REPLIES_FD, (json.dumps(reply) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
