"""`judge_equivalence`, `judge_rubric`, `judge_label`: rewards graded by a language model.

Each runs in the service's event loop (lane "io") and asks the service's judge endpoints
(`Resources.judges`, named in REFEREE_JUDGE_ENDPOINTS; a request names an endpoint, never a
URL). Per response: the part to judge is picked (`extract`), long texts are cut in the middle,
judge-directed injections are flagged (defences.py), the response is fenced into a built-in
template (templates.py), and the group's calls go out together through the verdict cache
(calls.py). The judge's last line is parsed strictly (parsers.py).

What is never a 0 or a 1: no endpoint configured, an unknown endpoint, a failed call
(timeout, refusal, open breaker...), a reply with no parseable verdict. Those are error
verdicts (score null, masked in training): they say nothing about the response. Their details
say why (`judge_error`: the failure's kind, `unparseable`, `no_endpoint`, `unknown_endpoint`),
where (endpoint, model, template) and what an unparseable reply cost (its tokens). An empty
response, or one whose thinking never ends, is a 0 without a call, as for every verifier.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel

from referee.judges import ChatReply, ChatRequest, Message
from referee.verifiers.base import AsyncVerifier, Check, Resources, Verifier, VerifierError
from referee.verifiers.judge.calls import Answer, Ask, ask_all, cache_key
from referee.verifiers.judge.defences import screen
from referee.verifiers.judge.options import (
    DEFAULT_LABELS,
    Criterion,
    EquivalenceOptions,
    JudgeOptions,
    LabelOptions,
    LabelReference,
    RubricOptions,
    RubricReference,
)
from referee.verifiers.judge.parsers import Parsed, parse_choice, parse_score
from referee.verifiers.judge.templates import TEMPLATES, OutputFormat, Template
from referee.verifiers.short_answer import select_answer

CRITERION_SHOWN = 200


@dataclass(frozen=True, slots=True)
class Prepared:
    template: Template
    output: OutputFormat
    reference: str | None
    criteria: tuple[Criterion | None, ...]  # (None,): one call per response, no criterion
    labels: tuple[str, ...] = ()


def spent(answers: Sequence[Answer]) -> dict[str, Any]:
    """What a verdict of several calls cost in all: tokens, and how many the cache answered."""
    return {
        "tokens": {
            "prompt": sum(a.prompt_tokens for a in answers),
            "completion": sum(a.completion_tokens for a in answers),
        },
        "cached": sum(a.cached for a in answers),
    }


class CallTags(NamedTuple):
    """The calls of a response judged in several: the details' list of them (`key`), each
    call's own fields there (`each`), its name in a reason, and what marks the failed one."""

    key: str
    each: list[dict[str, Any]]
    names: list[str]
    marks: list[dict[str, Any]]


def _cut(text: str, limit: int) -> tuple[str, int]:
    """`text` with its middle replaced by a marker when longer than `limit`; chars cut."""
    if len(text) <= limit:
        return text, 0
    keep = limit // 2
    cut = len(text) - 2 * keep
    return f"{text[:keep]}\n[... {cut} characters cut by the service ...]\n{text[-keep:]}", cut


def structured_reference(reference: Any, model: type[BaseModel], needs: str | None = None) -> Any | None:
    """`model` read from JSON text of an object with only its fields (`needs` among them), as
    verl's datasets store structured references; None for any other reference (a gold answer
    that merely reads like JSON stays a string)."""
    if not (isinstance(reference, str) and reference.lstrip().startswith("{")):
        return None
    try:
        decoded = json.loads(reference)
    except ValueError:
        return None
    if not isinstance(decoded, dict) or not decoded or not decoded.keys() <= set(model.model_fields):
        return None
    return model.model_validate(decoded) if needs is None or needs in decoded else None


def _parser(output: OutputFormat) -> Callable[[ChatReply], Parsed]:
    def parse(reply: ChatReply) -> Parsed:
        if output.choices is not None:
            return parse_choice(reply.text, output.key, output.choices, reply.finish_reason)
        return parse_score(reply.text, output.key, output.low, output.high, reply.finish_reason)

    return parse


