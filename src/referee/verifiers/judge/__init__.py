"""Model-graded rewards: `judge_equivalence`, `judge_rubric`, `judge_label` (docs/judges.md).

The verifiers build fenced prompts from versioned templates, flag judge-directed injections in
the response, send a group's calls through the service's judge endpoints (`referee.judges`)
and parse the replies strictly: a reply without a verdict is an error verdict, never a 0.
"""

from referee.verifiers.judge.verifiers import (
    VERIFIERS,
    JudgeEquivalenceVerifier,
    JudgeLabelVerifier,
    JudgeRubricVerifier,
)

__all__ = ["VERIFIERS", "JudgeEquivalenceVerifier", "JudgeLabelVerifier", "JudgeRubricVerifier"]
