"""Declarative verifier types: data that composes audited built-ins, never code.

A spec is a tree of nodes (JSON, validated here at registration):

- `check`: an extractor picks the answer out of the response, a comparator judges it against
  the (templated) reference. Comparators `exact`, `regex`, `numeric`, `math` and
  `multiple_choice` are the built-in verifiers of the same name, taken from the verifier index
  (`builtins`, see `worker_builtins`);
  `json_schema`, `set` and `multiset` live in `comparators.py`.
- `verifier`: a built-in verifier applied to the whole response (e.g. `format.think_answer`).
- `multi`: named components combined by weights or by a whitelist-grammar formula.

References are templates over the request's reference: `"{{reference.answer}}"` is that
value itself, `"x = {{reference.x}}"` a string. The verifier runs in the worker processes
like a built-in: `worker_ref()` hands them the spec as JSON and `from_spec` rebuilds it against
the worker's verifier index.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import re2
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from referee.registered import formula
from referee.registered.comparators import COMPARATORS, Comparator
from referee.registered.refschema import reference_type_for, registered_class
from referee.registered.template import (
    Path,
    PathError,
    is_missing,
    lookup,
    parse_path,
    render,
    template_paths,
)
from referee.verifiers import extract
from referee.verifiers.base import Check, NoOptions, Verifier, VerifierError
from referee.verifiers.installed import InstalledVerifiers
from referee.verifiers.short_answer import Extraction, select_answer

FACTORY = "referee.registered.declarative:from_spec"
BUILTIN_COMPARATORS = ("exact", "regex", "numeric", "math", "multiple_choice")
MAX_NODES = 16
MAX_DEPTH = 4
MAX_JSON_CHARS = 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Extract(_Strict):
    kind: Literal[
        "none", "final", "boxed", "answer_tag", "answer_line", "auto", "regex", "json_path", "fenced"
    ] = "auto"
    # regex / json_path apply to this part of the response.
    source: Extraction = "final"
    pattern: str | None = Field(default=None, max_length=2000, description="regex: an RE2 pattern.")
    group: int | str = Field(default=0, description="regex: group number or name (0 = whole match).")
    occurrence: Literal["first", "last"] = "last"
    path: str | None = Field(default=None, description="json_path: e.g. `answer.items[0]`.")
    languages: list[str] | None = Field(default=None, description="fenced: accepted language tags.")

    @model_validator(mode="after")
    def _needs(self) -> Extract:
        if self.kind == "regex":
            if self.pattern is None:
                raise ValueError("a regex extractor needs `pattern`")
            try:
                compiled = re2.compile(self.pattern)
            except re2.error as exc:
                raise ValueError(f"not a valid RE2 pattern: {exc}") from exc
            if isinstance(self.group, int) and self.group > compiled.groups:
                raise ValueError(f"pattern has {compiled.groups} groups; group {self.group} requested")
        if self.kind == "json_path":
            if self.path is None:
                raise ValueError("a json_path extractor needs `path`")
            parse_path(self.path)
        return self


# Options of a built-in that the service acts on around the worker checks, not in them: a
# declarative type's checks run in the workers alone, so it would accept them and ignore them.
_SERVICE_OPTIONS = ("fallback", "fallback_options")


def _no_service_options(options: dict[str, Any]) -> dict[str, Any]:
    for key in _SERVICE_OPTIONS:
        if options.get(key) is not None:
            raise ValueError(
                f"options.{key}: math's judge fallback is not available inside a declarative type "
                "(the judge runs in the service, after the worker checks a declarative type is made "
                "of); use the math verifier with options.fallback in the request, or register a "
                "judge type and weight it beside this one"
            )
    return options


class Compare(_Strict):
    kind: Literal["exact", "regex", "numeric", "math", "multiple_choice", "json_schema", "set", "multiset"]
    options: dict[str, Any] = Field(default_factory=dict)

    _service_options = field_validator("options")(_no_service_options)


class CheckNode(_Strict):
    type: Literal["check"] = "check"
    extract: Extract = Field(default_factory=Extract)
    compare: Compare
    reference: Any = "{{reference}}"


class VerifierNode(_Strict):
    type: Literal["verifier"]
    name: str = Field(min_length=1, max_length=200)
    options: dict[str, Any] = Field(default_factory=dict)
    reference: Any = "{{reference}}"

    _service_options = field_validator("options")(_no_service_options)


ComponentName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")]


class MultiNode(_Strict):
    type: Literal["multi"]
    components: dict[ComponentName, Annotated[Node, Field(discriminator="type")]] = Field(min_length=1)
    weights: dict[str, float] | None = None
    formula: str | None = Field(default=None, max_length=formula.MAX_CHARS)
    score_range: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _combination(self) -> MultiNode:
        if (self.weights is None) == (self.formula is None):
            raise ValueError("give exactly one of `weights` and `formula`")
        names = set(self.components)
        if clash := names & set(formula.FUNCTIONS):
            raise ValueError(f"component names may not be function names: {sorted(clash)}")
        if self.weights is not None:
            if set(self.weights) != names:
                raise ValueError(f"weights must name exactly the components {sorted(names)}")
            if not all(math.isfinite(w) for w in self.weights.values()):
                raise ValueError("weights must be finite")
        if self.formula is not None:
            formula.parse(self.formula, frozenset(names))
        if self.score_range is not None and not self.score_range[0] <= self.score_range[1]:
            raise ValueError("score_range must be [low, high]")
        return self


Node = CheckNode | VerifierNode | MultiNode
MultiNode.model_rebuild()


class DeclarativeSpec(_Strict):
    root: Annotated[Node, Field(discriminator="type")]


# ---- compiled tree -------------------------------------------------------------------------


# The verifiers a spec may name: built-in ones that run in worker processes, by name.
Builtins = Mapping[str, Verifier]


def worker_builtins(index: InstalledVerifiers) -> dict[str, Verifier]:
    """The audited built-ins of `index` (no extras, no plugins) that run in worker processes."""
    return {v.name: v for v in index if index.kind(v.name) == "builtin" and v.runs_in == "worker"}


def _builtin(name: str, builtins: Builtins) -> Verifier:
    found = builtins.get(name)
    if found is None:
        raise ValueError(f"unknown built-in verifier {name!r}; available: {', '.join(sorted(builtins))}")
    return found


class _BuiltinComparator:
    """A built-in verifier used as a comparator: it judges the already-extracted answer."""

    def __init__(self, verifier: Verifier, options: dict[str, Any]) -> None:
        if "extract" in verifier.options_model.model_fields:
            options = {"extract": "none", **options}  # the extractor has already done this
        self.verifier = verifier
        self.options = verifier.validate_options(options)

    def validate_reference(self, reference: Any) -> Any:
        return self.verifier.validate_reference(reference)

    def prepare(self, reference: Any) -> Any:
        return self.verifier.prepare(self.verifier.validate_reference(reference), self.options)

    def compare(self, value: Any, prepared: Any) -> Check:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return self.verifier.check(text, prepared, self.options)


@dataclass(frozen=True)
class _Leaf:
    reference: Any  # the template
    judge: Callable[[str, Any], Check]
    validate_reference: Callable[[Any], Any]
    prepare_reference: Callable[[Any], Any]
    score_range: tuple[float, float]


@dataclass(frozen=True)
class _Multi:
    components: dict[str, _Leaf | _Multi]
    weights: dict[str, float] | None
    tree: formula.Node | None
    score_range: tuple[float, float]


def _extract(response: str, spec: Extract, pattern: Any) -> Any:
    """The extracted answer (a string, or any JSON value for json_path), or None."""
    if spec.kind in ("none", "final", "boxed", "answer_tag", "answer_line", "auto"):
        return select_answer(response, spec.kind)
    if spec.kind == "fenced":
        final = extract.final_part(response)
        langs = tuple(x.lower() for x in spec.languages) if spec.languages else None
        return None if final is None else extract.last_fenced_block(final, langs)
    text = select_answer(response, spec.source)
    if text is None:
        return None
    if spec.kind == "regex":
        found = None
        for candidate in pattern.finditer(text):
            found = candidate
            if spec.occurrence == "first":
                break
        return None if found is None else found.group(spec.group)
    if len(text) > MAX_JSON_CHARS:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    found = lookup(value, pattern)
    return None if is_missing(found) else found


def _compile_check(node: CheckNode, builtins: Builtins) -> _Leaf:
    comparator: Comparator | _BuiltinComparator
    if node.compare.kind in BUILTIN_COMPARATORS:
        comparator = _BuiltinComparator(_builtin(node.compare.kind, builtins), node.compare.options)
    else:
        comparator = COMPARATORS[node.compare.kind](
            node.compare.options, multiset=node.compare.kind == "multiset"
        )
    ex = node.extract
    pattern: Any = None
    if ex.kind == "regex":
        pattern = re2.compile(ex.pattern or "")
    elif ex.kind == "json_path":
        pattern = parse_path(ex.path or "")

    def judge(response: str, prepared: Any) -> Check:
        value = _extract(response, ex, pattern)
        if value is None:
            return Check(0.0, reason=f"no answer found (extract={ex.kind})")
        return comparator.compare(value, prepared)

    return _Leaf(node.reference, judge, comparator.validate_reference, comparator.prepare, (0.0, 1.0))


def _compile_verifier(node: VerifierNode, builtins: Builtins) -> _Leaf:
    verifier = _builtin(node.name, builtins)
    options = verifier.validate_options(node.options)

    def prepare(reference: Any) -> Any:
        return verifier.prepare(verifier.validate_reference(reference), options)

    def judge(response: str, prepared: Any) -> Check:
        return verifier.check(response, prepared, options)

    return _Leaf(node.reference, judge, verifier.validate_reference, prepare, verifier.score_range)


def compile_node(
    node: Node, builtins: Builtins, depth: int = 0, counter: list[int] | None = None
) -> _Leaf | _Multi:
    counter = counter if counter is not None else [0]
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise ValueError(f"more than {MAX_NODES} nodes")
    if depth > MAX_DEPTH:
        raise ValueError(f"multi nested deeper than {MAX_DEPTH}")
    if isinstance(node, CheckNode | VerifierNode):
        for _ in template_paths(node.reference):
            pass  # parse_path raises on a malformed placeholder
        if isinstance(node, CheckNode):
            return _compile_check(node, builtins)
        return _compile_verifier(node, builtins)
    parts = {
        name: compile_node(child, builtins, depth + 1, counter) for name, child in node.components.items()
    }
    tree = formula.parse(node.formula, frozenset(parts)) if node.formula is not None else None
    score_range = node.score_range
    if score_range is None:
        if node.weights is None:
            score_range = (0.0, 1.0)
        else:
            lows = [
                min(w * parts[n].score_range[0], w * parts[n].score_range[1]) for n, w in node.weights.items()
            ]
            highs = [
                max(w * parts[n].score_range[0], w * parts[n].score_range[1]) for n, w in node.weights.items()
            ]
            score_range = (math.fsum(lows), math.fsum(highs))
    return _Multi(parts, node.weights, tree, score_range)


# ---- evaluation ----------------------------------------------------------------------------


def _validate(node: _Leaf | _Multi, reference: Any, where: Path = ()) -> None:
    """Every leaf's rendered reference fits its comparator (run in the service: a 422)."""
    if isinstance(node, _Multi):
        for name, child in node.components.items():
            _validate(child, reference, (*where, name))
        return
    try:
        node.validate_reference(render(node.reference, reference))
    except (PathError, ValueError) as exc:
        label = ".".join(map(str, where)) or "spec"
        raise ValueError(f"{label}: {exc}") from None


