"""A problem's interactor in the container: it talks to the candidate while the test runs.

Interactive problems (a guessing game, a hidden graph queried edge by edge) have no fixed
stdin: the problem's *interactor* (testlib's `registerInteraction`) reads the test's secret,
answers the program's queries, and decides. The host half is referee.sandbox.checker_format
(CheckerProgram with `interactive`); it is prepared (compiled, or parsed) by checker_runner's
`prepare`, before anything of the candidate exists, and cached the same way.

One test (`Interaction`): two pipes, the program's stdout to the interactor's stdin and the
interactor's stdout to the program's stdin, and both processes run at once:
- The interactor runs as the checker's uid (candidate uid + CHECKER_UID_OFFSET): the program
  can neither signal, trace nor read it. Its argv is testlib's `interactor <input> <output>
  <answer>`: the test's input and answer are read-only sealed memfds it inherits (fds 3 and
  4, opened as /proc/self/fd/N), never files, so the program, running beside it, finds the
  secret nowhere on disk; `tout` is /dev/null. The interactor itself is a memfd too (fd 5).
  It starts with SIGPIPE ignored: a program that exits while it writes makes its write fail
  (testlib then reads EOF: a wrong answer), never kills it (which would be its failure).
- The program runs as a test always does (Supervisor.run, its limits and clocks) on the pipes.
- When the program has ended by itself, what is left of it is killed (a child holding its
  stdout would keep the interactor from ever reading EOF), and the interactor gets until
  its own limit (the test's time plus the checker's) to end; then it is killed, whatever it
  does. When the program's time is up, both are killed at once and the interactor's verdict
  is moot (`None`: the test's own verdict, time_limit_exceeded, stands).
- Its stderr (testlib's verdict message) is a memfd under RLIMIT_FSIZE: nothing needs
  draining while the program runs, so a chatty interactor never blocks the dialogue.
Afterwards the scratch dirs are emptied and the checker uid scrubbed, as after a checker.

The interactor's memory and CPU time count toward the test's tree (the container's
counters do not tell them apart); a testlib interactor's share is a few MB and milliseconds.
"""

import os
import select
import signal
import time

if __package__:
    from . import checker_runner
else:  # a script in the image: its siblings in /opt/referee
    import checker_runner  # type: ignore[no-redef]

TEXT_BYTES = checker_runner.TEXT_BYTES
# The interactor's own file, after the input (fd 3) and the answer (fd 4) that INTERACTOR_ARGS
# (checker_format.py) name.
PROGRAM_FD = 5


class Interaction:
    """One interactive test: the interactor started, the program's stdio (`stdio`) ready."""

    def __init__(self, sup, tools, checker, req, uid, test_input, answer, deadline):
        self.sup, self.tools, self.uid = sup, tools, uid
        self.checker_uid = uid + checker_runner.CHECKER_UID_OFFSET
        spec = checker.spec
        held = []  # every fd of ours until the interactor has its copies
        try:
            files = [read_only(tools, data) for data in (test_input, answer, checker.program)]
            held.extend(files)
            from_program, to_interactor = os.pipe()
            from_interactor, to_program = os.pipe()
            held.extend((from_program, to_program))  # the interactor's ends
            self.stdio = (from_interactor, to_interactor)  # the program's stdin and stdout
            self.stderr = os.memfd_create("interactor-stderr", os.MFD_CLOEXEC)
            program = f"/proc/self/fd/{PROGRAM_FD}"
            self.started = time.monotonic()
            self.limit_at = self.started + req["time_s"] + spec["time_s"]
            if deadline is not None:
                self.limit_at = min(self.limit_at, deadline)
            self.pid = sup.spawn(
                [*spec["run"], program, *spec["args"]],  # spec["run"]: a Python wrapper, or nothing
                req["env"],
                tools.child_limits(req, req["time_s"] + spec["time_s"], req["file_size_mb"]),
                from_program,
                to_program,
                self.stderr,
                files,
                self.checker_uid,
                ignored=(signal.SIGPIPE,),
            )
        finally:
            for fd in held:
                os.close(fd)
        sup.watched[self.pid] = None
        self.ended = None
        self.moot = self.timed_out = False

    def end(self, child):
        """Supervisor.run's `after_pump`: the program's run is over (`child`, a ChildRun)."""
        # Its time (or the request's) ran out: the interactor's verdict is moot.
        self.moot = child.over is not None
        if not self.moot:  # it ended by itself: the interactor decides what that was worth
            tools = self.tools
            if self.sup.as_uid(self.uid, tools.kill_all_of_mine, tools.REAP_GRACE_S) is None:
                self.moot = True  # a fork bomb holds every pid: its leftovers may hold the pipe
            else:
                self.wait(self.limit_at)
        self.timed_out = self.reaped() is None
        if self.timed_out:
            if not self.sup.as_uid(self.checker_uid, self.tools.kill_all_of_mine, self.tools.REAP_GRACE_S):
                os.kill(self.pid, signal.SIGKILL)
            self.wait(time.monotonic() + self.tools.REAP_GRACE_S)

    def wait(self, until):
        try:
            exited = os.pidfd_open(self.pid)
        except OSError:  # gone and reaped already
            return
        try:
            while self.reaped() is None and time.monotonic() < until:
                select.select([exited], [], [], until - time.monotonic())
        finally:
            os.close(exited)

    def reaped(self):
        """(wait status, rusage) once the interactor has ended, else None."""
        got = self.sup.watched.get(self.pid)
        if got is None:
            try:
                pid, status, rusage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by the run's own loop meanwhile
                return self.sup.watched.get(self.pid)
            if pid:
                got = self.sup.watched[self.pid] = (status, rusage)
                self.sup.note_rusage(rusage)
        if got is not None and self.ended is None:
            self.ended = time.monotonic()  # when it was first seen ended: its time, about
        return got

    def finish(self, req):
        """After the program's run (its processes all dead): the interactor's raw end, as
        checker_runner.check reports a checker's, or None when the program's time ran out."""
        got = self.sup.watched.pop(self.pid, None)
        try:
            size = os.fstat(self.stderr).st_size
            stderr = os.pread(self.stderr, TEXT_BYTES, max(0, size - TEXT_BYTES))
        finally:
            os.close(self.stderr)
        self.sup.reset_scratch(self.uid, {})  # the program's files, then whatever the interactor left
        problem = self.sup.scrub(self.checker_uid)
        if problem is not None:
            raise self.tools.Unclean(problem)
        if self.moot:
            return None
        exit_code = sig = None
        rss_kb = 0
        if got is not None:
            status, rusage = got
            exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            rss_kb = rusage.ru_maxrss
        return {
            "status": "timeout" if self.timed_out else ("exited" if exit_code is not None else "signaled"),
            "exit_code": exit_code,
            "signal": sig,
            "time_s": round((self.ended or time.monotonic()) - self.started, 6),
            "memory_exceeded": rss_kb > req["memory_mb"] << 10,
            "stdout": "",
            "stderr": stderr.decode("utf-8", "replace"),
        }


def read_only(tools, data):
    """`data` in a sealed memfd opened read-only: the interactor can read it and not change
    it, and can execute it (a memfd open for writing could not be: ETXTBSY)."""
    sealed = tools.seal_code(data)
    if sealed is None:
        raise OSError("no memfd for the interactor")
    try:
        return os.open(f"/proc/self/fd/{sealed}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(sealed)
