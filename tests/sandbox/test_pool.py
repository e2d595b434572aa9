"""The pool, the hardened container configuration and the image build, on a real engine."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from referee.sandbox.hardening import LABEL
from referee.sandbox.image import build_image, dockerfile_text, image_ref
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.pool import SandboxPool
from referee.sandbox.protocol import Job, TestInput
from referee.sandbox.run_limits import Limits
from referee.verifiers import Resources
from referee.verifiers.base import Check
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.sandbox.helpers import docker_client, labelled_containers, make_sandbox_settings
from tests.timing import within

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


def test_image_build_is_idempotent(sandbox_image: str) -> None:
    settings = make_sandbox_settings()
    started = time.monotonic()
    assert build_image(settings, log=lambda _m: None) == sandbox_image == image_ref(settings)
    assert time.monotonic() - started < within(5)


def test_checked_in_dockerfile_matches_the_recipe() -> None:
    assert (REPO / "docker/sandbox/Dockerfile").read_text() == dockerfile_text()


async def test_containers_are_hardened(sandbox_pool: SandboxPool) -> None:
    assert await sandbox_pool.until_warm(1)
    client = docker_client()
    try:
        mine = client.api.containers(filters={"label": f"{LABEL}={sandbox_pool.settings.instance}"})
        info = client.api.inspect_container(mine[0]["Id"])
    finally:
        client.close()
    host, config = info["HostConfig"], info["Config"]
    s = sandbox_pool.settings
    assert host["NetworkMode"] == "none"
    # Root inside, but only to hand each program a uid of its own and to kill what it leaves.
    assert host["CapDrop"] == ["ALL"] and sorted(host["CapAdd"]) == ["KILL", "SETGID", "SETUID"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert not any("seccomp=unconfined" in opt for opt in host["SecurityOpt"])
    assert host["ReadonlyRootfs"] is True
    assert host["Memory"] == host["MemorySwap"] == s.container_memory_mb() << 20
    assert host["PidsLimit"] == s.max_processes + 1
    assert host["NanoCpus"] == int(s.cpus * 1e9)
    assert {u["Name"] for u in host["Ulimits"]} == {"nofile", "fsize", "core"}
    assert host["Privileged"] is False
    assert host["IpcMode"] == "none"
    assert not info["Mounts"] and not host["Binds"]  # no Docker socket, no host path
    assert set(host["Tmpfs"]) == {"/work", "/tmp"}
    assert config["User"] == "0:0"
    assert config["Labels"][LABEL] == s.instance
    assert {e.split("=", 1)[0] for e in config["Env"]} <= {"PATH", "LANG", "HOME", "HOSTNAME"}


async def test_close_removes_every_labelled_container(sandbox_image: str) -> None:
    pool = SandboxPool(make_sandbox_settings(pool_size=3))
    await pool.start()
    assert await pool.until_warm(3)
    assert len(labelled_containers()) >= 3
    await pool.close()
    assert labelled_containers() == []
    assert pool.health() == (False, "closed")


async def test_start_removes_strays(sandbox_image: str) -> None:
    first = SandboxPool(make_sandbox_settings(pool_size=2))
    await first.start()
    assert await first.until_warm(2)
    await first.abandon()  # a crashed service: its containers stay behind
    strays = set(labelled_containers())
    assert strays
    second = SandboxPool(make_sandbox_settings(pool_size=0))
    await second.start()
    assert not strays & set(labelled_containers())
    await second.close()


async def _check(pool: SandboxPool, program: str, reference: dict, **options: object) -> Check:  # type: ignore[type-arg]
    verifier = CodeVerifier()
    opts = CodeOptions.model_validate(options)
    prepared = verifier.prepare(verifier.validate_reference(reference), opts)
    [check] = await verifier.check_group([program], prepared, opts, Resources(sandbox=pool))
    assert isinstance(check, Check), check
    return check


async def test_options_override_the_limits(sandbox_pool: SandboxPool) -> None:
    ref = {"language": "python", "tests": [{"input": "", "output": "ok\n"}]}
    slow = "import time\ntime.sleep(1)\nprint('ok')\n"
    assert (await _check(sandbox_pool, slow, ref)).score == 1.0
    assert (await _check(sandbox_pool, slow, ref, time_limit_s=0.5)).details[
        "verdict"
    ] == "time_limit_exceeded"
    hog = "x = b'x' * (100 << 20)\nprint('ok')\n"
    assert (await _check(sandbox_pool, hog, ref)).score == 1.0
    check = await _check(sandbox_pool, hog, ref, memory_limit_mb=64)
    assert check.details["verdict"] == "memory_limit_exceeded"
    chatty = "print('ok')\nprint('x' * 5000)\n"
    check = await _check(sandbox_pool, chatty, ref, output_limit_bytes=4096)
    assert check.details["verdict"] == "output_limit_exceeded"


async def test_binary_reward_and_details(sandbox_pool: SandboxPool) -> None:
    ref = {
        "language": "python",
        "tests": [{"input": "1\n", "output": "1\n"}, {"input": "2\n", "output": "4\n"}],
    }
    program = "n = int(input())\nprint(n)\n"
    fraction = await _check(sandbox_pool, program, ref, reward="fraction")
    binary = await _check(sandbox_pool, program, ref)  # the default: all tests pass, or 0
    assert (fraction.score, binary.score) == (0.5, 0.0)
    d = fraction.details
    assert (d["verdict"], d["passed"], d["total"]) == ("wrong_answer", 1, 2)
    assert [t["verdict"] for t in d["tests"]] == ["accepted", "wrong_answer"]
    assert (
        d["tests"][0]["stdout"] == "1\n" and d["tests"][0]["time_ms"] > 0 and d["tests"][0]["memory_kb"] > 0
    )


async def test_large_input_and_all_tests_run(sandbox_pool: SandboxPool) -> None:
    numbers = " ".join(str(i) for i in range(300_000))
    ref = {
        "language": "cpp",
        "tests": [{"input": f"300000\n{numbers}\n", "output": f"{sum(range(300_000))}\n"}] * 3,
    }
    program = (
        '#include <cstdio>\nint main(){int n; long long s=0, x; scanf("%d", &n);'
        'for(int i=0;i<n;i++){scanf("%lld", &x); s+=x;} printf("%lld\\n", s);}\n'
    )
    check = await _check(sandbox_pool, program, ref)
    assert check.score == 1.0 and check.details["total"] == 3
    assert check.details["compile"]["ok"] and check.details["compile"]["time_ms"] > 0
    assert check.details["compile"]["cached"] is False
    again = await _check(sandbox_pool, program, ref)  # the same program: from the compile cache
    assert again.score == 1.0 and again.details["compile"] == {"ok": True, "time_ms": 0.0, "cached": True}


async def test_judged_tests_keep_only_a_short_prefix_of_their_output(sandbox_pool: SandboxPool) -> None:
    """With a judge, each test is judged as it arrives and only 512 bytes of its output stay
    in memory (a 1000-test submission no longer holds 1000 x 1 MB until the end)."""
    seen: list[tuple[int, int]] = []

    def judge(index: int, run: object) -> tuple[str, str | None]:
        seen.append((index, len(run.stdout)))  # type: ignore[attr-defined]
        return ("accepted", None)

    limits = Limits.from_settings(sandbox_pool.settings)
    program = b"import sys\nsys.stdout.write('z' * 300000)\n"
    job = Job(LANGUAGES["python"], "stdio", program, (TestInput(), TestInput()), limits, judge=judge)
    result = await sandbox_pool.run(job)
    assert sorted(seen) == [(0, 300000), (1, 300000)]  # the judge saw the full output
    for run in result.tests:
        assert run is not None and run.verdict == ("accepted", None)
        assert len(run.stdout) <= 512 and run.result is None
