"""Cleaning up after a program is part of its slot and bounded (issue 27, 3): the scratch dirs
hold a bounded number of inodes, and the scrub ends before the host gets `done`, so a
directory bomb costs its own slot, not the next programs'."""

from __future__ import annotations

import time

import pytest

from referee.sandbox import SandboxPool
from referee.sandbox.hardening import SCRATCH_INODES
from referee.verifiers import Check, Resources
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.timing import within

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "20 22\n", "output": "42\n"}]
HONEST = "a, b = map(int, input().split())\nprint(a + b)\n"
# 250,000 nested directories in /work and as many files in /tmp, as far as it gets; it says
# how far on stderr, then answers honestly.
DIR_BOMB = (
    """import os, sys
made = 0
os.chdir('/work')
try:
    while made < 250_000:
        os.mkdir('d')
        os.chdir('d')
        made += 1
except OSError:
    pass
files = 0
try:
    while files < 250_000:
        open(f'/tmp/{files}', 'w').close()
        files += 1
except OSError:
    pass
print(made, files, file=sys.stderr)
"""
    + HONEST
)


async def _judge(pool: SandboxPool, program: str) -> Check:
    verifier, options = CodeVerifier(), CodeOptions()
    prepared = verifier.prepare(verifier.validate_reference({"language": "python", "tests": TESTS}), options)
    [check] = await verifier.check_group([program], prepared, options, Resources(sandbox=pool))
    assert isinstance(check, Check), check
    return check


async def test_a_directory_bomb_costs_its_own_slot_only(one_container: SandboxPool) -> None:
    bomb = await _judge(one_container, DIR_BOMB)
    assert bomb.details["verdict"] == "accepted", bomb.details
    made, files = map(int, bomb.details["tests"][0]["stderr"].split())
    assert made < SCRATCH_INODES and files < SCRATCH_INODES  # the tmpfs ran out of inodes
    # The same container (pool of one), already scrubbed: honest programs pass at once.
    started = time.perf_counter()
    for _ in range(3):
        honest = await _judge(one_container, HONEST)
        assert honest.details["verdict"] == "accepted", honest.details
    assert time.perf_counter() - started < within(2.0)
    assert one_container.stats["removed"] == 0  # scrubbed within its budget, not discarded


# As many directories side by side as the inodes of /work and /tmp allow (16,383 each),
# then an honest answer. Removing them read each parent again per directory (1.7 s of CPU
# per scratch dir, per test): a program timing out on every test pushed its request past
# its deadline, and the remaining tests came back `starved` (masked, not its 0).
FLAT_DIRS = (
    """import itertools, os, string
names = (''.join(t) for t in itertools.product(string.ascii_letters + string.digits, repeat=3))
for top in ('/work', '/tmp'):
    for name in names:
        try:
            os.mkdir(os.path.join(top, name))
        except OSError:
            break
"""
    + HONEST
)


async def test_directories_side_by_side_are_scrubbed_in_linear_time(one_container: SandboxPool) -> None:
    started = time.perf_counter()
    bomb = await _judge(one_container, FLAT_DIRS)
    elapsed = time.perf_counter() - started
    assert bomb.details["verdict"] == "accepted", bomb.details
    assert one_container.stats["removed"] == 0
    # Two tests, each making ~32,000 directories (~0.5 s) and scrubbing them: 7 s before.
    assert elapsed < within(3.5), elapsed
