"""Model-graded rewards: `judge_equivalence`, `judge_rubric`, `judge_label` (docs/judges.md).

The verifiers build fenced prompts from versioned templates, flag judge-directed injections in
the response, send a group's calls through the service's judge endpoints (`referee.judges`)
and parse the replies strictly: a reply without a verdict is an error verdict, never a 0.

Judge types registered through the API (`referee.registered.judge`) are these verifiers with
everything pinned: they use the pieces exported below.
"""

from referee.verifiers.judge.options import (
    DEFAULT_LABELS,
    Criterion,
    JudgeOptions,
    LabelOptions,
    RubricReference,
    SamplingOptions,
)
from referee.verifiers.judge.templates import TEMPLATES, OutputFormat, Template
from referee.verifiers.judge.verifiers import (
    VERIFIERS,
    JudgeEquivalenceVerifier,
    JudgeLabelVerifier,
    JudgeRubricVerifier,
    JudgeVerifier,
    Prepared,
)

__all__ = [
    "DEFAULT_LABELS",
    "TEMPLATES",
    "VERIFIERS",
    "Criterion",
    "JudgeEquivalenceVerifier",
    "JudgeLabelVerifier",
    "JudgeOptions",
    "JudgeRubricVerifier",
    "JudgeVerifier",
    "LabelOptions",
    "OutputFormat",
    "Prepared",
    "RubricReference",
    "SamplingOptions",
    "Template",
]
