"""Program memory is what the program holds (issue 27, 10): page cache of the files it read is
not, and every test of a tree over the limit is caught, not only the first one a container
runs (the cgroup's high-water mark cannot be reset from inside)."""

from __future__ import annotations

import pytest

from referee.sandbox import SandboxPool
from referee.verifiers import Check, Resources
from referee.verifiers.code import CodeOptions, CodeVerifier

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "20 22\n", "output": "42\n"}]
HONEST = "a, b = map(int, input().split())\nprint(a + b)\n"
# Reads 290 MB of the image's files, each dropped from the page cache first so that reading
# it charges this container again (whoever read it before), 1 MB at a time: 11 MB of its own.
READS_290MB = (
    """import os
total = 0
for root, _, names in os.walk('/usr/lib'):
    for name in names:
        try:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
        except OSError:
            continue
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while total < 290 << 20 and (chunk := os.read(fd, 1 << 20)):
            total += len(chunk)
        os.close(fd)
assert total >= 290 << 20, total
"""
    + HONEST
)
# Five children of 60 MB each at once: 300 MB, over the 256 MB limit, in every test.
FIVE_CHILDREN_60MB = (
    """import os, time
children = []
for _ in range(5):
    pid = os.fork()
    if pid == 0:
        hold = bytearray(60 << 20)
        for i in range(0, len(hold), 4096):
            hold[i] = 1
        time.sleep(0.5)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""
    + HONEST
)


async def _judge(pool: SandboxPool, program: str, tests: list[dict[str, str]]) -> Check:
    verifier, options = CodeVerifier(), CodeOptions(reward="fraction")
    prepared = verifier.prepare(verifier.validate_reference({"language": "python", "tests": tests}), options)
    [check] = await verifier.check_group([program], prepared, options, Resources(sandbox=pool))
    assert isinstance(check, Check), check
    return check


async def test_page_cache_of_files_read_is_not_program_memory(one_container: SandboxPool) -> None:
    check = await _judge(one_container, READS_290MB, TESTS)
    assert (check.details["verdict"], check.score) == ("accepted", 1.0), check.details


async def test_a_tree_over_the_limit_is_caught_in_every_test(one_container: SandboxPool) -> None:
    """Three tests in one container: each is memory_limit_exceeded (the score under
    `fraction` was 0.333: the tests after the first went unnoticed)."""
    check = await _judge(one_container, FIVE_CHILDREN_60MB, TESTS + TESTS[:1])
    verdicts = [t["verdict"] for t in check.details["tests"]]
    assert verdicts == ["memory_limit_exceeded"] * 3 and check.score == 0.0, check.details


async def test_a_java_heap_overflow_is_memory_limit_exceeded(one_container: SandboxPool) -> None:
    """The JVM's own heap limit: OutOfMemoryError, never a time-out or a runtime error."""
    program = (
        "public class Main { public static void main(String[] x) { java.util.List<long[]> l = "
        "new java.util.ArrayList<>(); while (true) l.add(new long[1 << 20]); } }\n"
    )
    verifier, options = CodeVerifier(), CodeOptions()
    prepared = verifier.prepare(verifier.validate_reference({"language": "java", "tests": TESTS}), options)
    [check] = await verifier.check_group([program], prepared, options, Resources(sandbox=one_container))
    assert isinstance(check, Check), check
    assert [t["verdict"] for t in check.details["tests"]] == ["memory_limit_exceeded"] * 2, check.details


# 236 MB of heap (about 246 MB with the interpreter) and 18 MB kept where anonymous memory
# does not count it: a memfd, or a file in /tmp (tmpfs). 264 MB in all, over 256 MB.
HEAP_AND_HIDDEN = """import os, time
heap = bytearray(236 << 20)
for i in range(0, len(heap), 4096):
    heap[i] = 1
fd = {open_hidden}
for _ in range(18):
    os.write(fd, b'y' * (1 << 20))
time.sleep(0.1)  # held for a while: memory is sampled every 5 ms
"""


@pytest.mark.parametrize(
    "open_hidden",
    ["os.memfd_create('hidden')", "os.open('/tmp/hidden', os.O_WRONLY | os.O_CREAT, 0o600)"],
    ids=["memfd", "tmpfs_file"],
)
async def test_shared_memory_counts_as_program_memory(one_container: SandboxPool, open_hidden: str) -> None:
    """Shared memory (tmpfs files, memfds) is not anonymous memory, and only a kill frees it:
    a program that put 18 MB there beside 246 MB of its own was accepted within 256 MB."""
    program = HEAP_AND_HIDDEN.format(open_hidden=open_hidden) + HONEST
    check = await _judge(one_container, program, TESTS)
    verdicts = [t["verdict"] for t in check.details["tests"]]
    assert verdicts == ["memory_limit_exceeded"] * 2, check.details
