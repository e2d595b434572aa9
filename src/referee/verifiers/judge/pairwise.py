"""`judge_pairwise`: a model judge compares the response with a baseline answer.

The reference is the baseline (a string), or `{"baseline", "criterion"}` where the criterion
says what makes an answer better (the task's question or instructions, a rubric line). The
judge sees both answers fenced as data (templates.PAIRWISE) and ends with `WINNER: A`,
`WINNER: B` or `WINNER: TIE`, parsed strictly as every judge verdict.

Judges favour a position (often the first answer), so each response is judged in both orders:
once as answer A, once as answer B. Both calls go through the same transport as every judge
call (one batch per group, the verdict cache, identical calls in flight sent once), each with
its own cache key. The two outcomes for the response (win 1, tie 0.5, loss 0) are combined:
when they agree, that is the score; when they disagree, the judge's preference was its
position, not the answers, and `options.inconsistent` decides: `tie` (0.5, the default),
`mean` (their mean: a win and a tie make 0.75) or `error` (an error verdict, masked). Either
call without a parseable verdict makes the verdict an error, never a 0 or a 1.

Not a registered judge family (registered/judge.py): a registered type pins a template whose
parser reads one verdict per call, and its activation gate (audit/probes.py's judge battery)
checks a right answer's full marks and a wrong answer's low score against the examples'
labels; a pairwise score is relative to a baseline pinned per request, so neither the custom
template check nor that gate carries over as it is (docs/judges.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from referee.judges import Message
from referee.verifiers.base import Check, Verifier, VerifierError
from referee.verifiers.judge.calls import Answer
from referee.verifiers.judge.options import PairwiseOptions, PairwiseReference
from referee.verifiers.judge.templates import NO_CRITERION, TEMPLATES
from referee.verifiers.judge.verifiers import (
    CallTags,
    JudgeVerifier,
    Prepared,
    spent,
    structured_reference,
)

# The two orders each response is judged in, by the response's position.
ORDERS = ("response_first", "baseline_first")
OUTCOMES = {1.0: "win", 0.5: "tie", 0.0: "loss"}


@dataclass(frozen=True, slots=True)
class _Pairwise(Prepared):
    """A pairwise verdict's preparation: the criterion shown, and the inconsistency policy."""

    question: str = NO_CRITERION
    inconsistent: str = "tie"


def _outcome(answer: Answer, order: str) -> float:
    """The response's outcome (1 win, 0.5 tie, 0 loss) from a verdict whose score says how A did."""
    return answer.score if order == "response_first" else 1.0 - answer.score


class JudgePairwiseVerifier(JudgeVerifier):
    name: ClassVar[str] = "judge_pairwise"
    description: ClassVar[str] = (
        "A model judge compares the response with a baseline answer (the reference, or "
        "reference.baseline; reference.criterion says what is better), in both orders against "
        "position bias: win 1, tie 0.5, loss 0; orders that disagree are a tie (options."
        "inconsistent: tie, mean, error). No parseable verdict is an error verdict (masked), never "
        "a 0. Needs REFEREE_JUDGE_ENDPOINTS."
    )
    reference_type: ClassVar[Any] = str | PairwiseReference
    options_model: ClassVar[type[BaseModel]] = PairwiseOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "Water boils at 100 °C at sea level; at altitude the lower pressure lowers it.",
        "reference": {
            "baseline": "Water boils at 100 degrees.",
            "criterion": "Explains at what temperature water boils, and why it can differ.",
        },
        "options": {"endpoint": "default"},
        "expected_score": 1.0,
    }

    @classmethod
    def validate_reference(cls, reference: Any) -> Any:
        """A `{"baseline", "criterion"}` object stored as JSON text is that object."""
        structured = structured_reference(reference, PairwiseReference, needs="baseline")
        return structured if structured is not None else super().validate_reference(reference)

    def prepare(self, reference: Any, options: Any) -> Prepared:
        ref = (
            reference
            if isinstance(reference, PairwiseReference)
            else PairwiseReference(baseline=str(reference))
        )
        template = TEMPLATES[options.template]
        assert template.output is not None
        # Two calls per response (the two orders), no rubric criterion: (None, None).
        return _Pairwise(
            template,
            template.output,
            ref.baseline,
            (None, None),
            question=ref.criterion or NO_CRITERION,
            inconsistent=options.inconsistent,
        )

    def calls(self, text: str, prep: Prepared) -> list[tuple[tuple[Message, ...], dict[str, Any]]]:
        assert isinstance(prep, _Pairwise) and prep.reference is not None
        baseline = prep.reference
        out = []
        for order in ORDERS:
            pair = (text, baseline) if order == "response_first" else (baseline, text)
            messages = prep.template.render(text, criterion=prep.question, pair=pair)
            parts = {"response": text, "reference": baseline, "criterion": prep.question, "order": order}
            out.append((messages, parts))
        return out

    def call_tags(self, prep: Prepared) -> CallTags:
        """Both orders' calls are reported when one fails (the other may have been answered)."""
        return CallTags(
            "orders",
            [{"order": order} for order in ORDERS],
            [order.replace("_", " ") for order in ORDERS],
            [{"order": order} for order in ORDERS],
        )

    def combine(self, answers: Sequence[Answer], prepared: Prepared) -> Check | VerifierError:
        assert isinstance(prepared, _Pairwise)
        outcomes = [_outcome(a, order) for a, order in zip(answers, ORDERS, strict=True)]
        orders = [
            {"order": order, "outcome": OUTCOMES.get(o, f"{o:g}"), **a.details()}
            for order, o, a in zip(ORDERS, outcomes, answers, strict=True)
        ]
        consistent = outcomes[0] == outcomes[1]
        details: dict[str, Any] = {
            "orders": orders,
            "consistent": consistent,
            **spent(answers),
        }
        said = " and ".join(f"{o['outcome']} ({o['order'].replace('_', ' ')})" for o in orders)
        if consistent:
            score = outcomes[0]
            reason = None if score == 1.0 else f"judged a {OUTCOMES[score]} against the baseline"
            return Check(score, reason, {**details, "judge_verdict": OUTCOMES[score]})
        if prepared.inconsistent == "error":
            return VerifierError(
                f"the judge's verdict depends on the answers' order: {said}",
                details={**details, "judge_error": "inconsistent"},
            )
        score = 0.5 if prepared.inconsistent == "tie" else sum(outcomes) / 2
        return Check(
            score,
            f"the two orders disagree ({said}): {prepared.inconsistent} {score:g}",
            {**details, "judge_verdict": "inconsistent"},
        )


VERIFIERS: list[type[Verifier]] = [JudgePairwiseVerifier]
