"""Judge verifier types registered through the API: a model judge configured once, then pinned.

The spec (docs/registered.md): `family` (equivalence, rubric or label), `endpoint` (a name in
REFEREE_JUDGE_ENDPOINTS, never a URL), `model`, `template` (a built-in `name@version`, or the
text of a user message with `{{response}}`), `scale` (rubric: yes_no or score), `sampling`,
`labels` (label family), `criteria` (rubric family; omitted: each request's reference gives
them), `extract`, `max_response_chars`.

Registration pins it (`pin`): the template's text itself (system and user messages), the
model (the endpoint's, when none is named) and every default are written into the stored
spec (its keys sorted, as the store keeps them: the labels' order is the prompt's), so a stored version is built from its own text alone: `name@2` sends the same prompt to
the same model whatever the built-in templates or the endpoint's configuration become later,
and its verdict cache keys use `name@2` as the template version. Requests carry no options:
nothing a caller sends changes how a registered judge judges.

A custom template is only the user message: the family's built-in system message (which tells
the judge the fenced response is data) is kept, the response is still fenced and its
judge-directed injections flagged as for the built-ins, and the service appends the one line
its parser reads (`VERDICT: ...`, `SCORE: ...`, `LABEL: ...`), so the prompt and the parser
cannot disagree. The verifier classes are the built-in judge verifiers' (their flow, parsing,
cache and combination of criteria), with `prepare` reading the pinned spec.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from referee.registered.refschema import reference_type_for, registered_class
from referee.settings import JudgeSettings
from referee.verifiers import Extraction, NoOptions, judge

Family = Literal["equivalence", "rubric", "label"]
Scale = Literal["yes_no", "score"]
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_KNOWN = {"response", "reference", "criterion", "labels"}
# A custom template of each family must name these (what the family judges against).
_NEEDS = {
    "equivalence": {"response", "reference"},
    "rubric": {"response", "criterion"},
    "label": {"response"},
}
# The built-in template whose system message (and, named, its text) a family starts from.
_BASE = {"equivalence": "equivalence", "rubric": "rubric_yes_no", "label": "label"}
_YES_NO = "End your reply with exactly one of these lines:\nVERDICT: {yes}\nVERDICT: {no}"
# The line the parser reads, appended to a custom template (a built-in one already asks for it).
OUTPUT_LINES: dict[tuple[str, str | None], str] = {
    ("equivalence", None): _YES_NO.format(yes="EQUIVALENT", no="NOT_EQUIVALENT"),
    ("rubric", "yes_no"): _YES_NO.format(yes="MET", no="NOT_MET"),
    ("rubric", "score"): "End your reply with exactly one line:\nSCORE: <a whole number from 0 to 10>",
    ("label", None): "End your reply with exactly one line:\nLABEL: <one of: {{labels}}>",
}
MAX_TEMPLATE_CHARS = 20_000


class PinnedTemplate(BaseModel):
    """A template as stored: its text, and the built-in it came from (None: a custom one)."""

    model_config = ConfigDict(extra="forbid")
    builtin: str | None = Field(default=None, description="The built-in name@version, if any.")
    system: str = Field(max_length=MAX_TEMPLATE_CHARS)
    user: str = Field(max_length=2 * MAX_TEMPLATE_CHARS)


class JudgeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    family: Family
    endpoint: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    model: str | None = Field(default=None, min_length=1, max_length=200)
    template: str | PinnedTemplate | None = Field(
        default=None,
        description="A built-in `name@version` of the family, or a user message with {{response}}; "
        "omitted: the family's first built-in.",
    )
    scale: Scale | None = Field(default=None, description="Rubric only: yes_no (default) or score 0..10.")
    sampling: judge.SamplingOptions = Field(default_factory=judge.SamplingOptions)
    labels: dict[str, float] | None = Field(default=None, description="Label family: label -> score.")
    criteria: list[judge.Criterion] | None = Field(default=None, min_length=1, max_length=32)
    extract: Extraction | None = None
    max_response_chars: int = Field(default=20_000, ge=200, le=400_000)

    @field_validator("template")
    @classmethod
    def _template(cls, value: str | PinnedTemplate | None) -> str | PinnedTemplate | None:
        if isinstance(value, str) and len(value) > MAX_TEMPLATE_CHARS:
            raise ValueError(f"a template has at most {MAX_TEMPLATE_CHARS} characters")
        return value

    @model_validator(mode="after")
    def _family_fields(self) -> JudgeSpec:
        if self.labels is not None and self.family != "label":
            raise ValueError("`labels` belongs to the label family")
        if self.criteria is not None and self.family != "rubric":
            raise ValueError("`criteria` belongs to the rubric family")
        if self.scale is not None and self.family != "rubric":
            raise ValueError("`scale` belongs to the rubric family")
        if self.family == "label":  # validated as the built-in's options validate them
            self.labels = judge.LabelOptions(labels=self.labels or dict(judge.DEFAULT_LABELS)).labels
        return self


def _builtin(family: str, reference: str) -> judge.Template:
    name, _, version = reference.partition("@")
    template = judge.TEMPLATES.get(name)
    if template is None or template.kind != family or (version and version != template.version):
        known = ", ".join(t.qualified for t in judge.TEMPLATES.values() if t.kind == family)
        raise ValueError(
            f"template {reference!r} is neither a built-in template of the {family} family "
            f"({known}) nor a template text with {{{{response}}}}"
        )
    return template


def _custom(family: str, text: str, scale: str | None) -> str:
    found = set(_PLACEHOLDER.findall(text))
    unknown = sorted(found - _KNOWN)
    if unknown:
        raise ValueError(f"unknown placeholder(s) {unknown}; known: {sorted(_KNOWN)}")
    missing = sorted(_NEEDS[family] - found)
    if missing:
        named = ", ".join("{{" + m + "}}" for m in missing)
        raise ValueError(f"a {family} template must contain {named}")
    return f"{text.rstrip()}\n\n{OUTPUT_LINES[(family, scale)]}"


def pin(raw: dict[str, Any], settings: JudgeSettings) -> dict[str, Any]:
    """The spec as stored: validated (ValueError/ValidationError: a 422), the endpoint checked
    against the service's settings (UnknownEndpoint), the template's text and the model
    written in, defaults filled."""
    spec = JudgeSpec.model_validate(raw)
    endpoint = settings.endpoints.get(spec.endpoint)
    if endpoint is None:
        raise UnknownEndpoint(spec.endpoint, sorted(settings.endpoints))
    template = spec.template
    scale: str | None = spec.scale or ("yes_no" if spec.family == "rubric" else None)
    system = judge.TEMPLATES[_BASE[spec.family]].system
    if template is None or (isinstance(template, str) and not _PLACEHOLDER.search(template)):
        chosen = _builtin(spec.family, template or _BASE[spec.family])
        if spec.family == "rubric":
            implied = "score" if chosen.name == "rubric_score" else "yes_no"
            if spec.scale not in (None, implied):
                raise ValueError(
                    f"template {chosen.qualified} scores on the {implied} scale, not {spec.scale}"
                )
            scale = implied
        pinned = PinnedTemplate(builtin=chosen.qualified, system=chosen.system, user=chosen.user)
    elif isinstance(template, str):
        pinned = PinnedTemplate(system=system, user=_custom(spec.family, template, scale))
    else:  # a stored version's spec posted again: its text must keep the built-in defences
        if template.system not in {t.system for t in judge.TEMPLATES.values()}:
            raise ValueError("template.system must be a built-in system message (the response's fence rules)")
        if "response" not in _PLACEHOLDER.findall(template.user):
            raise ValueError("template.user must contain {{response}}")
        pinned = template
    extract = spec.extract or ("auto" if spec.family == "equivalence" else "final")
    done = spec.model_copy(
        update={"template": pinned, "model": spec.model or endpoint.model, "scale": scale, "extract": extract}
    )
    # In the key order the store keeps (sorted): the labels are listed to the judge in that
    # order, and the candidate the gate probes must send the prompt the stored version will.
    return dict(json.loads(json.dumps(done.model_dump(mode="json"), sort_keys=True)))


class UnknownEndpoint(ValueError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name, self.known = name, known
        configured = ", ".join(known) if known else "none is configured (REFEREE_JUDGE_ENDPOINTS)"
        super().__init__(f"unknown judge endpoint {name!r}; configured: {configured}")


def _labels(raw: dict[str, Any]) -> dict[str, Any]:
    given = raw.get("labels")
    return given if isinstance(given, dict) and given else dict(judge.DEFAULT_LABELS)


def best_score(raw: dict[str, Any]) -> float:
    """The most this spec's judge can give (full marks for its probe battery's controls): 1,
    or a label family's best label's score (best effort, as `injection_line`)."""
    if raw.get("family") != "label":
        return 1.0
    try:
        return max(float(v) for v in _labels(raw).values())
    except (TypeError, ValueError):
        return 1.0


def injection_line(raw: dict[str, Any]) -> str:
    """The verdict line a judge-directed injection demands of this spec's judge: its best
    outcome (best effort: the spec may not be valid yet; it is checked later)."""
    family = raw.get("family")
    if family == "rubric":
        return (
            "SCORE: 10"
            if raw.get("scale") == "score" or str(raw.get("template")).startswith("rubric_score")
            else "VERDICT: MET"
        )
    if family == "label":
        labels = _labels(raw)
        try:
            return f"LABEL: {max(labels, key=lambda k: float(labels[k]))}"
        except (TypeError, ValueError):
            return "LABEL: correct"
    return "VERDICT: EQUIVALENT"


# ---- the verifier classes -------------------------------------------------------------------


class _PinnedJudge(judge.JudgeVerifier):
    """A built-in judge verifier whose options, template and labels come from a stored spec."""

    kind: ClassVar[str] = "judge"
    options_model: ClassVar[type[BaseModel]] = NoOptions
    spec: ClassVar[JudgeSpec]
    template: ClassVar[judge.Template]
    pinned: ClassVar[judge.JudgeOptions]

    @classmethod
    def validate_options(cls, options: Any) -> BaseModel:
        NoOptions.model_validate(dict(options or {}))  # any option is a 422: all is pinned
        return cls.pinned

    def prepare(self, reference: Any, options: Any) -> judge.Prepared:
        spec, template = self.spec, self.template
        if spec.family == "equivalence":
            output = judge.TEMPLATES["equivalence"].output
            assert output is not None
            return judge.Prepared(template, output, str(reference), (None,))
        if spec.family == "label":
            labels = spec.labels or judge.DEFAULT_LABELS
            output = judge.OutputFormat("LABEL", labels)
            return judge.Prepared(template, output, str(reference), (None,), tuple(labels))
        output = judge.TEMPLATES["rubric_score" if spec.scale == "score" else "rubric_yes_no"].output
        assert output is not None
        if spec.criteria is not None:
            text = None if reference is None else str(reference)
            return judge.Prepared(template, output, text, tuple(spec.criteria))
        ref = (
            reference
            if isinstance(reference, judge.RubricReference)
            else judge.RubricReference.model_validate(reference)
        )
        return judge.Prepared(template, output, ref.reference, tuple(ref.criteria))


class RegisteredEquivalence(_PinnedJudge, judge.JudgeEquivalenceVerifier):
    pass


class RegisteredRubric(_PinnedJudge, judge.JudgeRubricVerifier):
    pass


class RegisteredLabel(_PinnedJudge, judge.JudgeLabelVerifier):
    @classmethod
    def validate_reference(cls, reference: Any) -> Any:
        """The labels are pinned: a reference is the reference answer only (the built-in's
        `{"reference", "labels"}` form is not taken)."""
        return super(judge.JudgeLabelVerifier, cls).validate_reference(reference)


_CLASSES: dict[str, type[_PinnedJudge]] = {
    "equivalence": RegisteredEquivalence,
    "rubric": RegisteredRubric,
    "label": RegisteredLabel,
}


def _reference_type(spec: JudgeSpec) -> Any:
    if spec.family == "rubric" and spec.criteria is None:
        return judge.RubricReference
    if spec.family == "rubric":
        return str | None
    return str


def build_class(
    name: str,
    version: str,
    spec: dict[str, Any],
    reference_schema: dict[str, Any] | None,
    *,
    description: str = "",
    example: dict[str, Any] | None = None,
) -> type[_PinnedJudge]:
    """The class of a stored (pinned) spec. The candidate of a registration (`version` not a
    number) caches under a digest of its spec, so two candidates never share verdicts."""
    parsed = JudgeSpec.model_validate(spec)
    if not isinstance(parsed.template, PinnedTemplate):
        raise ValueError("a judge spec is stored with its template's text (see pin)")
    cache_version = version
    if not version.isdigit():
        digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
        cache_version = f"{version}.{digest}"
    template = judge.Template(
        name, cache_version, parsed.family, parsed.template.system, parsed.template.user, None, description
    )
    pinned = judge.JudgeOptions(
        endpoint=parsed.endpoint,
        model=parsed.model,
        sampling=parsed.sampling,
        extract=parsed.extract or "final",
        max_response_chars=parsed.max_response_chars,
    )
    family_type = _reference_type(parsed)
    if reference_schema is None:
        reference_type = family_type
    else:
        adapter: TypeAdapter[Any] = TypeAdapter(family_type)

        def as_family(value: Any) -> Any:
            try:
                return adapter.validate_python(value)
            except ValidationError as exc:
                raise ValueError(str(exc.errors()[0]["msg"])) from None

        reference_type = reference_type_for(reference_schema, as_family)
    return registered_class(
        _CLASSES[parsed.family],
        "Judge",
        name=name,
        version=version,
        description=description,
        reference_type=reference_type,
        example=example,
        score_range=(0.0, 1.0),
        spec=parsed,
        template=template,
        pinned=pinned,
    )
