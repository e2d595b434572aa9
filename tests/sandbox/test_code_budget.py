"""A code verdict is decided by the per-test limits, never by an overall budget that also
counts queueing: the engine sets none for the sandbox (issue 11, part 3)."""

from __future__ import annotations

import pytest

from referee.models import AdvantageConfig, GroupSpec, VerdictStatus
from referee.runtime import Runtime
from referee.sandbox import SandboxPool
from referee.verifiers.code import CodeVerifier
from tests.conftest import make_settings

pytestmark = pytest.mark.docker

SLOW_BUT_CORRECT = "import time\ntime.sleep(0.25)\na, b = map(int, input().split())\nprint(a + b)\n"


async def test_a_long_test_set_is_judged_whatever_the_verdict_budget(
    one_container: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CodeVerifier, "time_budget_s", 0.5)  # would mask the verdict if applied
    # 8 tests x 0.25 s, and a second program queued behind the first for the only container:
    # far beyond a 0.5-s per-verdict budget, yet every test is within its own 2-s limit.
    # Built, not started: `code` needs the sandbox (the test's), not the worker pool.
    scorer = Runtime(make_settings(workers=1, verdict_timeout_s=0.5), sandbox=one_container).scorer
    tests = [{"input": f"{i} 1\n", "output": f"{i + 1}\n"} for i in range(8)]
    group = GroupSpec(
        verifier="code", reference={"language": "python", "tests": tests}, responses=[SLOW_BUT_CORRECT] * 2
    )
    [result] = await scorer.score_groups([group], AdvantageConfig())
    assert [v.status for v in result.verdicts] == [VerdictStatus.ok] * 2, result.verdicts[0].reason
    assert result.rewards == [1.0, 1.0]
