"""In-container supervisor: PID 1 of every sandbox container (stdlib only, Python 3.11).

Protocol (JSON lines): it writes {"type": "ready"} on stdout and reads one request line on
stdin (program, commands, test inputs, limits), then writes {"type": "compiled"} and one
{"type": "test"} per test in order. It then scrubs the container, still within the program's
slot (the host holds it until then), and writes {"type": "done"} and {"type": "ready"} for the
next program, or {"type": "unclean"} and exits when anything of the last program could not be
removed within the scrub's budget. Expected outputs never come here: the judge compares
outside the container.

Time: a program is limited in CPU time (RLIMIT_CPU per process, the container's CPU counter
for the tree) and in its own time, the wall clock minus what it waited for a CPU
(kernel_stats.WaitClock): a sleeper times out on the wall clock as always, a program the
node's load kept from a CPU gets that time back, up to a backstop; past it, the test is
`starved`: no verdict of the program's, and the host reports an infrastructure error.

Isolation between programs (a container serves many, one at a time): every program runs
under its own uid, never used before in this container (CANDIDATE_UID_BASE + run number).
The supervisor runs as root with only CAP_SETUID, CAP_SETGID (to switch a child to that uid)
and CAP_KILL (to kill every other process), so a candidate can neither signal, trace nor read
it, nor touch its rlimits, and a program's leftovers belong to a uid nobody will run as
again. Between two tests, and two programs, everything is killed and reaped, /work and /tmp
are emptied, and the System V IPC objects of the uid are removed; POSIX message queues are
refused outright (RLIMIT_MSGQUEUE 0) and the container has no /dev/shm. The environment
and rlimits of each process come from the request, never from an earlier process.

Why PID 1 (and not tini via init=True): the kernel never delivers SIGKILL/SIGSTOP to a PID
namespace's init from inside the namespace, and as init the supervisor reaps every orphan
itself (the job tini would do). It also makes itself non-dumpable, so /proc/1/fd/*,
/proc/1/mem and /proc/1/environ stay closed. Its rlimits, niceness and scheduler are
checked after every test anyway: a change marks the test `tampered` and the supervisor
exits, so the host discards the container.

Single-threaded on purpose: the container's pid limit is shared with the candidate, so a
fork bomb would make any thread creation fail. One `selectors` loop, woken by SIGCHLD through
a wakeup fd, feeds stdin, drains stdout/stderr with caps, and enforces the wall clock.
"""

import base64
import contextlib
import ctypes
import fcntl
import json
import os
import resource
import select
import selectors
import signal
import socket
import stat
import sys
import time

if __package__:  # imported on the host (tests): the package's own module
    from . import checker_runner, interactor_runner, kernel_stats, session_host
else:  # a script in the image: its siblings in /opt/referee (-I leaves the script's folder out)
    sys.path.insert(0, os.path.dirname(__file__))
    import checker_runner  # type: ignore[no-redef]
    import interactor_runner  # type: ignore[no-redef]
    import kernel_stats  # type: ignore[no-redef]
    import session_host  # type: ignore[no-redef]

KeptFile = kernel_stats.KeptFile
read_oom_kills = kernel_stats.read_oom_kills

WORK = "/work"
SCRATCH = ("/work", "/tmp")
# Program k in a container runs as CANDIDATE_UID_BASE + k (no passwd entry needed; HOME=/work).
CANDIDATE_UID_BASE = 20000
SYSV_IPC = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
SYSV_ID_COLUMN = dict(zip(SYSV_IPC, ("shmid", "msqid", "semid"), strict=True))
IPC_RMID = 0
# The scrub after a program (or between two tests) is part of its slot: the scratch dirs hold
# a bounded number of inodes (hardening.py), so emptying them takes well under a second; one
# that takes longer than this leaves the container unclean, and the host discards it.
SCRUB_BUDGET_S = 5.0
# Wall-clock backstop of a run, as a multiple of its time limit: within it, the time a
# program waited for a CPU (kernel_stats.WaitClock) does not count against it; past it, a
# program that did not use its time was starved by the node: no verdict of its own.
BACKSTOP_FACTOR = 3.0
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
CHUNK = 65536
REAP_GRACE_S = 3.0
PR_SET_DUMPABLE = 4
LIBC = ctypes.CDLL(None, use_errno=True)
PRCTL = LIBC.prctl
# The warm Python template (zygote.py) and the commands it may run: `python3 -I [-S] [-B]
# (script | -c code) args`. Anything else (a compiler, a native binary) is spawned from here.
ZYGOTE = ("/usr/bin/python3", "-I", "/opt/referee/zygote.py")
ZYGOTE_FLAGS = frozenset({"-I", "-S", "-B"})
ZYGOTE_REPLY_TIMEOUT_S = 10.0
SAMPLE_INTERVAL_S = 0.005  # how often a running test's memory (the whole tree) is sampled
CODE_CACHE_MAX_BYTES = 16 << 20  # a larger compiled program is compiled by each test instead
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(msg):
    write_all(1, (json.dumps(msg, separators=(",", ":")) + "\n").encode())


def b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


