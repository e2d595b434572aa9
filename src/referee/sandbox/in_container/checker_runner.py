"""A problem's checker program in the container: trusted code, isolated from the candidate.

The supervisor hands over a request's `checker` (referee.sandbox.checker_format builds it):
`prepare` compiles it (or parses a Python one) once, `check` runs it after each test the
program passed by itself (exit 0, inside its limits) as `checker <input> <output> <answer>`,
and its raw end goes back with the test; the host decides what it means
(checker_format.checker_outcome).

Isolation (docs/security.md, "Checker programs"):
- The checker runs as its own uid (the candidate's + CHECKER_UID_OFFSET: never a candidate's,
  nor a checker's of another program), so no process of the candidate can signal, trace or
  read it, and nothing it makes belongs to the candidate.
- Before it runs, every process of the candidate is dead (the test's end kills them, the
  scrub checks) and /work, /tmp and the IPC objects are emptied of what the candidate left:
  nothing of the candidate is alive or on disk while the checker runs.
- Its files (the checker itself, the input, the candidate's output as the supervisor read it
  from the pipe, the answer) are written then, by this root process, into a fresh directory
  of its own (mode 0755, files read-only): neither the candidate (dead) nor the checker (another
  uid) can change them. The answer was in the supervisor's memory until then, which no
  candidate can read (PR_SET_DUMPABLE 0, another uid).
- Its own limits: its time (measured as a test's is), the test's memory limit (the container's
  memory is sized for it), output caps, RLIMIT_FSIZE.
  Afterwards its processes are killed and the container scrubbed again.

Compiled checkers are kept in this process's memory by the hash of their source and compile
command (CACHE_ENTRIES of them): the programs of a group share one checker, and a container
serves many of them. A compile never runs anything of a candidate's.
"""

import base64
import collections
import hashlib
import json
import os
import shutil
import stat
import tempfile

WORK = "/work"
CHECKER_UID_OFFSET = 1 << 24
CACHE_ENTRIES = 8
CACHE_MAX_BYTES = 32 << 20  # a larger checker binary is compiled again by each submission
COMPILE_OUTPUT_BYTES = 1 << 13
TEXT_BYTES = 1 << 12  # of the checker's stdout and stderr, what the host gets back

_compiled: collections.OrderedDict[str, bytes] = collections.OrderedDict()  # key -> program bytes


class Checker:
    """A prepared checker: the bytes of the file to run, or why there is none."""

    def __init__(self, spec, program=None, error=None):
        self.spec = spec
        self.program = program
        self.error = error


def cache_key(spec):
    material = json.dumps([spec["compile"], spec["source_file"], spec["program"], spec["source"]])
    return hashlib.sha256(material.encode()).hexdigest()


def prepare(sup, tools, req, uid, deadline):
    """The request's checker, compiled (or parsed) as the checker's uid in a pristine work dir,
    before anything of the candidate exists; from the cache when it was compiled before."""
    spec = req["checker"]
    key = cache_key(spec)
    if key in _compiled:
        _compiled.move_to_end(key)
        return Checker(spec, program=_compiled[key])
    checker_uid = uid + CHECKER_UID_OFFSET
    source = base64.b64decode(spec["source"])
    sup.reset_scratch(checker_uid, {spec["source_file"]: (source, 0o644)})
    res = sup.run(
        spec["compile"],
        req["env"],
        tools.child_limits(req, req["compile_timeout_s"], req["file_size_mb"]),
        checker_uid,
        b"",
        req["compile_timeout_s"],
        COMPILE_OUTPUT_BYTES,
        COMPILE_OUTPUT_BYTES,
        backstop_at=deadline,
    )
    program = None
    if res["status"] == "exited" and res["exit_code"] == 0:
        program = read_regular(os.path.join(WORK, spec["program"]))
    problem = sup.scrub(checker_uid)
    if problem is not None:
        raise tools.Unclean(problem)
    if program is None:
        output = base64.b64decode(res["stderr"]) + base64.b64decode(res["stdout"])
        reason = f"compiler {res['status']} (exit status {res['exit_code']})\n"
        return Checker(spec, error=(reason + output.decode("utf-8", "replace"))[-COMPILE_OUTPUT_BYTES:])
    if len(program) <= CACHE_MAX_BYTES:
        _compiled[key] = program
        while len(_compiled) > CACHE_ENTRIES:
            _compiled.popitem(last=False)
    return Checker(spec, program=program)


def read_regular(path):
    """A regular file's bytes (the compiler's output, never a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


def check(sup, tools, checker, req, uid, test_input, output, answer, deadline):
    """Run the checker on one test the candidate `uid` passed by itself; its raw end:
    {"status", "exit_code", "signal", "stdout", "stderr", "memory_exceeded", "time_s"}."""
    if checker.error is not None:
        return {"status": "compile_error", "stderr": checker.error}
    spec = checker.spec
    checker_uid = uid + CHECKER_UID_OFFSET
    sup.reset_scratch(uid, {})  # the candidate's processes, files and IPC objects: all gone
    # In /work (mounted exec; /tmp is noexec), now empty: root's, 0700 until chmod, a fresh name.
    private = tempfile.mkdtemp(prefix="checker-", dir=WORK)
    try:
        os.chmod(private, 0o755)
        program = os.path.join(private, spec["program"])
        files = {"input": test_input, "output": output, "answer": answer}
        for path, data, mode in (
            (program, checker.program, 0o555),
            *((os.path.join(private, name), data, 0o444) for name, data in files.items()),
        ):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        res = sup.run(
            [*spec["run"], program, *(os.path.join(private, name) for name in spec["args"])],
            req["env"],
            tools.child_limits(req, spec["time_s"], req["file_size_mb"]),
            checker_uid,
            b"",
            spec["time_s"],
            spec["output_bytes"],
            TEXT_BYTES,
            backstop_at=deadline,
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)
    problem = sup.scrub(checker_uid)  # whatever the checker left
    if problem is not None:
        raise tools.Unclean(problem)
    peaks = [p for p in (res["max_rss_kb"], res["tree_peak_kb"]) if p is not None]
    return {
        "status": res["status"],
        "exit_code": res["exit_code"],
        "signal": res["signal"],
        "time_s": res["time_s"],
        "memory_exceeded": bool(res["oom"] or (peaks and max(peaks) > req["memory_mb"] << 10)),
        "stdout": base64.b64decode(res["stdout"])[:TEXT_BYTES].decode("utf-8", "replace"),
        "stderr": base64.b64decode(res["stderr"])[-TEXT_BYTES:].decode("utf-8", "replace"),
    }
