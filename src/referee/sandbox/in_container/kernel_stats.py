"""What the supervisor reads of the kernel about a running test (stdlib only, Python 3.11): the
container's cgroup (memory, CPU, OOM kills) and each task's scheduler statistics.

Two questions decide verdicts here, and neither may depend on how busy the node is:

- How much memory does the program hold? Its anonymous memory (the cgroup's `rss` in v1,
  `anon` in v2), not the cgroup's usage: usage counts the page cache of every file the
  program read, reclaimable at any time, so an 11 MB program that reads 290 MB of files
  would be "over the limit". The anonymous memory is sampled while a test runs (a peak of
  the container cannot be reset from inside, so it says nothing about the second test).
- Did a program that is still running when its time is up use that time, or was it kept
  from a CPU? `WaitClock` subtracts from the wall clock the time the program's tasks sat
  runnable in a run queue (/proc/<pid>/task/<tid>/schedstat, readable inside the hardened
  container): a program that sleeps, blocks on input or deadlocks never waits in a run
  queue, so its own time is the wall clock and it times out exactly as before; one starved
  by the node's load gets its waiting time back, up to a backstop.
"""

import os

CHUNK = 65536
OOM_FILES = ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events")
MEMORY_STAT = ("/sys/fs/cgroup/memory/memory.stat", "/sys/fs/cgroup/memory.stat")
# The anonymous memory of the cgroup (v1 `rss` includes transparent huge pages; v2 `anon`),
# and its shared memory (`shmem`, both): tmpfs files, memfds, MAP_SHARED anonymous mappings,
# System V segments. Neither is reclaimable without swap: page cache is, and is left out.
ANON_KEYS = (b"rss", b"anon")
SHMEM_KEYS = (b"shmem",)
# The container's CPU time: v1 cpuacct (ns), then v2 cpu.stat (usage_usec).
CPUACCT = ("/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage")
CPU_STAT = ("/sys/fs/cgroup/cpu.stat",)
# The time the container's CPU quota (`cpus`) held its tasks back: v1 throttled_time (ns),
# v2 throttled_usec. Waiting for its own quota is the tree's own use of CPU, not the node's
# load (with cpus 0.25 an endless loop alone on the node waited 3/4 of the clock, and was
# masked as starved at the backstop).
CPU_THROTTLE = (
    "/sys/fs/cgroup/cpu/cpu.stat",
    "/sys/fs/cgroup/cpu,cpuacct/cpu.stat",
    "/sys/fs/cgroup/cpu.stat",
)
# How often the run-queue waits of a running test's tasks are read. A task's wait is added to
# its counter when it gets a CPU, so nothing is lost between two readings but the last
# interval of a task that exits in it.
WAIT_SAMPLE_INTERVAL_S = 0.05
SCHED_IDLE = 5


class KeptFile:
    """A kernel status file (cgroup, /proc) opened once and re-read from its start with pread
    each time: a test reads a dozen of them, and opening is most of what reading them costs.
    The first of `paths` that opens is used (cgroup v1 names, then v2); when none does, it
    is not tried again."""

    def __init__(self, *paths):
        self.paths = paths
        self.fd = None
        self.missing = False

    def data(self):
        """The whole file as it reads now (bytes), or None."""
        for _ in range(2):  # a read that fails on a kept fd reopens once
            if self.fd is None and not self.missing:
                self.fd = self.open()
            if self.fd is None:
                return None
            try:
                chunks, offset = [], 0
                while chunk := os.pread(self.fd, CHUNK, offset):
                    chunks.append(chunk)
                    offset += len(chunk)
                return b"".join(chunks)
            except OSError:
                os.close(self.fd)
                self.fd = None
        return None

    def text(self):
        data = self.data()
        return None if data is None else data.decode("ascii", "replace")

    def open(self):
        for path in self.paths:
            try:
                return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
        self.missing = True
        return None

    def first_int(self):
        try:
            return int((self.data() or b"").split()[0])
        except (ValueError, IndexError):
            return None

    def keyed_int(self, keys):
        """The value of the first `key value` line whose key is one of `keys`, or None."""
        return keyed_int(self.data(), keys)


def keyed_int(data, keys):
    """In `key value` lines (bytes, or None), the value of the first key among `keys`, or None."""
    for line in (data or b"").splitlines():
        key, _, value = line.partition(b" ")
        if key in keys:
            try:
                return int(value)
            except ValueError:
                return None
    return None


OOM_EVENTS = KeptFile(*OOM_FILES)
MEMORY = KeptFile(*MEMORY_STAT)
CPU_NS = KeptFile(*CPUACCT)
CPU_USEC = KeptFile(*CPU_STAT)
THROTTLE = KeptFile(*CPU_THROTTLE)


