"""Issue 17: what running HumanEval and MBPP through the `code` verifier showed, on a real engine.

Each test runs real programs in the Docker sandbox: the pool's bound under a burst, MBPP
entry points named like builtins, the truth value of built-in objects (`re.Match`), trivially
true asserts, the per-reference output cap, and the all-tests-pass default reward.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from referee.sandbox.hardening import LABEL
from referee.sandbox.pool import SandboxPool
from referee.verifiers import Resources
from referee.verifiers.base import Check, VerifierError
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.sandbox.helpers import docker_client, make_sandbox_settings, run_instance

pytestmark = pytest.mark.docker


async def judge_group(
    pool: SandboxPool, programs: list[str], reference: dict[str, Any], **options: Any
) -> list[Check | VerifierError]:
    """The programs judged as a group, through the verifier's own validation and preparation."""
    verifier = CodeVerifier()
    opts = CodeOptions.model_validate(options)
    ref = verifier.validate_reference(reference)
    verifier.validate_inputs(ref, opts)
    prepared = verifier.prepare(ref, opts)
    return list(await verifier.check_group(programs, prepared, opts, Resources(sandbox=pool)))


async def _judge(
    pool: SandboxPool, programs: list[str], reference: dict[str, Any], **options: Any
) -> list[Check]:
    checks = await judge_group(pool, programs, reference, **options)
    assert all(isinstance(c, Check) for c in checks), checks
    return [c for c in checks if isinstance(c, Check)]


def _asserts(tests: str) -> dict[str, Any]:
    return {"language": "python", "test_format": "assert", "tests": tests}


def _reasons(check: Check) -> list[str | None]:
    return [t.get("reason") for t in check.details["tests"]]


# ---- 1. the warm pool stays bounded under a burst ---------------------------------------------


def _instance_containers(instance: str) -> int:
    client = docker_client()
    try:
        return len(client.api.containers(all=True, filters={"label": f"{LABEL}={instance}"}))
    finally:
        client.close()


async def test_a_burst_never_grows_the_pool_past_its_bound(sandbox_image: str, escape_check: None) -> None:
    """pool_size 2, one running at a time, 8 submissions at once: never more than 2 containers
    (the pool's count, sampled all along, and the engine's labelled containers), and every
    submission gets its verdict. Before the fix each waiting submission started one more."""
    instance = run_instance("pytest-burst")
    pool = SandboxPool(make_sandbox_settings(instance=instance, pool_size=2, max_parallel=1))
    await pool.start()
    try:
        assert pool.max_containers == 2
        assert await pool.until_warm(2)
        seen = {"pool": 0, "engine": 0}
        done = asyncio.Event()

        async def sample_pool() -> None:
            while not done.is_set():
                seen["pool"] = max(seen["pool"], pool.containers)
                await asyncio.sleep(0.005)

        async def sample_engine() -> None:
            while not done.is_set():
                count = await asyncio.to_thread(_instance_containers, instance)
                seen["engine"] = max(seen["engine"], count)
                await asyncio.sleep(0.05)

        reference = {
            "language": "python",
            "tests": [{"input": f"{i}\n", "output": f"{2 * i}\n"} for i in range(3)],
        }
        program = "import time\ntime.sleep(0.05)\nprint(2 * int(input()))\n"
        samplers = [asyncio.create_task(sample_pool()), asyncio.create_task(sample_engine())]
        try:
            results = await asyncio.gather(*(_judge(pool, [program], reference) for _ in range(8)))
        finally:
            done.set()
            await asyncio.gather(*samplers)
        assert [c.details["verdict"] for [c] in results] == ["accepted"] * 8
        assert [c.score for [c] in results] == [1.0] * 8
        assert 1 <= seen["pool"] <= pool.max_containers, seen
        assert 1 <= seen["engine"] <= pool.max_containers, seen
        assert await pool.until_warm(2)
        assert pool.containers <= pool.max_containers
        assert _instance_containers(instance) <= pool.max_containers
    finally:
        await pool.close()
    assert _instance_containers(instance) == 0


# ---- 2. an entry point named like a builtin is the program's ------------------------------------

