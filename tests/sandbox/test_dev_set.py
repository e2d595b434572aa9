"""Every row of code_dev.jsonl reproduces its expected verdict and pass fraction (100%)."""

from __future__ import annotations

import asyncio

import pytest

from referee.verifiers import Resources
from referee.verifiers.base import Check
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.sandbox.helpers import load_code_rows

pytestmark = [pytest.mark.docker, pytest.mark.slow]

POLICY, ROWS = load_code_rows()


def test_policy_limits_are_the_defaults() -> None:
    from referee.sandbox.settings import SandboxSettings

    s = SandboxSettings()
    assert s.time_limit_s == POLICY["time_limit_s"]
    assert s.memory_limit_mb == POLICY["memory_limit_mb"]
    assert s.max_processes == POLICY["max_processes"]
    assert s.stdout_limit_bytes == POLICY["stdout_limit_bytes"]
    assert s.stderr_keep_bytes == POLICY["stderr_keep_bytes"]
    assert s.compile_timeout_s == POLICY["compile_timeout_s"]


async def test_every_dev_row_reproduces_its_label(sandbox_pool, escape_check) -> None:  # type: ignore[no-untyped-def]
    verifier = CodeVerifier()
    # The dev set labels pass fractions (its policy scores passed/total): asked for explicitly,
    # since the default reward is all-tests-pass.
    options = CodeOptions(reward="fraction")

    async def judge(row: dict) -> Check:  # type: ignore[type-arg]
        reference = verifier.validate_reference(
            {"language": row["language"], "test_format": row["test_format"], "tests": row["tests"]}
        )
        prepared = verifier.prepare(reference, options)
        [check] = await verifier.check_group(
            [row["candidate"]], prepared, options, Resources(sandbox=sandbox_pool)
        )
        assert isinstance(check, Check), check
        return check

    checks = await asyncio.gather(*(judge(row) for row in ROWS))
    wrong = [
        (row["id"], row["expected_verdict"], row["expected_pass_fraction"], c.details["verdict"], c.score)
        for row, c in zip(ROWS, checks, strict=True)
        if c.details["verdict"] != row["expected_verdict"]
        or abs(c.score - float(row["expected_pass_fraction"])) > 1e-3
    ]
    assert len(ROWS) == 73
    assert wrong == []
    # The categories the policy calls host-unsafe all ran, and in the sandbox.
    assert {row["category"] for row in ROWS} >= {"memory_bomb_in_function"}
