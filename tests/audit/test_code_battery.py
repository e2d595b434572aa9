"""The `code` probe battery in the real sandbox: every attack scores 0, every control 1."""

from __future__ import annotations

import pytest

from referee.audit import ScoreGroups, battery
from referee.models import GroupSpec

pytestmark = pytest.mark.docker


async def test_code_battery_passes(code_scoring: ScoreGroups) -> None:
    probes = battery("code")
    results = await code_scoring(
        [
            GroupSpec(verifier="code", reference=p.reference, responses=[p.response], options=p.options)
            for p in probes
        ]
    )
    verdicts = [r.verdicts[0] for r in results]
    failed = [
        (p.name, v.score, v.status.value, v.reason)
        for p, v in zip(probes, verdicts, strict=True)
        if not p.passes(v.status.value, v.score)
    ]
    assert not failed, failed
    by_name = {p.name: v for p, v in zip(probes, verdicts, strict=True)}
    assert by_name["tester_forged_pass_fd4"].details["verdict"] == "wrong_answer"
    assert by_name["stdio_exit_before_work"].details["passed"] == 0
    assert sum(p.control for p in probes) == 4 and len(probes) >= 25
