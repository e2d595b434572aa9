"""OpenRLHF's remote reward protocol (``--reward.remote_url``), served at ``POST /v1/openrlhf/reward``.

OpenRLHF (0.11) POSTs ``{"query": [...], "prompts": [...], "labels": [...]}`` (one entry per
sample; `query` is prompt + response decoded as one string, special tokens kept) and reads
``{"rewards": [...], "scores": [...], "extra_logs": {...}}``. This is a wire protocol of the
service (OpenRLHF speaks HTTP, not our client), so it lives here and scores in process.

Label encoding (``--data.label_key`` names the dataset column OpenRLHF sends as `labels`):
- a JSON object string ``{"verifier": "math", "reference": "\\frac{1}{2}", "options": {...}}``
  (`options` optional; `verifier` may also be a list of weighted components), or
- any other value: the reference itself, judged by the default verifier given as the query
  parameter ``?verifier=NAME`` (``exact`` if absent). "42" stays the string "42";
- no label (`labels` omitted, or ``null`` / ``""``, which OpenRLHF sends for every sample when
  ``--data.label_key`` is not set): ``?verifier=`` with no reference, which a reference-free
  verifier (``format.*``) judges and any other refuses as sent wrong, saying so.

The response is the part of `query` after its prompt (the whole query when it does not start
with its prompt). OpenRLHF decodes without skipping special tokens, so the end-of-sequence text
is still attached (``<|im_end|>``, ``<|endoftext|>``, ``</s>``, ``<eos>``, ``<|eot_id|>``, ...
and padding): by default every trailing marker in `EOS_MARKERS` is stripped (``?strip_eos=false``
keeps the text as sent). A multi-turn episode (ChatML or Llama 3 turns; an agent of
``--train.agent_func_path`` that posts its episode here) is judged on its last assistant turn;
``?turns=all`` joins every assistant turn, ``?turns=k`` takes the k-th (`response_turns`,
`referee.turns`). OpenRLHF cannot mask a sample, so `openrlhf_rewards` gives one without a
verdict (`status: "error"`) reward `error_reward` (0.0) and counts it in
``extra_logs["referee_error"]`` (per-sample 0/1 lists); the route then refuses such a batch with
503 unless ``?on_error=zero``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from referee.grouping import (
    Sample,
    VerifierSpec,
    component_scores,
    group_samples,
    prompt_fingerprint,
    scatter_verdicts,
)
from referee.models import (
    GroupResult,
    GroupSpec,
    JSONObject,
    OpenRLHFRequest,
    OpenRLHFResponse,
    Verdict,
    VerdictStatus,
    VerifierComponent,
)
from referee.service.json_body import parse_json
from referee.turns import Turns, assistant_turn_spans, pick_turns

ScoreGroups = Callable[[list[GroupSpec]], Awaitable[list[GroupResult]]]

# End-of-sequence and padding text of the common chat templates: ChatML/Qwen, GPT-2/Qwen padding,
# Llama 2/Mistral, Gemma, Llama 3 (end of turn, end of text, end of message), Phi-3, DeepSeek.
EOS_MARKERS = (
    "<|im_end|>",
    "<|endoftext|>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "<|end|>",
    "<｜end▁of▁sentence｜>",
    "<pad>",
)


LABEL_FIELDS = frozenset({"verifier", "reference", "options"})


def decode_label(label: Any, default_verifier: str) -> tuple[VerifierSpec, Any, JSONObject]:
    """(verifier, reference, options) from one label; see the module docstring for the encoding.
    Raises ValueError for a label that names a verifier but cannot be used as sent."""
    if is_missing(label):
        return default_verifier, None, {}
    parsed: Any = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = json.loads(label)
        except ValueError:
            parsed = label  # not JSON: the reference itself
        if isinstance(parsed, dict) and "verifier" in parsed:
            try:  # a label object is held to the rules of a body: no key twice, no NaN
                parse_json(label.encode())
            except ValueError as exc:
                raise ValueError(f"the label object is refused: {getattr(exc, 'msg', exc)}") from None
    if isinstance(parsed, dict) and "verifier" in parsed:
        # A field the encoding does not have (`weight`, a misspelt `refrence`) would otherwise
        # be dropped without a word, and the sample judged on something else than meant.
        unknown = sorted(set(parsed) - LABEL_FIELDS)
        if unknown:
            raise ValueError(
                f"unknown field {unknown[0][:80]!r} in the label (a label object has "
                f"{', '.join(sorted(LABEL_FIELDS))}; weights belong to the verifier's components)"
            )
        spec, options = parsed["verifier"], parsed.get("options")
        if not isinstance(options, dict | None):
            raise ValueError("`options` must be an object")
        verifier: VerifierSpec
        if isinstance(spec, list):
            verifier = [_component(index, c) for index, c in enumerate(spec)]
        elif isinstance(spec, str):
            verifier = spec
        else:
            raise ValueError("`verifier` must be a name or a list of weighted components")
        return verifier, parsed.get("reference"), dict(options or {})
    return default_verifier, label, {}


def _component(index: int, component: Any) -> VerifierComponent:
    try:
        return VerifierComponent.model_validate(component)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the component"
        raise ValueError(f"invalid verifier component {index} ({where}): {error['msg']}") from None


def is_missing(label: Any) -> bool:
    """No label: OpenRLHF sends "" for every sample when `--data.label_key` is not set."""
    return label is None or label == ""


def strip_trailing_eos(text: str) -> str:
    """`text` without the end-of-sequence/padding markers (and the whitespace between them) at
    its end; unchanged if it ends with none. Linear: a long tail of padding is one pass."""
    end = len(text)
    while True:
        cut = end
        while cut > 0 and text[cut - 1].isspace():
            cut -= 1
        marker = next((m for m in EOS_MARKERS if text.endswith(m, 0, cut)), None)
        if marker is None:
            return text[:end]
        end = cut - len(marker)


def response_turns(query: str, prompt: str | None) -> list[str]:
    """The assistant turns of the response part of `query` (an agent loop's episode may hold
    several; plain text is one).

    OpenRLHF's query is the decoded prompt + response. With a chat template the prompt ends
    with the assistant header of the turn the policy then writes (`add_generation_prompt`),
    so the response's first turn carries no marker of its own: turns are found in the whole
    query and kept where they lie in the response (clipped to it), so the first one counts
    and the conversation history in the prompt does not. A query that does not start with its
    prompt (OpenRLHF cut a prompt longer than its budget from the left) is judged whole."""
    start = len(prompt) if prompt and query.startswith(prompt) else 0
    turns = [query[max(a, start) : b] for a, b in assistant_turn_spans(query) if b >= start]
    return turns or [query[start:]]


def _response_text(query: str, prompt: str | None, strip_eos: bool, turns: Turns) -> str:
    text = pick_turns(response_turns(query, prompt), turns)
    return strip_trailing_eos(text) if strip_eos else text


def _invalid_label(message: str) -> Verdict:
    return Verdict(
        score=None,
        status=VerdictStatus.error,
        verifier="?",
        reason=f"invalid input: {message}"[:1000],
        details={"invalid": {"label": message[:1000]}},
    )


def is_invalid(verdict: Verdict) -> bool:
    """True for a verdict that says the sample was sent wrong (a client mistake, never retried
    away) rather than that no verdict could be reached now."""
    return verdict.status is VerdictStatus.error and "invalid" in verdict.details


async def openrlhf_verdicts(
    payload: OpenRLHFRequest,
    score_groups: ScoreGroups,
    *,
    default_verifier: str = "exact",
    strip_eos: bool = True,
    turns: Turns = "last",
) -> list[Verdict]:
    """One verdict per sample, in order, from one grouped scoring pass (`score_groups` may
    chunk it). A label that cannot be used gets an error verdict saying why (`is_invalid`)."""
    n = len(payload.query)
    prompts: list[str | None] = list(payload.prompts) if payload.prompts is not None else [None] * n
    labels = payload.labels if payload.labels is not None else [None] * n
    samples: list[Sample] = []
    verdicts: list[Verdict | None] = []
    for query, prompt, label in zip(payload.query, prompts, labels, strict=True):
        response = _response_text(query, prompt, strip_eos, turns)
        try:
            verifier, reference, options = decode_label(label, default_verifier)
            # The sample as a group of its own: whatever a group may not be is refused here.
            GroupSpec(verifier=verifier, reference=reference, responses=[response], options=options)
        except ValidationError as exc:
            verdicts.append(_invalid_label("; ".join(e["msg"] for e in exc.errors())))
            continue
        except ValueError as exc:
            verdicts.append(_invalid_label(str(exc)))
            continue
        verdicts.append(None)
        samples.append(
            Sample(
                response=response,
                reference=reference,
                verifier=verifier,
                options=options,
                key=prompt,
                # OpenRLHF sends prompts, not ids: per-prompt statistics key on their digest.
                prompt_id=prompt_fingerprint(prompt) if prompt is not None else None,
            )
        )
    specs, where = group_samples(samples)
    scored = iter(scatter_verdicts(await score_groups(specs), where) if specs else [])
    done = [verdict if verdict is not None else next(scored) for verdict in verdicts]
    done = [
        _needs_a_label(v, default_verifier) if is_missing(label) and is_invalid(v) else v
        for v, label in zip(done, labels, strict=True)
    ]
    return [_with_every_component(v, _component_names(label)) for v, label in zip(done, labels, strict=True)]


def _needs_a_label(verdict: Verdict, verifier: str) -> Verdict:
    """The refusal of a sample without a label, saying what is missing and where it comes from."""
    why = (verdict.reason or "").removeprefix("invalid input: ")
    return _invalid_label(
        f"no label, and `{verifier}` needs a reference ({why}): send `labels` "
        "(OpenRLHF: --data.label_key COLUMN) or a verifier that needs none (?verifier=format.think_answer)"
    )


def _component_names(label: Any) -> list[str]:
    """The weighted components a label names, read leniently (also from a label that cannot be
    used otherwise): OpenRLHF batches samples whose extra_logs must all have the same keys."""
    parsed = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = json.loads(label)
        except ValueError:
            return []
    spec = parsed.get("verifier") if isinstance(parsed, dict) else None
    if not isinstance(spec, list):
        return []
    names = [c.get("name") for c in spec if isinstance(c, dict)]
    return [name.split("@")[0] for name in names if isinstance(name, str) and name]


def _with_every_component(verdict: Verdict, names: list[str]) -> Verdict:
    """The verdict with an entry (no score) for each of `names` it does not report, so that a
    sample without a verdict still has every referee/<component> key in extra_logs."""
    parts = list(verdict.details.get("components") or []) if verdict.details else []
    have = {str(p.get("verifier", "")).split("@")[0] for p in parts if isinstance(p, dict)}
    missing = [name for name in dict.fromkeys(names) if name not in have]
    if not missing:
        return verdict
    stubs = [{"verifier": name, "status": "error", "score": None} for name in missing]
    return verdict.model_copy(update={"details": {**(verdict.details or {}), "components": parts + stubs}})


def openrlhf_response(verdicts: list[Verdict], error_reward: float = 0.0) -> OpenRLHFResponse:
    """OpenRLHF's answer: a number for every sample (`error_reward` where there is no verdict,
    flagged in `extra_logs.referee_error`) and each weighted component's scores."""
    rewards, errors = [], []
    for verdict in verdicts:
        ok = verdict.status is VerdictStatus.ok and verdict.score is not None
        rewards.append(float(verdict.score) if ok and verdict.score is not None else error_reward)
        errors.append(0.0 if ok else 1.0)
    extra_logs = {"referee_error": errors}
    # Each weighted component's per-sample score (OpenRLHF logs the mean of every extra_logs
    # list; numbers only: a component without a score counts as error_reward, flagged above).
    for name, scores in component_scores(verdicts).items():
        extra_logs[f"referee/{name}"] = [float(s) if s is not None else error_reward for s in scores]
    return OpenRLHFResponse(rewards=rewards, scores=list(rewards), extra_logs=extra_logs)


async def openrlhf_rewards(
    payload: OpenRLHFRequest,
    score_groups: ScoreGroups,
    *,
    default_verifier: str = "exact",
    error_reward: float = 0.0,
    strip_eos: bool = True,
    turns: Turns = "last",
) -> OpenRLHFResponse:
    """Score one OpenRLHF batch with one grouped scoring pass (`score_groups` may chunk it)."""
    verdicts = await openrlhf_verdicts(
        payload, score_groups, default_verifier=default_verifier, strip_eos=strip_eos, turns=turns
    )
    return openrlhf_response(verdicts, error_reward)