MBPP_SUM = "assert sum(10, 15) == 25\nassert sum(-5, 5) == 0\nassert sum(7, 8) == 15"


async def test_a_function_named_sum_is_judged_not_the_builtin(sandbox_pool: SandboxPool) -> None:
    """MBPP tasks whose function is called `sum`/`max`/`pow`: the asserts call the program's."""
    correct, defines_nothing, wrong = await _judge(
        sandbox_pool,
        [
            "def sum(a, b):\n    return a + b\n",
            "def add(a, b):\n    return a + b\n",
            "def sum(a, b):\n    return a * b\n",
        ],
        _asserts(MBPP_SUM),
    )
    assert (correct.details["verdict"], correct.score, correct.details["passed"]) == ("accepted", 1.0, 3)
    # Python's own sum never stands in for a program that does not define it.
    assert (defines_nothing.details["verdict"], defines_nothing.score) == ("wrong_answer", 0.0)
    assert all("does not define sum" in (r or "") for r in _reasons(defines_nothing))
    assert (wrong.details["verdict"], wrong.details["passed"]) == ("wrong_answer", 0)

    [own_max] = await _judge(
        sandbox_pool,
        ["def max(a, b):\n    return a if a > b else b\n"],
        _asserts("assert max(3, 5) == 5\nassert max(-1, -7) == -1"),
    )
    assert own_max.score == 1.0
    [no_max] = await _judge(sandbox_pool, ["x = 1\n"], _asserts("assert max(3, 5) == 5"))
    assert (no_max.details["verdict"], no_max.score) == ("wrong_answer", 0.0)
    # pow is not a function the host evaluates: the reference used to be refused (422).
    [own_pow] = await _judge(
        sandbox_pool,
        ["def pow(a, b):\n    r = 1\n    for _ in range(b):\n        r *= a\n    return r\n"],
        _asserts("x = pow(2, 10)\nassert x == 1024\nassert pow(3, 0) == 1"),
    )
    assert own_pow.score == 1.0 and own_pow.details["total"] == 2


async def test_builtins_stay_the_hosts_when_the_tests_call_the_programs_functions(
    sandbox_pool: SandboxPool,
) -> None:
    """The exception is narrow: next to a function of the program, `sorted` is Python's."""
    [check] = await _judge(
        sandbox_pool,
        ["def sorted(x):\n    return [1, 2, 3]\ndef f(x):\n    return [9]\n"],
        _asserts("assert sorted(f(1)) == [1, 2, 3]"),
    )
    assert (check.details["verdict"], check.score) == ("wrong_answer", 0.0)


# ---- 3. the truth value of built-in objects -------------------------------------------------------

TEXT_MATCH = (
    "assert text_match('abbb')\nassert not text_match('ac')\nassert bool(text_match('ab'))\n"
    "assert text_match('xab') and text_match('abx')\nassert any([text_match('q'), text_match('ab')])"
)


async def test_a_returned_re_match_is_judged_by_its_truth_value(sandbox_pool: SandboxPool) -> None:
    honest, fake = await _judge(
        sandbox_pool,
        [
            "import re\ndef text_match(text):\n    return re.search('ab+', text)\n",
            # A class of the program: its __bool__ is never called, nor trusted.
            "class Yes:\n    def __bool__(self):\n        return True\n    def __len__(self):\n        return 1\n"
            "def text_match(text):\n    return Yes()\n",
        ],
        _asserts(TEXT_MATCH),
    )
    assert (honest.details["verdict"], honest.score, honest.details["passed"]) == ("accepted", 1.0, 5)
    assert (fake.details["verdict"], fake.details["passed"]) == ("wrong_answer", 0)