class JudgeVerifier(AsyncVerifier):
    """The flow the three share; subclasses prepare the reference and combine the answers."""

    version: ClassVar[str] = "1"
    # No engine budget: every await ends by the transport's own deadlines, sized by the
    # endpoint's settings (each attempt within `timeout_s`, at most `retries` more after capped
    # pauses; a slot waited for is freed by calls bounded the same way, and an open breaker
    # fails queued calls at once). A fixed budget would cut a slow endpoint's last attempt and
    # say "budget" where the transport would say "timeout", or cut a group queued behind
    # `max_concurrency` though every call of it would have been answered.
    bounds_itself: ClassVar[bool] = True

    def combine(self, answers: Sequence[Answer], prepared: Prepared) -> Check | VerifierError:
        raise NotImplementedError

    def calls(self, text: str, prep: Prepared) -> list[tuple[tuple[Message, ...], dict[str, Any]]]:
        """The judge calls one (screened) response needs, in order: each one's messages and the
        parts of its cache key besides the model, template and sampling. One per criterion."""
        out = []
        for criterion in prep.criteria:
            shown = criterion.criterion if criterion else None
            messages = prep.template.render(
                text, reference=prep.reference, criterion=shown, labels=prep.labels
            )
            parts = {
                "response": text,
                "reference": prep.reference,
                "criterion": shown,
                "labels": list(prep.labels),
            }
            out.append((messages, parts))
        return out

    async def check_group(
        self, responses: Sequence[str], prepared: Any, options: Any, resources: Resources
    ) -> list[Check | VerifierError]:
        prep: Prepared = prepared
        opts = options if isinstance(options, JudgeOptions) else self.validate_options(options)
        assert isinstance(opts, JudgeOptions)
        judges = resources.judges
        asked = {"endpoint": opts.endpoint, "template": prep.template.qualified}
        if judges is None:
            raise VerifierError(
                "no judge endpoints are configured in this service (REFEREE_JUDGE_ENDPOINTS)",
                details={"judge_error": "no_endpoint", **asked},
            )
        configured = judges.endpoint_model(opts.endpoint)
        if configured is None:
            raise VerifierError(
                f"unknown judge endpoint {opts.endpoint!r}: none of that name is configured",
                details={"judge_error": "unknown_endpoint", **asked},
            )
        model = opts.model or configured
        sampling = opts.sampling.to_contract()
        parse = _parser(prep.output)

        results: list[Check | VerifierError | None] = []
        asks: list[Ask] = []
        owners: list[int] = []  # the response index of each ask
        notes: list[dict[str, Any]] = []
        for i, response in enumerate(responses):
            text = select_answer(response, opts.extract)
            notes.append({})
            if text is None or not text.strip():
                why = "no answer to judge: the <think> block never closes" if text is None else "empty answer"
                results.append(Check(0.0, reason=why, details={"judge_called": False}))
                continue
            text, cut = _cut(text, opts.max_response_chars)
            screened = screen(text)
            notes[i] = {**screened.details(), **({"chars_cut": cut} if cut else {})}
            results.append(None)
            for messages, parts in self.calls(screened.text, prep):
                # The endpoint too: two endpoints may serve different weights under one model
                # name (vLLM's --served-model-name), and must not answer for each other.
                key = cache_key(model, prep.template.qualified, sampling, endpoint=opts.endpoint, **parts)
                request = ChatRequest(opts.endpoint, messages, sampling, opts.model)
                asks.append(Ask(key, request, parse))
                owners.append(i)
        answers = await ask_all(judges, asks) if asks else []
        per_response: dict[int, list[Answer | VerifierError]] = {}
        for i, answer in zip(owners, answers, strict=True):
            per_response.setdefault(i, []).append(answer)
        out: list[Check | VerifierError] = []
        for i, result in enumerate(results):
            if result is not None:
                out.append(result)
                continue
            got = per_response[i]
            failed = next(((c, a) for c, a in enumerate(got) if isinstance(a, VerifierError)), None)
            if failed is not None:
                asked_here = {**asked, "judge_model": model, **notes[i]}
                out.append(self._failure(failed[0], failed[1], prep, got, asked_here))
                continue
            check = self.combine([a for a in got if isinstance(a, Answer)], prep)
            if isinstance(check, VerifierError):
                where = {**asked, "judge_model": model, **notes[i]}
                out.append(VerifierError(*check.args, details={**where, **check.details}))
                continue
            out.append(
                Check(
                    check.score,
                    check.reason,
                    {**check.details, "template": prep.template.qualified, **notes[i]},
                )
            )
        return out

    def call_tags(self, prep: Prepared) -> CallTags | None:
        """How the error verdict of a response judged in several calls names them (a rubric's
        criteria); None for one call."""
        criteria = [c for c in prep.criteria if c is not None]
        if not criteria:
            return None
        return CallTags(
            "criteria",
            [{"criterion": c.criterion[:CRITERION_SHOWN], "weight": c.weight} for c in criteria],
            [f"criterion {i + 1} ({c.criterion[:60]!r})" for i, c in enumerate(criteria)],
            [{"criterion": i + 1} for i in range(len(criteria))],
        )

    def _failure(
        self,
        index: int,
        error: VerifierError,
        prep: Prepared,
        got: Sequence[Answer | VerifierError],
        asked: dict[str, Any],
    ) -> VerifierError:
        """The error verdict of a response whose call `index` failed, with details: the kind
        (`judge_error`), endpoint, model, template, and what each call cost (a rubric's other
        criteria were answered, and an unparseable reply spent tokens too)."""
        tags = self.call_tags(prep)
        if tags is None:
            return VerifierError(*error.args, details={**asked, **error.details})
        calls = [
            tag | (a.details() if isinstance(a, Answer) else a.details)
            for tag, a in zip(tags.each, got, strict=True)
        ]
        head = {k: v for k, v in error.details.items() if k in ("judge_error", "attempts")}
        return VerifierError(
            f"{tags.names[index]}: {error}",
            details={**asked, **head, **tags.marks[index], tags.key: calls},
        )