STATM = KeptFile("/proc/self/statm")  # this process's, whoever reads the kept fd
SYSV_TABLES = {table: KeptFile(table) for table in SYSV_IPC}
RLIMITS = tuple(getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_"))


def self_rss_kb():
    try:
        return int((STATM.text() or "").split()[1]) * PAGE_KB
    except (ValueError, IndexError):
        return 0


def self_state():
    """What a same-uid process could change about PID 1 from outside (see module doc)."""
    limits = tuple(resource.getrlimit(limit) for limit in RLIMITS)
    return limits, os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)


class Supervisor:
    def __init__(self):
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
        self.baseline = self_state()
        self.peak_rss_kb = 0  # max ru_maxrss of every process reaped during the current run
        self.zygote = Zygote()
        # True when kill_everything last found no other process and none was started since
        # (every process here is started by this one: ChildRun.start, as_uid).
        self.settled = False
        # pid -> (wait status, rusage) once reaped, for children whose end matters beside the
        # run's own (an interactor: interactor_runner.py); None while they run.
        self.watched: dict = {}

    def note_rusage(self, rusage):
        self.peak_rss_kb = max(self.peak_rss_kb, rusage.ru_maxrss)

    # -- process control -------------------------------------------------------------------

    def reap(self):
        """Reap every exited child of this process (orphans of candidates, helpers); returns
        {pid: (status, rusage)}. The template's own death is noted here."""
        reaped: dict = {}
        while True:
            try:
                pid, status, rusage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return reaped
            if pid == 0:
                return reaped
            self.note_rusage(rusage)
            if pid == self.zygote.pid:
                self.zygote.pid = None  # its socket reads EOF; the next spawn starts a new one
            if pid in self.watched:
                self.watched[pid] = (status, rusage)
            reaped[pid] = (status, rusage)

    def kill_everything(self, uid):
        """SIGKILL every process of the candidate `uid` and reap what is ours to reap; returns
        False if something survives REAP_GRACE_S.

        Without the template, kill(-1) from PID 1 (with CAP_KILL) reaches every other process
        and cannot be escaped by setsid/double-fork. With it, a helper that has become `uid`
        calls kill(-1): that reaches exactly the processes of `uid` (a candidate can never
        change its uid), and never the template. Either way, repeated until none is left."""
        if self.settled:  # nothing was started since the last check found no process
            return True
        deadline = time.monotonic() + REAP_GRACE_S
        while True:
            self.reap()
            if not other_processes(self.zygote.pid):
                self.settled = True
                return True
            if self.zygote.pid is None or self.as_uid(uid, kill_all_of_mine, REAP_GRACE_S) is None:
                # No template, or no helper (a fork bomb holds every pid): kill(-1) from here;
                # it takes the template too, which the next Python test starts again.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, signal.SIGKILL)
            self.reap()
            if not other_processes(self.zygote.pid):
                self.settled = True
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)

    def as_uid(self, uid, action, timeout_s):
        """Run `action()` in a child that has become `uid`; True if it exited 0 in time, None
        when no child could be made (the container's pid limit is exhausted).

        Such a child is as exposed as any candidate process (same uid), so it is waited for
        with a deadline and killed from here if a candidate stopped it."""
        self.settled = False
        try:
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:
            code = 1
            with contextlib.suppress(BaseException):
                signal.set_wakeup_fd(-1)
                become(uid)
                action()
                code = 0
            os._exit(code)
        deadline = time.monotonic() + timeout_s
        # Woken by the child's exit itself (a pidfd turns readable), not by polling: the
        # helper runs after every program, and a polling interval is time no program runs.
        try:
            exited = os.pidfd_open(pid)
        except OSError:
            exited = None
        try:
            while True:
                got, status = os.waitpid(pid, os.WNOHANG)
                if got:
                    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return False
                if exited is None:
                    time.sleep(min(0.0005, remaining))
                else:
                    select.select([exited], [], [], remaining)
        finally:
            if exited is not None:
                os.close(exited)

    def spawn(self, argv, env, limits, stdin_fd, out_fd, err_fd, extra_fds, uid, ignored=()):
        """Fork and exec `argv` as `uid` on these fds; `ignored`: signals it starts ignoring."""
        pid = os.fork()
        if pid != 0:
            return pid
        try:  # the child: never returns
            signal.set_wakeup_fd(-1)
            for sig in range(1, signal.NSIG):
                with contextlib.suppress(OSError, ValueError):
                    signal.signal(sig, signal.SIG_DFL)
            for sig in ignored:
                signal.signal(sig, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.setsid()
            fds = [stdin_fd, out_fd, err_fd, *extra_fds]
            # Move every fd above the target range first so dup2 never clobbers a source.
            high = [os.dup(fd) for fd in fds]
            for target, fd in enumerate(high):
                os.dup2(fd, target)
            os.closerange(len(fds), 65536)
            for name, soft, hard in limits:
                resource.setrlimit(name, (soft, hard))
            become(uid)
            PRCTL(PR_SET_DUMPABLE, 1, 0, 0, 0)  # our /proc files are root-owned until then
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # raising it needs no privilege: the OOM killer picks us
            os.chdir(WORK)
            os.execvpe(argv[0], list(argv), env)
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(2, f"sandbox: cannot start {argv[0]}: {exc!r}\n".encode())
        os._exit(127)

    def run(
        self,
        argv,
        env,
        limits,
        uid,
        stdin_data,
        timeout_s,
        out_cap,
        err_keep,
        spec=None,
        result_cap=None,
        code_fd=None,
        backstop_at=None,
        stdio=None,
        after_pump=None,
    ):
        """Run one child as `uid` to completion; return the raw facts of how it ended.
        `timeout_s`: its time limit, in its own time (see ChildRun.pump); `backstop_at`: the
        monotonic time by which it must end whatever happens (the request's deadline).
        `code_fd`: the program's compiled code (take_code_cache), for a child of the template.
        `stdio`: (stdin, stdout) fds the child gets instead of ours (an interactor's pipe ends,
        closed here once it has them); `after_pump(child)`: called when the child's run is
        over, before its processes are killed (the interactor's end: interactor_runner.py)."""
        child = ChildRun(self, stdin_data, out_cap, err_keep, spec, result_cap)
        oom_before = read_oom_kills()
        self.peak_rss_kb = 0
        sup_rss_before = self_rss_kb()
        anon_before = kernel_stats.anon_bytes()
        started = time.monotonic()
        backstop = started + BACKSTOP_FACTOR * timeout_s
        if backstop_at is not None:
            backstop = min(backstop, backstop_at)
        child.start(argv, env, limits, uid, code_fd, stdio)
        clock = kernel_stats.WaitClock(started, {os.getpid(), self.zygote.pid})
        child.pump(clock, timeout_s, backstop)
        if after_pump is not None:
            after_pump(child)
        # The verdict is decided by the main process: whatever it left behind dies now,
        # before we read what is still buffered in the pipes.
        clean = self.kill_everything(uid)
        child.finish()
        oom_after = read_oom_kills()
        tree_peak_kb = self.tree_peak_kb(anon_before, sup_rss_before, child.anon_peak)
        status, rusage = child.status, child.rusage
        cpu_s = rusage.ru_utime + rusage.ru_stime if rusage is not None else None
        elapsed = (child.ended or time.monotonic()) - started
        tree_cpu_s = clock.tree_cpu_s()
        stdout, stderr = child.outputs[child.out_r], child.outputs[child.err_r]
        result = {
            "status": child.over
            or ("signaled" if status is not None and os.WIFSIGNALED(status) else "exited"),
            "exit_code": os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None,
            "time_s": round(elapsed, 6),
            "waited_s": round(clock.waited_s, 6),
            "max_rss_kb": self.peak_rss_kb or (rusage.ru_maxrss if rusage is not None else None),
            "tree_peak_kb": tree_peak_kb,
            "cpu_s": round(cpu_s, 6) if cpu_s is not None else None,
            "tree_cpu_s": round(tree_cpu_s, 6) if tree_cpu_s is not None else None,
            "oom": bool(oom_before is not None and oom_after is not None and oom_after > oom_before),
            "stdout": b64(stdout[:out_cap]),
            "stdout_bytes": len(stdout),
            "stderr": b64(stderr[-err_keep:]),
            "clean": clean,
        }
        if child.res_r is not None:
            result["result"] = b64(child.outputs[child.res_r][: result_cap or out_cap])
        return result

    def tree_peak_kb(self, anon_before, sup_rss_before, anon_peak):
        """The test's process tree peak: the container's anonymous memory, sampled while the
        test ran, above what it was before (the cgroup's own high-water mark counts the page
        cache, and cannot be reset from inside for the next test: see kernel_stats)."""
        if anon_before is None or anon_peak is None:
            return None
        # Minus what this supervisor itself grew by (its output buffers): it can only
        # under-estimate.
        grown = max(0, self_rss_kb() - sup_rss_before)
        return max(0, (anon_peak - anon_before) // 1024 - grown)

    # -- work dir --------------------------------------------------------------------------

    def scrub(self, uid):
        """Leave nothing of `uid` behind: processes, files in /work and /tmp, System V IPC
        objects. Returns None when the container is pristine again, else what remains."""
        if not self.kill_everything(uid):
            return "a process survived SIGKILL"
        # The candidate's directories and IPC objects are removed by a child running as their
        # owner: this process holds no capability to override permissions (no
        # CAP_DAC_OVERRIDE, CAP_FOWNER or CAP_IPC_OWNER), on purpose. Without any, there is
        # no need for that child: as the owner of the sticky /work and /tmp, this process may
        # unlink every entry in them. Either way leftovers() checks the result.
        if needs_owner(uid) and not self.as_uid(uid, scrub_as_owner, SCRUB_BUDGET_S):
            return "scrubbing failed or exceeded its budget"
        remove_scratch()  # what this process wrote itself (the program and its artifacts)
        return leftovers(self.zygote.pid)

    def reset_scratch(self, uid, files):
        """Scrub `uid`'s traces and write `files` into /work: every test starts pristine.

        When the last test left nothing (no process, /tmp empty, /work exactly the files this
        process wrote, which a candidate can neither change nor remove: root-owned, 0644/0555,
        in a sticky directory, and no IPC object), there is nothing to scrub or rewrite."""
        if not self.kill_everything(uid):
            raise Unclean("a process survived SIGKILL")
        if untouched(files):
            return
        problem = self.scrub(uid)
        if problem is not None:
            raise Unclean(problem)
        for name, (data, mode) in files.items():
            fd = os.open(os.path.join(WORK, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            os.fchmod(fd, mode)  # exactly `mode`, whatever the umask: untouched() compares it
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)


class Unclean(Exception):
    """Something of a program could not be removed: this container may serve no other."""


def become(uid):
    """Drop to `uid` for good: every id, no supplementary groups. Leaving uid 0 clears the
    capability sets, and no-new-privileges keeps exec from granting any back."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def kill_all_of_mine():
    """As a candidate's uid: SIGKILL every process of that uid but this one (see
    kill_everything). Zombies count for kill(-1) too, so a few rounds, not "until ESRCH"."""
    for _ in range(3):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return


def needs_owner(uid):
    """True when removing what `uid` left needs a process of that uid: a directory in the
    scratch dirs (its entries are the owner's to remove) or an IPC object of that uid."""
    try:
        for top in SCRATCH:
            with os.scandir(top) as entries:
                if any(entry.is_dir(follow_symlinks=False) for entry in entries):
                    return True
    except OSError:
        return True
    return any(owner == uid for _, _, owner in sysv_objects())


def scrub_as_owner():
    remove_scratch()
    remove_sysv_ipc(os.getuid())


def untouched(files):
    """True when /work holds exactly `files` as this process wrote them, /tmp is empty and no
    System V IPC object exists (see Supervisor.reset_scratch)."""
    try:
        if os.listdir("/tmp") or sorted(os.listdir(WORK)) != sorted(files):
            return False
        for name, (data, mode) in files.items():
            st = os.lstat(os.path.join(WORK, name))
            if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_nlink != 1:
                return False
            if st.st_size != len(data) or stat.S_IMODE(st.st_mode) != mode:
                return False
    except OSError:
        return False
    return not sysv_objects()


def remove_scratch():
    """Empty /work and /tmp of what this process may delete (its own files)."""
    for top in SCRATCH:  # root-owned tmpfs mounts with mode 1777: nobody else may chmod them
        with contextlib.suppress(OSError):
            empty_dir(top)
    with contextlib.suppress(OSError):
        os.chdir("/")


def empty_dir(top):
    """Delete everything under `top` that this process owns, depth first by chdir: no
    recursion and no path length limit (a program may nest directories thousands deep), and
    directories it made unreadable are opened up first. Stops at the first thing it cannot
    remove; the caller's final check then finds it.

    Each directory is read once: its files are unlinked and its subdirectories noted. Reading
    a directory again after each subdirectory is gone cost a read of (a buffer of) its
    entries per subdirectory: 16,383 directories side by side took 1.7 s of CPU per scratch
    dir, which a program used to overrun its request's deadline (masked, not its 0)."""
    os.chdir(top)
    names = []  # the directories we are inside, below `top`
    pending = [clear_files()]  # per level: the subdirectories still to empty and remove
    while True:
        if pending[-1]:
            subdir = pending[-1].pop()
            os.chmod(subdir, 0o700)
            os.chdir(subdir)
            names.append(subdir)
            pending.append(clear_files())
        elif names:
            pending.pop()
            os.chdir("..")
            os.rmdir(names.pop())
        else:
            return


def clear_files():
    """Unlink every entry of the current directory but subdirectories; returns their names.
    An entry that is not ours to remove is left (the program's own scrub meets the root-owned
    program file in /work: the supervisor removes that one); the final check sees the rest."""
    subdirs = []
    with os.scandir(".") as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                with contextlib.suppress(PermissionError):
                    os.unlink(entry.name)
    return subdirs


def sysv_objects():
    """(table, id, owner uid) of every System V IPC object in this container's namespace."""
    found = []
    for table, kept in SYSV_TABLES.items():
        lines = (kept.text() or "").splitlines()
        if not lines:
            continue
        header = lines[0].split()
        id_col, uid_col = header.index(SYSV_ID_COLUMN[table]), header.index("uid")
        for line in lines[1:]:
            fields = line.split()
            found.append((table, int(fields[id_col]), int(fields[uid_col])))
    return found


def remove_sysv_ipc(uid):
    ctl = {SYSV_IPC[0]: LIBC.shmctl, SYSV_IPC[1]: LIBC.msgctl, SYSV_IPC[2]: LIBC.semctl}
    for table, ident, owner in sysv_objects():
        if owner == uid:
            if table == SYSV_IPC[2]:
                ctl[table](ident, 0, IPC_RMID)
            else:
                ctl[table](ident, IPC_RMID, None)


def other_processes(zygote_pid):
    """Every process in the container but this one and the template (zombies included)."""
    keep = {os.getpid(), zygote_pid}
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]


def leftovers(zygote_pid):
    """None when no other process (but the template), file or IPC object exists in the container."""
    others = other_processes(zygote_pid)
    if others:
        return f"processes left: {others[:5]}"
    for top in SCRATCH:
        if os.listdir(top):
            return f"{top} is not empty"
    if sysv_objects():
        return "System V IPC objects left"
    return None


def zygote_eligible(argv):
    """True for `python3 -I [-S] [-B] (script | -c code) [args...]`: what the template runs."""
    if not argv or argv[0] not in ("python3", ZYGOTE[0]):
        return False
    flags = set()
    rest = list(argv[1:])
    while rest and rest[0] in ZYGOTE_FLAGS:
        flags.add(rest.pop(0))
    if "-I" not in flags or not rest:
        return False
    return len(rest) >= 2 if rest[0] == "-c" else not rest[0].startswith("-")


class Usage:
    """The three rusage fields the template reports for its child."""

    def __init__(self, utime, stime, maxrss):
        self.ru_utime, self.ru_stime, self.ru_maxrss = utime, stime, maxrss


class Zygote:
    """The warm Python template (zygote.py), a child of this process: started before any
    request is read (so it never held one), restarted on demand after it died. When it cannot
    answer, Python programs are spawned from here as before: slower, never different."""

    def __init__(self):
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.start()

    def start(self):
        self.lost()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            with contextlib.suppress(BaseException):
                signal.set_wakeup_fd(-1)
                for sig in range(1, signal.NSIG):  # ignored signals would stay ignored past exec
                    with contextlib.suppress(OSError, ValueError):
                        signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(theirs.fileno(), 3)
                os.closerange(4, 65536)
                os.execv(ZYGOTE[0], list(ZYGOTE))
            os._exit(127)
        theirs.close()
        ours.settimeout(ZYGOTE_REPLY_TIMEOUT_S)
        self.pid, self.sock = pid, ours

    def lost(self):
        """It died or stopped answering: kill it (reaped by the caller's wait) and forget it."""
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        if self.sock is not None:
            self.sock.close()
        self.pid = self.sock = None

    def spawn(self, argv, env, limits, fds, uid, code_fd=None):
        """Fork a child of the template that runs `argv` as `uid` on `fds`; its pid, or None.
        With `code_fd`, the child reads the script's compiled code from it (then closes it)
        instead of compiling the script."""
        if self.pid is None or self.sock is None:
            self.start()
        sock = self.sock
        cmd = {"argv": list(argv), "env": env, "limits": limits, "uid": uid}
        if code_fd is not None:
            cmd["code_fd"] = len(fds)
            fds = [*fds, code_fd]
        try:
            if sock is None:
                raise OSError("no template")
            socket.send_fds(sock, [json.dumps(cmd).encode()], fds)
            reply = sock.recv(1 << 16)
            return int(json.loads(reply)["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            self.lost()
            return None

    def exit_report(self):
        """(wait status, Usage) of the child it forked last; blocks until that child is gone."""
        try:
            if self.sock is None:
                raise OSError("no template")
            report = json.loads(self.sock.recv(1 << 16))
            return report["status"], Usage(report["utime"], report["stime"], report["maxrss"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self.lost()
            raise RuntimeError("the Python template died during a test") from exc


class ChildRun:
    """One child process from spawn to its last byte: its pipes, the select loop that feeds
    stdin (and the spec) and drains stdout/stderr (and the result channel) under their caps,
    and the wall clock. Output beyond a cap ends the run at once (`over`)."""

    sel: selectors.BaseSelector  # set by start(), after the fork: the child never inherits it

    def __init__(self, sup, stdin_data, out_cap, err_keep, spec, result_cap):
        self.sup = sup
        self.err_keep = err_keep
        self.pipes = []
        self.in_r, self.in_w = self.pipe()
        self.out_r, self.out_w = self.pipe()
        self.err_r, self.err_w = self.pipe()
        self.extra = []
        self.spec_w = self.res_r = None
        if spec is not None:
            spec_r, self.spec_w = self.pipe()
            self.res_r, res_w = self.pipe()
            self.extra = [spec_r, res_w]
        self.outputs = {self.out_r: bytearray(), self.err_r: bytearray()}
        self.caps = {self.out_r: out_cap, self.err_r: None}
        if self.res_r is not None:
            self.outputs[self.res_r] = bytearray()
            self.caps[self.res_r] = result_cap or out_cap
        self.writes = {self.in_w: memoryview(stdin_data)}
        if self.spec_w is not None:
            self.writes[self.spec_w] = memoryview(spec)
        self.pid = None
        self.status = self.rusage = self.ended = None
        self.over = None  # timeout | output_limit | result_limit
        self.forked = False  # a child of the template: its end comes as the template's report
        self.anon_peak = None  # the container's anonymous memory, sampled while the child runs

    def pipe(self):
        r, w = os.pipe()
        self.pipes.extend((r, w))
        return r, w

    def start(self, argv, env, limits, uid, code_fd=None, stdio=None):
        self.sup.settled = False
        ours = [self.in_r, self.out_w, self.err_w, *self.extra]
        # With `stdio` (an interactor's pipe ends), our stdin pipe reads EOF and nothing is
        # written to our stdout pipe: the child has neither.
        fds = [*(stdio or ours[:2]), *ours[2:]]
        if zygote_eligible(argv):
            self.pid = self.sup.zygote.spawn(argv, env, limits, fds, uid, code_fd)
            self.forked = self.pid is not None
        if self.pid is None:
            self.pid = self.sup.spawn(argv, env, limits, *fds[:3], fds[3:], uid)
        for fd in ours:  # the child's ends; never closed again by finish(), whatever reuses the number
            os.close(fd)
            self.pipes.remove(fd)
        for fd in stdio or ():
            os.close(fd)
        self.sel = selectors.DefaultSelector()
        if self.forked:
            self.sel.register(self.sup.zygote.sock, selectors.EVENT_READ)
        for fd in self.outputs:
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ)
        for fd in self.writes:
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_WRITE)
        self.sel.register(self.sup.wake_r, selectors.EVENT_READ)

    def pump(self, clock, limit_s, backstop):
        """Until the child exits, overruns a cap, or its time is up: `over` is then `timeout`
        when it used its time (its own time, wall clock minus the time it waited for a CPU,
        or the CPU time of the whole tree reached `limit_s`: a sleeper times out on the wall
        clock as it always did), or `starved` when the backstop came first (the node's load,
        no verdict of the program's)."""
        deadline = min(clock.started + limit_s, backstop)
        while self.status is None and self.over is None:
            self.sample_memory()
            now = time.monotonic()
            if now >= clock.next_sample:
                clock.sample(now)
            if now >= deadline:
                clock.sample(now)
                self.over = time_up(clock, now, limit_s, backstop)
                if self.over is not None:
                    break
                # The earliest its own time can reach the limit, if it waits no more.
                deadline = min(now + max(limit_s - clock.own_s(now), SAMPLE_INTERVAL_S), backstop)
            wait = min(deadline, clock.next_sample) - now
            for key, _ in self.sel.select(max(0.0, min(wait, SAMPLE_INTERVAL_S))):
                fd = key.fd
                if self.forked and fd == self.sup.zygote.sock.fileno():
                    self.sel.unregister(fd)
                    self.status, self.rusage = self.sup.zygote.exit_report()
                    self.sup.note_rusage(self.rusage)
                    self.ended = time.monotonic()
                elif fd == self.sup.wake_r:
                    try:
                        while os.read(fd, 512):
                            pass
                    except BlockingIOError:
                        pass
                    self.reap()
                elif fd in self.writes:
                    self.feed(fd)
                elif fd in self.outputs and fd in self.sel.get_map():
                    self.drain(fd)

    def feed(self, fd):
        view = self.writes[fd]
        try:
            view = view[os.write(fd, view[:CHUNK]) :]
        except BlockingIOError:
            return
        except OSError:  # the child closed its end: it does not want more
            view = view[:0]
        self.writes[fd] = view
        if not view:
            self.sel.unregister(fd)
            os.close(fd)
            self.pipes.remove(fd)
            del self.writes[fd]

    def drain(self, fd):
        buf = self.outputs[fd]
        while True:
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                chunk = b""
            if not chunk:
                self.sel.unregister(fd)
                return False
            buf += chunk
            cap = self.caps[fd]
            if cap is None:
                if len(buf) > 2 * self.err_keep:
                    del buf[: -self.err_keep]
            elif len(buf) > cap:
                del buf[cap + 1 :]
                self.over = self.over or ("result_limit" if fd == self.res_r else "output_limit")
                return True

    def sample_memory(self):
        anon = kernel_stats.anon_bytes()
        if anon is not None and (self.anon_peak is None or anon > self.anon_peak):
            self.anon_peak = anon

    def reap(self):
        reaped = self.sup.reap()
        if not self.forked and self.pid in reaped:
            self.status, self.rusage = reaped[self.pid]
            self.ended = time.monotonic()

    def finish(self):
        """After everything was killed: read what is still buffered, close every fd."""
        if self.forked and self.status is None:  # we killed it: its report is on the way
            try:
                self.status, self.rusage = self.sup.zygote.exit_report()
                self.sup.note_rusage(self.rusage)
            except RuntimeError:  # kill_everything's last resort took the template with it
                self.status = signal.SIGKILL  # a wait status: killed by SIGKILL, as it was
        for fd in self.outputs:
            if fd in self.sel.get_map():
                self.drain(fd)
        self.sel.close()
        for fd in self.pipes:
            with contextlib.suppress(OSError):
                os.close(fd)


def time_up(clock, now, limit_s, backstop):
    """At a deadline of ChildRun.pump: `timeout`, `starved`, or None (it waited for a CPU:
    it gets that time back). At the backstop, a program that waited mostly for its own
    container's CPU quota (`cpus` below 1) was not starved by the node: its time is up."""
    tree_cpu_s = clock.tree_cpu_s()
    if clock.own_s(now) >= limit_s or (tree_cpu_s is not None and tree_cpu_s >= limit_s):
        return "timeout"
    if now >= backstop:
        return "timeout" if clock.quota_bound() else "starved"
    return None


def child_limits(req, time_s, file_mb):
    cpu = int(time_s) + 1
    return [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_NOFILE, req["open_files"], req["open_files"]),
        (resource.RLIMIT_FSIZE, file_mb << 20, file_mb << 20),
        (resource.RLIMIT_CORE, 0, 0),
        # POSIX message queues would outlive the program (nothing lists them without an
        # mqueue mount); nobody here needs one.
        (resource.RLIMIT_MSGQUEUE, 0, 0),
    ]


class Requests:
    """JSON request lines from the host, one at a time; None when the host hangs up."""

    def __init__(self):
        self.buf = bytearray()

    def next(self):
        while b"\n" not in self.buf:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                return None
            self.buf += chunk
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        return json.loads(line)


def compile_program(sup, req, uid, files, deadline):
    """The request's compile step (a compiler, or Python's parse-only check) as `uid`, under
    the compile limits: CPU time per process (RLIMIT_CPU) and the same own-time clock as a
    test, so a busy node never makes a compile error. Returns the `compiled` message and the
    compiled code it left (see take_code_cache) or None; on success `files` gains artifacts.
    A compiler starved past its backstop gives `starved` (no verdict: see serve_tests)."""
    compiled = {"type": "compiled", "ok": True, "time_s": 0.0, "output": ""}
    if not req.get("compile"):
        return compiled, None
    if req.get("precompiled") is not None:
        return load_precompiled(req, files, compiled)
    sup.reset_scratch(uid, files)
    limits = child_limits(req, req["compile_timeout_s"], req["file_size_mb"])
    res = sup.run(
        req["compile"],
        req["env"],
        limits,
        uid,
        b"",
        req["compile_timeout_s"],
        1 << 16,
        1 << 16,
        backstop_at=deadline,
    )
    if res["status"] == "starved":
        compiled.update(time_s=res["time_s"], starved=True)
        return compiled, None
    out = base64.b64decode(res["stderr"]) + base64.b64decode(res["stdout"])
    ok = res["status"] == "exited" and res["exit_code"] == 0
    if ok:
        for name in req["artifacts"]:
            path = os.path.join(WORK, name)
            with open(path, "rb") as handle:
                files[name] = (handle.read(), stat.S_IMODE(os.stat(path).st_mode) | 0o555)
    reason = (
        "" if ok else f"compiler {res['status']}" + (" (time limit)" if res["status"] == "timeout" else "")
    )
    compiled.update(
        ok=ok, time_s=res["time_s"], output=(reason + "\n" + out.decode("utf-8", "replace"))[-8192:]
    )
    code = take_code_cache(req["code_cache"]) if ok and req.get("code_cache") else None
    if req.get("return_compiled_bytes"):
        program = compiled_program(req, files, code, res, ok)
        if program is not None:
            compiled["program"] = program
    return compiled, seal_code(code) if code is not None else None


def compiled_program(req, files, code, res, ok):
    """What the host's compile cache keeps of this compile (sandbox/compile_cache.py), or None
    when it must not keep it: over `return_compiled_bytes`, or a failure that a limit may have
    caused (a timeout, a kill, an OOM kill or a peak over the memory limit, a compiler past
    half its time), which the same source might not meet again. Taken from `files` as read
    right after the compiler ended and its processes were killed: nothing of the program has
    run, and no test will have when the host stores it."""
    if ok:
        kept = {name: files[name] for name in req["artifacts"]}
    else:
        peaks = [p for p in (res["max_rss_kb"], res["tree_peak_kb"]) if p is not None]
        diagnosed = (
            res["status"] == "exited"
            and not res["oom"]
            and res["time_s"] < req["compile_timeout_s"] / 2
            and max(peaks, default=0) <= req["memory_mb"] << 10
        )
        if not diagnosed:
            return None
        kept = {}
    size = sum(len(data) for data, _ in kept.values()) + len(code or b"")
    if size > req["return_compiled_bytes"]:
        return None
    return {
        "files": {name: [b64(data), mode] for name, (data, mode) in kept.items()},
        "code": b64(code) if code is not None else None,
    }


def load_precompiled(req, files, compiled):
    """The compile step answered from the host's compile cache: the artifacts (and compiled
    code) of an earlier compile of the same source, command and image, in another container
    perhaps. Nothing is compiled; the `compiled` message says `cached`, with no compile time."""
    program = req["precompiled"]
    compiled.update(ok=bool(program["ok"]), output=str(program["output"]), cached=True)
    if not compiled["ok"]:
        return compiled, None
    for name in req["artifacts"]:  # exactly the language's artifacts, whatever else was sent
        data, mode = program["files"][name]
        files[name] = (base64.b64decode(data), (int(mode) & 0o777) | 0o555)
    code = program.get("code")
    return compiled, seal_code(base64.b64decode(code)) if code is not None else None


def take_code_cache(name):
    """The compiled code the compile step left in the work dir (`name`); None when there is
    none. seal_code() hands it to the tests.

    The file never reaches a test (the scrub before the first test removes it: it is not one
    of `files`), so /work looks to the program exactly as it does to `python3 sol.py`. Its
    content is the compiler's alone: no code of the program has run when it is written (a
    fresh uid, nothing else of it alive), and only that program's own tests ever load it."""
    try:
        fd = os.open(os.path.join(WORK, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > CODE_CACHE_MAX_BYTES:
            return None
        return os.read(fd, info.st_size)
    except OSError:
        return None
    finally:
        os.close(fd)


def seal_code(data):
    """`data` (compiled code) in a sealed memfd that every test of the program can read and
    none can change; None when one cannot be made."""
    try:
        sealed = os.memfd_create("referee-code", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return None
    try:
        write_all(sealed, data)
        fcntl.fcntl(sealed, fcntl.F_ADD_SEALS, SEALS)
    except OSError:
        os.close(sealed)
        return None
    return sealed


def serve(sup, req, uid, received):
    """One program: compile, then each requested test. Returns False when this container can
    no longer be trusted (the host then re-runs the remaining tests elsewhere). Everything
    must end by the request's deadline (`deadline_s` after `received`), which the host sets
    inside its own wait for the request."""
    deadline = received + req["deadline_s"] if req.get("deadline_s") else None
    source = base64.b64decode(req["source"])
    files = {req["source_file"]: (source, 0o644)}
    for name, data in (req.get("files") or {}).items():  # the problem's headers and data files
        if os.path.basename(name) != name or name in (".", "..") or name in files:
            raise ValueError(f"bad extra file name {name!r}")  # the host checks names: a forged request
        files[name] = (base64.b64decode(data), 0o644)
    # A problem's checker is prepared first: nothing of the candidate exists yet.
    checker = None
    if req.get("checker"):
        checker = checker_runner.prepare(sup, sys.modules[__name__], req, uid, deadline)
    compiled, code_fd = compile_program(sup, req, uid, files, deadline)
    try:
        return serve_tests(sup, req, uid, files, compiled, code_fd, deadline, checker)
    finally:
        if code_fd is not None:
            os.close(code_fd)


def serve_tests(sup, req, uid, files, compiled, code_fd, deadline, checker=None):
    """The tests, in order. Once the compiler or one test was starved (`starved`: the node
    kept it from a CPU), the answer is no verdict anyway: the remaining tests are reported
    `starved` without being run, which spares the busy node their load."""
    starved = compiled.pop("starved", False)
    send(compiled)
    if not compiled["ok"]:
        return True
    tests = req["tests"]
    argv = req["harness"] if req["mode"] != "stdio" else req["run"]
    cpu_limit_s = int(req["time_s"]) + 1  # child_limits' RLIMIT_CPU soft limit
    interactive = checker is not None and checker.spec.get("interactive")
    for index in req.get("indices", range(len(tests))):
        if starved or (deadline is not None and time.monotonic() >= deadline):
            starved = True
            send({"type": "test", "index": index, "status": "starved", "cpu_limit_s": cpu_limit_s})
            continue
        test = tests[index]
        sup.reset_scratch(uid, files)
        spec = base64.b64decode(test["spec"]) if test.get("spec") is not None else None
        stdin = base64.b64decode(test.get("stdin", ""))
        interaction = None  # an interactive test: the input is the interactor's, not the program's
        if interactive and checker.error is None:
            answer = base64.b64decode(test.get("answer") or "")
            interaction = interactor_runner.Interaction(
                sup, sys.modules[__name__], checker, req, uid, stdin, answer, deadline
            )
        res = sup.run(
            argv,
            req["env"],
            child_limits(req, req["time_s"], req["file_size_mb"]),
            uid,
            b"" if interactive else stdin,
            req["time_s"],
            req["stdout_bytes"],
            req["stderr_bytes"],
            spec=spec,
            result_cap=req.get("result_bytes"),
            code_fd=code_fd if req["mode"] == "stdio" else None,
            backstop_at=deadline,
            stdio=interaction.stdio if interaction is not None else None,
            after_pump=interaction.end if interaction is not None else None,
        )
        starved = res["status"] == "starved"
        res["tampered"] = self_state() != sup.baseline
        limit_kb = req.get("memory_mb", 0) << 10
        peaks = [p for p in (res["max_rss_kb"], res["tree_peak_kb"]) if p is not None]
        # An OOM kill in the container is the tree's doing too: only its processes are
        # candidates (oom_score_adj 1000), and page cache is reclaimed before anyone is killed.
        res["memory_exceeded"] = bool(limit_kb and ((peaks and max(peaks) > limit_kb) or res["oom"]))
        res["cpu_limit_s"] = cpu_limit_s
        passed = res["status"] == "exited" and res["exit_code"] == 0 and not res["memory_exceeded"]
        if interactive:
            failed = {"status": "compile_error", "stderr": checker.error}  # it never ran
            res["checker"] = interaction.finish(req) if interaction is not None else failed
        elif checker is not None and passed and res["clean"] and not res["tampered"]:
            stdout = base64.b64decode(res["stdout"])
            answer = base64.b64decode(test.get("answer") or "")
            res["checker"] = checker_runner.check(
                sup, sys.modules[__name__], checker, req, uid, stdin, stdout, answer, deadline
            )
        send({"type": "test", "index": index, **res})
        if res["tampered"] or not res["clean"]:
            return False
    return True


def main():
    PRCTL(PR_SET_DUMPABLE, 0, 0, 0, 0)
    sup = Supervisor()
    requests = Requests()
    send({"type": "ready", "oom_counter": read_oom_kills() is not None})
    run = 0
    while True:
        req = requests.next()
        if req is None:
            return 0
        received = time.monotonic()
        run += 1
        uid = CANDIDATE_UID_BASE + run
        try:
            if req.get("mode") == "session":
                # A code session (session_host.py): its end is a program's end.
                if not session_host.serve_session(sup, req, uid, requests, sys.modules[__name__]):
                    return 3
            elif not serve(sup, req, uid, received):
                return 3
            # The scrub is part of the program's slot: the host holds it until `done`.
            problem = sup.scrub(uid)
        except Unclean as exc:
            problem = str(exc)
        if problem is not None:
            send({"type": "unclean", "reason": problem})
            return 3
        send({"type": "done"})
        send({"type": "ready", "runs": run})


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:  # report, then let the container die
        with contextlib.suppress(OSError):
            send({"type": "error", "message": f"{type(exc).__name__}: {exc}"})
        code = 2
    sys.stdout.flush()
    os._exit(code)
