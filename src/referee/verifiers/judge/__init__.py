"""Model-graded rewards: `judge_equivalence`, `judge_rubric`, `judge_label`, `judge_pairwise`
(docs/judges.md).

The verifiers build fenced prompts from versioned templates, flag judge-directed injections in
the response, send a group's calls through the service's judge endpoints (`referee.judges`)
and parse the replies strictly: a reply without a verdict is an error verdict, never a 0.

Judge types registered through the API (`referee.registered.judge`) are these verifiers with
everything pinned: they use the pieces exported below.
"""

from referee.verifiers.base import Verifier
from referee.verifiers.judge.options import (
    DEFAULT_LABELS,
    Criterion,
    JudgeOptions,
    LabelOptions,
    PairwiseOptions,
    PairwiseReference,
    RubricReference,
    SamplingOptions,
)
from referee.verifiers.judge.pairwise import JudgePairwiseVerifier
from referee.verifiers.judge.templates import TEMPLATES, OutputFormat, Template
from referee.verifiers.judge.verifiers import VERIFIERS as _FLOW_VERIFIERS
from referee.verifiers.judge.verifiers import (
    JudgeEquivalenceVerifier,
    JudgeLabelVerifier,
    JudgeRubricVerifier,
    JudgeVerifier,
    Prepared,
)

VERIFIERS: list[type[Verifier]] = [*_FLOW_VERIFIERS, JudgePairwiseVerifier]

__all__ = [
    "DEFAULT_LABELS",
    "TEMPLATES",
    "VERIFIERS",
    "Criterion",
    "JudgeEquivalenceVerifier",
    "JudgeLabelVerifier",
    "JudgeOptions",
    "JudgePairwiseVerifier",
    "JudgeRubricVerifier",
    "JudgeVerifier",
    "LabelOptions",
    "OutputFormat",
    "PairwiseOptions",
    "PairwiseReference",
    "Prepared",
    "RubricReference",
    "SamplingOptions",
    "Template",
]