class JudgeEquivalenceVerifier(JudgeVerifier):
    name: ClassVar[str] = "judge_equivalence"
    description: ClassVar[str] = (
        "A model judge decides whether the response's final answer is equivalent to the reference "
        "answer (free-form answers that rules cannot compare); score 1 or 0. No parseable verdict, "
        "or no judge endpoint, is an error verdict (masked), never a 0. Needs REFEREE_JUDGE_ENDPOINTS."
    )
    reference_type: ClassVar[Any] = str
    options_model: ClassVar[type[BaseModel]] = EquivalenceOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "The train covers 120 km in 1.5 hours, so its speed is \\boxed{80 \\text{ km/h}}.",
        "reference": "80 kilometres per hour",
        "options": {"endpoint": "default"},
        "expected_score": 1.0,
    }

    def prepare(self, reference: Any, options: Any) -> Prepared:
        template = TEMPLATES[options.template]
        assert template.output is not None
        return Prepared(template, template.output, str(reference), (None,))

    def combine(self, answers: Sequence[Answer], prepared: Prepared) -> Check:
        (answer,) = answers
        reason = None if answer.score == 1.0 else "the judge found the answer not equivalent to the reference"
        return Check(answer.score, reason, answer.details())


class JudgeRubricVerifier(JudgeVerifier):
    name: ClassVar[str] = "judge_rubric"
    description: ClassVar[str] = (
        "A model judge checks each criterion of a rubric separately (met or not, or a 0..10 score); "
        "score = the weighted mean. A criterion without a parseable verdict makes the verdict an "
        "error (masked), never a 0. Needs REFEREE_JUDGE_ENDPOINTS."
    )
    reference_type: ClassVar[Any] = RubricReference
    options_model: ClassVar[type[BaseModel]] = RubricOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "Photosynthesis turns light, water and carbon dioxide into glucose and oxygen.",
        "reference": {
            "criteria": [
                {"criterion": "Names light as the energy source.", "weight": 1.0},
                {"criterion": "Names glucose and oxygen as the products.", "weight": 2.0},
            ]
        },
        "options": {"endpoint": "default", "template": "rubric_yes_no"},
        "expected_score": 1.0,
    }

    def prepare(self, reference: Any, options: Any) -> Prepared:
        ref = (
            reference if isinstance(reference, RubricReference) else RubricReference.model_validate(reference)
        )
        template = TEMPLATES[options.template]
        assert template.output is not None
        return Prepared(template, template.output, ref.reference, tuple(ref.criteria))

    def combine(self, answers: Sequence[Answer], prepared: Prepared) -> Check:
        criteria = [c for c in prepared.criteria if c is not None]
        total = sum(c.weight for c in criteria)
        score = sum(c.weight * a.score for c, a in zip(criteria, answers, strict=True)) / total
        per_criterion = [
            {"criterion": c.criterion[:CRITERION_SHOWN], "weight": c.weight, "score": a.score, **a.details()}
            for c, a in zip(criteria, answers, strict=True)
        ]
        unmet = sum(a.score < 1.0 for a in answers)
        reason = None if not unmet else f"{unmet} of {len(answers)} criteria not fully met"
        return Check(
            min(1.0, max(0.0, score)),
            reason,
            {
                "criteria": per_criterion,
                **spent(answers),
            },
        )


class JudgeLabelVerifier(JudgeVerifier):
    name: ClassVar[str] = "judge_label"
    description: ClassVar[str] = (
        "A model judge gives the response one label of a fixed set (default: correct, "
        "partially_correct, incorrect), mapped to its score. A label outside the set, or no "
        "parseable label, is an error verdict (masked), never a 0. Needs REFEREE_JUDGE_ENDPOINTS."
    )
    reference_type: ClassVar[Any] = str | LabelReference
    options_model: ClassVar[type[BaseModel]] = LabelOptions
    example: ClassVar[dict[str, Any]] = {
        "response": "The French Revolution began in 1789 with the storming of the Bastille.",
        "reference": {
            "reference": "1789",
            "labels": {"correct": 1.0, "partially_correct": 0.5, "incorrect": 0.0},
        },
        "options": {"endpoint": "default"},
        "expected_score": 1.0,
    }

    @classmethod
    def validate_reference(cls, reference: Any) -> Any:
        """A `{"reference", "labels"}` object stored as JSON text is that object."""
        structured = structured_reference(reference, LabelReference)
        return structured if structured is not None else super().validate_reference(reference)

    def prepare(self, reference: Any, options: Any) -> Prepared:
        ref = reference if isinstance(reference, LabelReference) else LabelReference(reference=str(reference))
        labels = ref.labels or options.labels or DEFAULT_LABELS
        template = TEMPLATES[options.template]
        return Prepared(template, OutputFormat("LABEL", labels), ref.reference, (None,), tuple(labels))

    def combine(self, answers: Sequence[Answer], prepared: Prepared) -> Check:
        (answer,) = answers
        return Check(answer.score, f"judged {answer.value}", answer.details())


VERIFIERS: list[type[Verifier]] = [JudgeEquivalenceVerifier, JudgeRubricVerifier, JudgeLabelVerifier]
