"""Container reuse: one container serves many programs, and none can observe or affect another.

Threat model (docs/security.md): a program may do anything an unprivileged Linux process can
do inside its container. What it leaves behind — processes, files in /work or /tmp, System V
IPC objects, POSIX message queues, a changed environment or rlimit — must be invisible to the
next program in the same container and to the next test of the same program. Each test below
plants one kind of trace and looks for it from the next run.
"""

from __future__ import annotations

import json

import pytest

from referee.sandbox import LANGUAGES, Job, Limits, SandboxPool, TestInput
from referee.sandbox.in_container.supervisor import CANDIDATE_UID_BASE, ZYGOTE
from tests.sandbox.helpers import make_sandbox_settings

pytestmark = pytest.mark.docker

# Plants every kind of trace it can, then reports what it did.
PLANT = r"""
import ctypes, os, resource, sys, time
libc = ctypes.CDLL(None, use_errno=True)
open('/tmp/left-in-tmp', 'w').write('secret')
open('/work/left-in-work', 'w').write('secret')
os.makedirs('/tmp/dir/sub', exist_ok=True)
os.chmod('/tmp/dir', 0o000)
shm = libc.shmget(0x5eed, 4096, 0o1666)            # IPC_CREAT | 0666
msg = libc.msgget(0x5eed, 0o1666)
sem = libc.semget(0x5eed, 1, 0o1666)
resource.setrlimit(resource.RLIMIT_NOFILE, (17, 17))
os.environ['LEAK'] = 'yes'
if os.fork() == 0:                                    # a daemon that outlives the program
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(0.05)
    os._exit(0)
print(shm >= 0, msg >= 0, sem >= 0)
"""

ZYGOTE_CMDLINE = "\x00".join(ZYGOTE) + "\x00"

# Looks for any trace of an earlier program (or test) and prints what it sees.
LOOK = r"""
import json, os, resource
def entries(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return repr(exc)
def sysv(table):
    with open('/proc/sysvipc/' + table) as handle:
        return handle.read().splitlines()[1:]
others, root = [], []  # root: the supervisor's Python template, which candidates may see
me = os.getpid()
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) not in (1, me):
        cmdline = open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace')
        uid = int(open(f'/proc/{pid}/status').read().split('Uid:')[1].split()[0])
        (root if uid == 0 else others).append(cmdline)
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines() if ':' in line)
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "cap_eff": status['CapEff'].strip(), "cap_prm": status['CapPrm'].strip(),
    "tmp": entries('/tmp'), "work": entries('/work'),
    "shm": sysv('shm'), "msg": sysv('msg'), "sem": sysv('sem'),
    "others": others, "root": root, "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
    "env": sorted(os.environ),
}))
"""

# What a program may try against the supervisor; each must be refused.
ATTACK = r"""
import ctypes, json, os, resource, signal
results = {}
def attempt(name, fn):
    try:
        fn()
        results[name] = 'done'
    except OSError as exc:
        results[name] = type(exc).__name__
attempt('kill', lambda: os.kill(1, signal.SIGKILL))
attempt('stop', lambda: os.kill(1, signal.SIGSTOP))
attempt('environ', lambda: open('/proc/1/environ', 'rb').read())
attempt('fd', lambda: os.listdir('/proc/1/fd'))
attempt('prlimit', lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (1, 1)))
attempt('renice', lambda: os.setpriority(os.PRIO_PROCESS, 1, 19))
attempt('setuid0', lambda: os.setuid(0))
librt = ctypes.CDLL('librt.so.1', use_errno=True)
librt.mq_open.restype = ctypes.c_int
mq = librt.mq_open(b'/leak', os.O_CREAT | os.O_RDWR, 0o666, None)
results['mq_open'] = 'refused' if mq < 0 else 'created'
print(json.dumps(results))
"""
# What ATTACK must report: every attempt refused.
ATTACK_REFUSED = {
    "kill": "PermissionError",
    "stop": "PermissionError",
    "environ": "PermissionError",
    "fd": "PermissionError",
    "prlimit": "PermissionError",
    "renice": "PermissionError",
    "setuid0": "PermissionError",
    "mq_open": "refused",
}


def job(pool: SandboxPool, source: str, tests: int = 1) -> Job:
    return Job(
        LANGUAGES["python"],
        "stdio",
        source.encode(),
        tuple(TestInput() for _ in range(tests)),
        Limits.from_settings(pool.settings),
    )