async def test_other_builtin_objects_have_their_native_truth_value(sandbox_pool: SandboxPool) -> None:
    tests = (
        "assert not empty()\nassert full()\nassert not zero()\nassert pattern()\nassert function()\n"
        "assert not proxied()"
    )
    program = (
        "import collections, decimal, re, weakref\n"
        "def empty():\n    return collections.deque()\n"
        "def full():\n    return collections.deque([0])\n"
        "def zero():\n    return decimal.Decimal(0)\n"
        "def pattern():\n    return re.compile('a')\n"
        "def function():\n    return len\n"
        "class Falsy:\n    def __bool__(self):\n        return False\n"
        "kept = Falsy()\n"
        "def proxied():\n    return weakref.proxy(kept)\n"
    )
    [check] = await _judge(sandbox_pool, [program], _asserts(tests), reward="fraction")
    # A weakref proxy would ask the program's __bool__: it stays opaque (the last test fails).
    assert [t["verdict"] for t in check.details["tests"]] == ["accepted"] * 5 + ["wrong_answer"]
    assert "truth value is not trusted" in (_reasons(check)[-1] or "")


# ---- 4. trivially true asserts are no test --------------------------------------------------------


async def test_assert_true_lines_earn_nothing(sandbox_pool: SandboxPool) -> None:
    """HumanEval's `assert True` debug lines: a `return None` program used to earn 2/3."""
    tests = (
        "assert True, 'This prints if this assert fails 1 (good for debugging!)'\n"
        "assert add(1, 2) == 3\nassert 1 + 1 == 2\nassert len([1, 2]) == 2\n"
        "assert True, 'This prints if this assert fails 2 (also good for debugging!)'\nassert add(2, 2) == 4"
    )
    lazy, honest = await _judge(
        sandbox_pool,
        ["def add(a, b):\n    return None\n", "def add(a, b):\n    return a + b\n"],
        _asserts(tests),
        reward="fraction",
    )
    assert (lazy.score, lazy.details["passed"], lazy.details["total"]) == (0.0, 0, 2)
    assert (honest.score, honest.details["passed"], honest.details["total"]) == (1.0, 2, 2)
    assert lazy.details["not_counted"]["lines"] == [1, 3, 4, 5]
    assert len(lazy.details["tests"]) == 2


# ---- 5. the output cap, per reference ----------------------------------------------------------------

BIG = 1_500_000  # bytes of output: over the 1 MiB default, as in the 1.4-2 MB cases


def _big_output_reference(**extra: Any) -> dict[str, Any]:
    lines = "\n".join("x" * 99 for _ in range(BIG // 100)) + "\n"
    return {"language": "python", "tests": [{"input": "", "output": lines}], **extra}


BIG_PROGRAM = f"import sys\nsys.stdout.write(('x' * 99 + '\\n') * {BIG // 100})\n"


async def test_a_reference_can_raise_its_own_output_cap(sandbox_pool: SandboxPool) -> None:
    [check] = await _judge(sandbox_pool, [BIG_PROGRAM], _big_output_reference(output_limit_bytes=2 << 20))
    assert (check.details["verdict"], check.score) == ("accepted", 1.0)
    [check] = await _judge(sandbox_pool, [BIG_PROGRAM], _big_output_reference(), output_limit_bytes=2 << 20)
    assert (check.details["verdict"], check.score) == ("accepted", 1.0)
    # The reference's own cap wins over the options': this program prints too much for it.
    chatty = "print('ok')\nprint('x' * 5000)\n"
    reference = {"language": "python", "tests": [{"input": "", "output": "ok\n"}], "output_limit_bytes": 4096}
    [check] = await _judge(sandbox_pool, [chatty], reference, output_limit_bytes=1 << 20)
    assert check.details["verdict"] == "output_limit_exceeded"


# ---- 6. all tests pass, or nothing ------------------------------------------------------------------


async def test_the_default_reward_is_all_tests_pass(sandbox_pool: SandboxPool) -> None:
    reference = {
        "language": "python",
        "tests": [{"input": "1\n", "output": "1\n"}, {"input": "2\n", "output": "4\n"}],
    }
    program = "n = int(input())\nprint(n)\n"
    [default] = await _judge(sandbox_pool, [program], reference)
    [fraction] = await _judge(sandbox_pool, [program], reference, reward="fraction")
    assert (default.score, fraction.score) == (0.0, 0.5)
    for check in (default, fraction):  # details count the tests either way
        assert (check.details["verdict"], check.details["passed"], check.details["total"]) == (
            "wrong_answer",
            1,
            2,
        )
    [correct] = await _judge(sandbox_pool, ["print(int(input()) ** 2)\n"], reference)
    assert correct.score == 1.0
