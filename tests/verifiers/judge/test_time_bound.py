"""A judge verdict's time is bounded by its endpoint's settings, not by an engine budget.

Every await of a judge verifier ends by the transport's own deadlines (`timeout_s` per
attempt, `retries`, capped pauses), so the verifiers declare `bounds_itself` and the engine
sets them no budget: a slow endpoint is an error verdict that says "timeout" and names the
endpoint, never the engine's generic "exceeded its budget", however the budget is sized.
"""

from __future__ import annotations

from typing import Any, ClassVar

from referee.models import ScoreRequest, VerdictStatus
from referee.verifiers.judge import JudgeEquivalenceVerifier
from tests.scoring.judged import VerdictServer, judged_scorer


class TightJudge(JudgeEquivalenceVerifier):
    """judge_equivalence with a budget far below its endpoint's time bound."""

    name: ClassVar[str] = "test.tight_judge"
    time_budget_s: ClassVar[float | None] = 0.05
    example: ClassVar[dict[str, Any]] = {}


async def test_a_slow_endpoint_is_a_timeout_verdict_not_a_budget_error() -> None:
    slow = {"url": "", "timeout_s": 0.3, "retries": 1}
    with VerdictServer() as server:
        async with judged_scorer({"default": {**slow, "url": server.url("hang")}}, [TightJudge]) as judged:
            items = [
                ScoreRequest(verifier="judge_equivalence", response="\\boxed{42}", reference="42"),
                ScoreRequest(verifier="test.tight_judge", response="So \\boxed{42}", reference="42"),
                ScoreRequest(
                    verifier="math",
                    response="\\boxed{\\mathcal{Q}}",
                    reference="42",
                    options={"fallback": "judge"},
                ),
            ]
            verdicts = await judged.scorer.score_items(items)
    for verdict in verdicts:
        assert verdict.status is VerdictStatus.error and verdict.score is None, verdict
        reason = verdict.reason or ""
        assert "judge endpoint 'default' failed (timeout)" in reason, reason
        assert "no reply within 0.3 s (after 2 attempt(s))" in reason and "budget" not in reason
        assert verdict.duration_ms >= 600  # both attempts were waited for
    assert server.hits["hang"] == 4  # two prompts (both 42s are one, in flight once), two attempts each