async def look(pool: SandboxPool) -> dict:  # type: ignore[type-arg]
    result = await pool.run(job(pool, LOOK))
    [run] = result.tests
    assert run is not None and run.status == "exited" and run.exit_code == 0, run
    seen: dict = json.loads(run.stdout)  # type: ignore[type-arg]
    return seen


async def test_programs_share_a_container_under_fresh_uids_without_privilege(
    one_container: SandboxPool, escape_check: None
) -> None:
    seen = [await look(one_container) for _ in range(3)]
    assert one_container.stats["started"] == 1 and one_container.stats["reused"] >= 2
    uids = [s["uid"] for s in seen]
    assert len(set(uids)) == 3 and all(uid > CANDIDATE_UID_BASE for uid in uids)
    for s in seen:
        # The only other root process a candidate can see is the Python template it was forked
        # from (it holds nothing secret, and a candidate can neither signal nor read it).
        assert s["root"] == [ZYGOTE_CMDLINE]
        assert s["gid"] == s["uid"] and s["groups"] == []
        assert int(s["cap_eff"], 16) == 0 and int(s["cap_prm"], 16) == 0


async def test_nothing_a_program_plants_is_seen_by_the_next_one(
    one_container: SandboxPool, escape_check: None
) -> None:
    baseline = await look(one_container)
    planted = await one_container.run(job(one_container, PLANT))
    [run] = planted.tests
    assert run is not None and run.stdout.split() == [b"True", b"True", b"True"], run
    after = await look(one_container)
    assert one_container.stats["started"] == 1  # the same container served all three
    for key in ("tmp", "work", "shm", "msg", "sem", "others", "nofile", "env"):
        assert after[key] == baseline[key], key
    assert after["tmp"] == [] and after["shm"] == [] and after["others"] == []


async def test_nothing_leaks_between_tests_of_one_program(
    one_container: SandboxPool, escape_check: None
) -> None:
    # Test 0 plants (first run), test 1 finds what it planted (second run): the same uid both
    # times, so only the scrub between tests stands in the way.
    source = (
        "import os, sys\n"
        "if os.path.exists('/proc/sysvipc/shm') and len(open('/proc/sysvipc/shm').read().splitlines()) > 1:\n"
        "    print('SEEN shm')\n"
        "if os.listdir('/tmp') or os.listdir('/work') != ['sol.py']:\n"
        "    print('SEEN files', os.listdir('/tmp'), os.listdir('/work'))\n"
        "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())\n"
        "          and int(open(f'/proc/{p}/status').read().split('Uid:')[1].split()[0]) != 0]\n"
        "if others:\n"
        "    print('SEEN processes', others)\n" + PLANT
    )
    result = await one_container.run(job(one_container, source, tests=2))
    outputs = [t.stdout for t in result.tests if t is not None]
    assert len(outputs) == 2
    assert all(b"SEEN" not in out for out in outputs), outputs


async def test_the_supervisor_is_out_of_reach(one_container: SandboxPool, escape_check: None) -> None:
    result = await one_container.run(job(one_container, ATTACK))
    [run] = result.tests
    assert run is not None and run.exit_code == 0, run
    assert json.loads(run.stdout) == ATTACK_REFUSED
    # ... and the container serves the next program as if nothing happened.
    assert (await look(one_container))["others"] == []
    assert one_container.stats["started"] == 1


async def test_deep_and_locked_directories_are_removed_too(
    one_container: SandboxPool, escape_check: None
) -> None:
    # Deeper than PATH_MAX and than Python's recursion limit, each level locked (mode 000).
    deep = (
        "import os\nos.chdir('/tmp')\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
        "os.chdir('/tmp')\nos.chmod('d', 0)\nprint('deep')\n"
    )
    result = await one_container.run(job(one_container, deep))
    [run] = result.tests
    assert run is not None and run.stdout.strip() == b"deep", run
    after = await look(one_container)
    assert after["tmp"] == []
    assert one_container.stats["started"] == 1


async def test_containers_retire_after_their_run_budget(sandbox_image: str) -> None:
    pool = SandboxPool(make_sandbox_settings(pool_size=1, max_parallel=1, max_runs_per_container=2))
    await pool.start()
    try:
        uids = [(await look(pool))["uid"] for _ in range(5)]
        assert pool.stats["started"] >= 3
        assert pool.containers <= pool.max_containers
        assert len(uids) == 5
    finally:
        await pool.close()