def _prepare(node: _Leaf | _Multi, reference: Any) -> Any:
    if isinstance(node, _Multi):
        return {name: _prepare(child, reference) for name, child in node.components.items()}
    return node.prepare_reference(render(node.reference, reference))


def _check(node: _Leaf | _Multi, response: str, prepared: Any) -> Check:
    if isinstance(node, _Leaf):
        return node.judge(response, prepared)
    results = {name: _check(child, response, prepared[name]) for name, child in node.components.items()}
    scores = {name: c.score for name, c in results.items()}
    if node.weights is not None:
        total = math.fsum(node.weights[name] * s for name, s in scores.items())
    else:
        assert node.tree is not None
        try:
            total = formula.evaluate(node.tree, scores)
        except (ZeroDivisionError, OverflowError) as exc:
            raise VerifierError(f"formula failed on scores {scores}: {exc}") from None
    if not math.isfinite(total):
        raise VerifierError(f"formula gave {total} on scores {scores}")
    reasons = [f"{name}: {c.reason}" for name, c in results.items() if c.reason]
    details = {name: {"score": c.score, "reason": c.reason, **c.details} for name, c in results.items()}
    return Check(total, reason="; ".join(reasons) or None, details={"components": details})


# ---- the verifier --------------------------------------------------------------------------


