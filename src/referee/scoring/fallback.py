"""A judge's second opinion on the answers `math` could not read (`options.fallback: "judge"`).

`math` compares answers by rules. An answer it cannot read (LaTeX outside its grammar, a value
in words, a relation it does not interpret) or compare (a gold that is not mathematics, which
only its spelling can match) is a 0 for want of a reading, not because it is wrong; the check
marks those `details.unreadable`. With `options.fallback: "judge"`, those responses and only
those go to `judge_equivalence` (options: `options.fallback_options`), the gold's text as its
reference, in one batch per group, and the judge's verdict replaces the 0. An answer that math
read and found different stays a 0 without a call, and so do missing answers, hedges and
denials: the judge is asked only where the rules have nothing to say.

The verdict stays math's (`math@N`: statistics and metrics count it as math's); its details
say `fallback: "judge"`, keep math's own (with its reason) under `math`, and carry the judge's
(`judge_verdict`, `tokens`, `cached`, ...). A judge that gives no verdict (a failed call, an
unparseable reply) makes the verdict an error, masked in training: never math's 0, since the
rules had already said that they did not know; its details carry the judge's error details
(`judge_error`, the endpoint, an unparseable reply's tokens) beside math's.

Math runs in worker processes and the judge in the event loop, so the engine joins them: it
plans the fallback with the job (a request asking for it on a service without judge endpoints
is refused whole, 422) and hands the flagged outcomes of the worker checks to the judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from referee.scoring.pool import TaskOutcome
from referee.verifiers import AsyncVerifier, Resources, UnknownVerifier, Verifier

JUDGE = "judge_equivalence"
FLAG = "unreadable"  # the details key a check sets on a 0 it reached for want of a reading


@dataclass(frozen=True, slots=True)
class Fallback:
    """The judge a job's unreadable answers go to, with its validated reference and options."""

    verifier: AsyncVerifier
    reference: str
    options: BaseModel

    @property
    def name(self) -> str:
        return self.verifier.qualified_name()


def gold_text(reference: Any) -> str:
    """The gold as the dataset wrote it: a string reference, or a reference object's `answer`
    (math's `{"answer": ..., "rounded_decimal_gold": ...}`)."""
    if isinstance(reference, str):
        return reference
    answer = getattr(reference, "answer", None)
    if isinstance(answer, str):
        return answer
    raw = reference.model_dump(mode="json") if isinstance(reference, BaseModel) else reference
    return json.dumps(raw, ensure_ascii=False, sort_keys=True)


def plan(
    options: Any, reference: Any, resources: Resources, resolve: Callable[[str], Verifier]
) -> Fallback | None:
    """The fallback `options` ask for, or None. Raises ValueError when the service cannot give
    it (no judge endpoints, an unknown one): the request is refused before any work."""
    if getattr(options, "fallback", None) != "judge":
        return None
    judges = resources.judges
    if judges is None:
        raise ValueError(
            'fallback "judge" needs the service\'s judge endpoints: REFEREE_JUDGE_ENDPOINTS is not configured'
        )
    try:
        verifier = resolve(JUDGE)
    except UnknownVerifier:
        raise ValueError(f'fallback "judge" needs the {JUDGE} verifier, which is not installed') from None
    if not isinstance(verifier, AsyncVerifier):
        raise ValueError(f"{JUDGE} is not a judge verifier here")
    given = getattr(options, "fallback_options", None)
    judge_options = verifier.validate_options(given.model_dump() if isinstance(given, BaseModel) else given)
    endpoint = getattr(judge_options, "endpoint", None)
    if not isinstance(endpoint, str) or judges.endpoint_model(endpoint) is None:
        raise ValueError(f"fallback_options.endpoint: no judge endpoint {endpoint!r} is configured")
    return Fallback(verifier, gold_text(reference), judge_options)


def flagged(outcomes: Sequence[TaskOutcome]) -> list[int]:
    """Indices of the checks that scored 0 for want of a reading."""
    return [i for i, o in enumerate(outcomes) if o.kind == "ok" and o.details.get(FLAG) is True]


def merged(own: TaskOutcome, judged: TaskOutcome, fallback: Fallback) -> TaskOutcome:
    """The verdict of a flagged check once the judge has spoken (or failed to)."""
    math = {"score": own.score, "reason": own.reason, **own.details}
    elapsed = own.elapsed_ms + judged.elapsed_ms
    head = f"{own.reason or 'unreadable answer'}; {fallback.name} (fallback)"
    if judged.kind != "ok" or judged.score is None:  # the judge's error details say why
        details = {**judged.details, "fallback": "judge", "math": math}
        return TaskOutcome("error", None, f"{head} failed: {judged.reason}"[:500], details, elapsed)
    verdict = "equivalent" if judged.score >= 1.0 else (judged.reason or "not equivalent")
    details = {**judged.details, "fallback": "judge", "math": math}
    return TaskOutcome("ok", judged.score, f"{head}: {verdict}", details, elapsed)
