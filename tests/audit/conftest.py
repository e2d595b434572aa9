"""Fixtures of the audit tests: in-process scoring, with a sandbox pool for `code`.

The sandbox pool takes its settings from tests/sandbox/helpers.make_sandbox_settings, under an
instance label of its own: a pool removes its instance's containers when it starts, which must
never be those of another test run on the same engine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from referee.audit import ScoreGroups, in_process
from referee.sandbox.image import build_image
from referee.settings import Settings
from tests.sandbox.helpers import make_sandbox_settings, run_instance

AUDIT_INSTANCE = run_instance("pytest-audit")


@pytest.fixture(scope="session")
def audit_sandbox_image() -> str:
    return build_image(make_sandbox_settings(), log=lambda _msg: None)


@pytest.fixture
async def cpu_scoring() -> AsyncIterator[ScoreGroups]:
    async with in_process(Settings(workers=1, sandbox=False)) as score:
        yield score


@pytest.fixture
async def code_scoring(audit_sandbox_image: str) -> AsyncIterator[ScoreGroups]:
    settings = make_sandbox_settings(instance=AUDIT_INSTANCE, pool_size=2, max_parallel=2)
    async with in_process(Settings(workers=1, sandbox=settings)) as score:
        yield score