class DeclarativeVerifier(Verifier):
    """Base of the classes built per registered version (see `build_class`)."""

    options_model = NoOptions
    kind: ClassVar[str] = "declarative"
    compiled: ClassVar[_Leaf | _Multi]
    spec_json: ClassVar[str]

    def worker_ref(self) -> str | tuple[str, str]:
        return (FACTORY, self.spec_json)

    def prepare(self, reference: Any, options: Any) -> Any:
        return _prepare(self.compiled, reference)

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        return _check(self.compiled, response, prepared)


def build_class(
    name: str,
    version: str,
    spec: dict[str, Any],
    reference_schema: dict[str, Any] | None,
    *,
    builtins: Builtins,
    description: str = "",
    example: dict[str, Any] | None = None,
) -> type[DeclarativeVerifier]:
    """Validate a spec and build its verifier class over `builtins` (`worker_builtins` of the
    verifier index). Raises pydantic.ValidationError or ValueError (naming the problem) for a
    spec that cannot be registered."""
    parsed = DeclarativeSpec.model_validate({"root": spec})
    compiled = compile_node(parsed.root, builtins)

    def templates_resolve(value: Any) -> Any:
        _validate(compiled, value)
        return value

    reference_type = reference_type_for(reference_schema, templates_resolve)
    spec_json = json.dumps(
        {"name": name, "version": version, "spec": spec, "reference_schema": reference_schema},
        sort_keys=True,
        separators=(",", ":"),
    )
    return registered_class(
        DeclarativeVerifier,
        "Declarative",
        name=name,
        version=version,
        description=description,
        reference_type=reference_type,
        example=example,
        score_range=compiled.score_range,
        compiled=compiled,
        spec_json=spec_json,
    )


def from_spec(spec_json: str, index: InstalledVerifiers) -> Verifier:
    """Worker-side factory named by `worker_ref()`, given the worker's verifier index; the
    worker caches the instance."""
    data = json.loads(spec_json)
    builtins = worker_builtins(index)
    return build_class(
        data["name"], data["version"], data["spec"], data["reference_schema"], builtins=builtins
    )()