def read_oom_kills():
    """The memory cgroup's OOM-kill counter (cgroup v1 oom_control or v2 memory.events)."""
    return OOM_EVENTS.keyed_int((b"oom_kill",))


def anon_bytes():
    """The container's memory that only a kill can free, now: anonymous memory and shared
    memory (a program that kept 18 MB in a memfd or /tmp beside 246 MB of heap was within
    256 MB). The page cache of the files it read is not included."""
    data = MEMORY.data()
    anon = keyed_int(data, ANON_KEYS)
    return None if anon is None else anon + (keyed_int(data, SHMEM_KEYS) or 0)


def container_cpu_s():
    """CPU time the container's processes used so far (every process, live or gone), or None."""
    ns = CPU_NS.first_int()
    if ns is not None:
        return ns / 1e9
    usec = CPU_USEC.keyed_int((b"usage_usec",))
    return None if usec is None else usec / 1e6


def throttled_s():
    """How long the container's CPU quota has throttled it so far (summed over its CPUs), or 0."""
    data = THROTTLE.data()
    ns = keyed_int(data, (b"throttled_time",))
    if ns is not None:
        return ns / 1e9
    return (keyed_int(data, (b"throttled_usec",)) or 0) / 1e6


def run_queue_waits(skip, lowered=None):
    """{tid: ns spent runnable but not running} for every task of every process but `skip`.
    With a set as `lowered`, the tids of tasks that lowered their own priority are added to
    it (see lowered_priority)."""
    waits = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        try:
            tids = os.listdir(f"/proc/{entry}/task")
        except OSError:  # gone meanwhile
            continue
        for tid in tids:
            try:
                with open(f"/proc/{entry}/task/{tid}/schedstat", "rb") as handle:
                    waits[int(tid)] = int(handle.read().split()[1])
                if lowered is not None and lowered_priority(f"/proc/{entry}/task/{tid}/stat"):
                    lowered.add(int(tid))
            except (OSError, ValueError, IndexError):
                continue
    return waits


def lowered_priority(stat_path):
    """True when the task made itself yield to others: a positive nice value or SCHED_IDLE
    (allowed to any process, and never undone without privilege). What it then waits is its
    own doing, not the node's load: an endless loop under SCHED_IDLE next to a few busy
    neighbours waited 3 s of 5 and was masked as starved."""
    with open(stat_path, "rb") as handle:
        fields = handle.read().rpartition(b")")[2].split()
    # After "pid (comm)": field 3 (state) is fields[0]; nice is field 19, policy field 41.
    return int(fields[16]) > 0 or int(fields[38]) == SCHED_IDLE


class WaitClock:
    """A test's own time: the wall clock since `started` minus the time its tasks were kept
    from a CPU (the node's load, or its own share of the container's CPU quota).

    Counted like a pressure stall ("some task waited"): over each interval between two
    readings, the longest wait of any one task. Never the sum: ten tasks waiting at once
    are one wait, and a program cannot turn its own parallelism into extra time. The CPU
    the whole tree used (the container's counter) and the time its own CPU quota throttled
    it are kept beside it, for the verdict."""

    def __init__(self, started, skip):
        self.started = started
        self.skip = skip
        self.waits = {}
        self.waited_s = 0.0
        self.cpu_before = container_cpu_s()
        self.throttled_before = throttled_s()
        self.next_sample = started + WAIT_SAMPLE_INTERVAL_S

    def sample(self, now):
        lowered: set[int] = set()
        waits = run_queue_waits(self.skip, lowered)
        worst = 0
        for tid, wait in waits.items():
            if tid in lowered:  # yielding to others is not being starved by them
                continue
            before = self.waits.get(tid, 0)
            worst = max(worst, wait - before if wait >= before else wait)  # a reused tid: new task
        self.waits = waits
        self.waited_s = min(self.waited_s + worst / 1e9, now - self.started)
        self.next_sample = now + WAIT_SAMPLE_INTERVAL_S

    def own_s(self, now):
        return now - self.started - self.waited_s

    def quota_bound(self):
        """True when the container's own CPU quota, not the node, held it back for most of
        what it waited (the throttled time is summed over CPUs: never less than its share)."""
        throttled = max(0.0, throttled_s() - self.throttled_before)
        return self.waited_s > 0 and throttled >= self.waited_s / 2

    def tree_cpu_s(self):
        after = container_cpu_s()
        if after is None or self.cpu_before is None:
            return None
        return max(0.0, after - self.cpu_before)
