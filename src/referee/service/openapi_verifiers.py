"""The OpenAPI document's scoring requests, one schema per installed verifier (issue 32).

A scoring request's `reference` and `options` take the shape the verifier it names declares
(`GET /v1/verifiers/{name}`). The document says so in JSON Schema: `ScoreRequest`, `GroupSpec`
and `VerifierComponent` become a `oneOf` keyed by the verifier's name (an `enum` of `name` and
`name@version`), one branch per installed verifier with that verifier's reference and options
schemas, plus one branch for every other name (a registered type, whose schemas its
registration sets, or an unknown name: 404). The installed verifiers are fixed for the life of
a service, so the document is built once; registered types are not, so they keep the open
branch.

Where the verifier's validation goes beyond what JSON Schema can say, the branch says so in
words and marks the field with `x-referee-checked-beyond-schema` (a structured reference: a
puzzle's givens must fit its size, a code problem's expected output its output cap; a reference
may also come as JSON text); each operation lists the refusals a request valid against the
document may still get (`referee.service.openapi_refusals`). Nothing else may refuse such a
request (tests/service/test_schemathesis.py holds the service to it).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ValidationError

from referee.service.openapi_refusals import BEYOND_SCHEMA, document_refusals
from referee.settings import RequestLimits
from referee.verifiers import Verifier

_REF_PREFIX = "#/components/schemas/"
JSON = dict[str, Any]


def _component_name(verifier: Verifier) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", verifier.name)


def _relocated(schema: JSON, prefix: str, components: JSON) -> JSON:
    """`schema` with its `$defs` moved into the document's components under `prefix` (two
    verifiers may name different models alike)."""
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                node["$ref"] = f"{_REF_PREFIX}{prefix}{ref.removeprefix('#/$defs/')}"
            for value in node.values():
                fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)
        return node

    for name, definition in defs.items():
        components[f"{prefix}{name}"] = fix(definition)
    return fix(schema)


def _accepts(verifier: Verifier, reference: Any) -> bool:
    try:
        verifier.validate_reference(reference)
    except (ValidationError, ValueError):
        return False
    return True


def _is_scalar(schema: JSON) -> bool:
    """A reference schema the document can state exactly: no object and no array anywhere."""
    text = repr(schema)
    return "'object'" not in text and "'array'" not in text and "$ref" not in text


# One sample per JSON type: which of them a verifier's reference validator takes.
_SAMPLES: dict[str, Any] = {
    "boolean": True,
    "integer": 0,
    "number": 1.5,
    "string": "abc",
    "null": None,
    "array": [],
    "object": {},
}


def _accepted_types(verifier: Verifier) -> list[str]:
    """The JSON types the reference validator takes, as it takes them (lax: a string reference
    also takes a number, its decimal text; a number may take a boolean)."""
    types = [name for name, sample in _SAMPLES.items() if _accepts(verifier, sample)]
    return [t for t in types if not (t == "integer" and "number" in types)]


def _has_validators(model: type[BaseModel]) -> bool:
    """Whether a model (or one it nests) checks more than its fields' types and bounds."""
    decorators = model.__pydantic_decorators__
    if decorators.model_validators or decorators.field_validators:
        return True
    for info in model.model_fields.values():
        if any(type(m).__name__.endswith("Validator") for m in info.metadata):
            return True
        for inner in (*getattr(info.annotation, "__args__", ()), info.annotation):
            if isinstance(inner, type) and issubclass(inner, BaseModel) and _has_validators(inner):
                return True
    return False


def _checks_inputs(verifier: Verifier) -> bool:
    """Whether the verifier checks its reference and options together (`validate_inputs`)."""
    return type(verifier).validate_inputs.__func__ is not Verifier.validate_inputs.__func__  # type: ignore[attr-defined]


_BEYOND_WORDS = "Checked beyond this schema: one that does not pass is a 422 naming it."


class _Branches:
    """The per-verifier schemas of one document, built once per verifier."""

    def __init__(self, installed: Iterable[Verifier], components: JSON) -> None:
        self.verifiers = list(installed)
        self.components = components
        self.names = [n for v in self.verifiers for n in (v.name, v.qualified_name())]

    def name_enum(self, verifier: Verifier) -> JSON:
        return {"type": "string", "enum": [verifier.name, verifier.qualified_name()]}

    def other_names(self, base: JSON) -> JSON:
        return {
            **base,
            "not": {"enum": self.names},
            "description": (
                "A registered type (`name` or `name@N`; its reference and options are checked "
                "against its registration's schemas), else 404."
            ),
        }

    def options(self, verifier: Verifier) -> JSON:
        prefix = f"Options.{_component_name(verifier)}."
        schema = verifier.options_model.model_json_schema(ref_template=f"{_REF_PREFIX}{prefix}{{model}}")
        schema = _relocated(schema, prefix, self.components)
        if _has_validators(verifier.options_model) or _checks_inputs(verifier):
            # How options go together (or with the reference): said in words, as the model does.
            schema = {"allOf": [schema], "description": _BEYOND_WORDS, BEYOND_SCHEMA: True}
        return schema

    def reference(self, verifier: Verifier) -> tuple[JSON, bool]:
        """(schema, required) of the verifier's reference."""
        raw = verifier.reference_adapter().json_schema()
        types = _accepted_types(verifier)
        required = "null" not in types
        not_null: JSON = {"not": {"type": "null"}} if required else {}
        if _is_scalar(raw):
            # Stated exactly: the types the validator takes, with their constraints; and where
            # it checks more (a regex must compile, a number be finite), said so.
            core = repr(verifier.reference_adapter().core_schema)
            beyond = _checks_inputs(verifier) or any(
                f"'function-{kind}'" in core for kind in ("after", "wrap", "plain")
            )
            marks: JSON = {"description": _BEYOND_WORDS, BEYOND_SCHEMA: True} if beyond else {}
            if len(types) == len(_SAMPLES) - 1:
                return marks, required
            keep = {k: v for k, v in raw.items() if k not in ("type", "anyOf", "title")}
            return {**keep, "type": types, **marks}, required
        # A structured reference is read laxly (as pydantic reads JSON, a string may hold it as
        # JSON text) and checked beyond its schema: the document states no shape for it rather
        # than a stricter one than the validator's, and points at where the shape is published.
        schema = {
            "description": (
                "The reference `GET /v1/verifiers/{name}` describes (`reference_schema`; "
                "a string may hold it as JSON text). Checked beyond any schema (how its parts fit "
                "together, a puzzle's givens its size): one that does not fit is a 422 naming it."
            ),
            BEYOND_SCHEMA: True,
            **not_null,
        }
        return schema, required


def _branch(base: JSON, title: str, properties: JSON, required: Iterable[str] = ()) -> JSON:
    branch = copy.deepcopy(base)
    branch["title"] = title
    branch["properties"].update(properties)
    branch["required"] = sorted({*branch.get("required", []), *required})
    return branch


def _one_of(
    components: JSON,
    name: str,
    key: str,
    branches: _Branches,
    per_verifier: Callable[[JSON, Verifier], JSON],
    others: Callable[[JSON], list[JSON]],
) -> None:
    """Replace component `name` by a `oneOf` over its per-verifier branches (`key` is the
    property naming the verifier). Verifiers whose branches would be alike share one, named
    by all of them: the document stays short, and a fuzzer's coverage of it too."""
    base = components[name]
    shared: dict[str, tuple[str, JSON]] = {}
    for verifier in branches.verifiers:
        branch = per_verifier(base, verifier)
        alike = json.dumps({**branch["properties"], key: None}, sort_keys=True)
        if alike in shared:
            _, first = shared[alike]
            first["properties"][key]["enum"] += branch["properties"][key]["enum"]
            first["title"] = f"{name} ({', '.join(first['properties'][key]['enum'][::2])})"
        else:
            shared[alike] = (f"{name}.{_component_name(verifier)}", branch)
    refs = []
    for component, branch in shared.values():
        components[component] = branch
        refs.append({"$ref": f"{_REF_PREFIX}{component}"})
    for index, other in enumerate(others(base)):
        component = f"{name}.other{index or ''}"
        components[component] = other
        refs.append({"$ref": f"{_REF_PREFIX}{component}"})
    components[name] = {
        "title": name,
        "description": (base.get("description", "") + " One schema per installed verifier, by name.").strip(),
        "oneOf": refs,
    }


def _score_request(branches: _Branches, components: JSON) -> None:
    def per_verifier(base: JSON, verifier: Verifier) -> JSON:
        reference, required = branches.reference(verifier)
        return _branch(
            base,
            f"ScoreRequest ({verifier.name})",
            {
                "verifier": branches.name_enum(verifier),
                "reference": reference,
                "options": branches.options(verifier),
            },
            ["reference"] if required else [],
        )

    def others(base: JSON) -> list[JSON]:
        verifier = branches.other_names(base["properties"]["verifier"])
        return [_branch(base, "ScoreRequest (registered type)", {"verifier": verifier})]

    _one_of(components, "ScoreRequest", "verifier", branches, per_verifier, others)


def _component(branches: _Branches, components: JSON) -> None:
    def per_verifier(base: JSON, verifier: Verifier) -> JSON:
        return _branch(
            base,
            f"VerifierComponent ({verifier.name})",
            {"name": branches.name_enum(verifier), "options": branches.options(verifier)},
        )

    def others(base: JSON) -> list[JSON]:
        name = branches.other_names(base["properties"]["name"])
        return [_branch(base, "VerifierComponent (registered type)", {"name": name})]

    _one_of(components, "VerifierComponent", "name", branches, per_verifier, others)


def _group_spec(branches: _Branches, components: JSON) -> None:
    def response_options(options: JSON) -> JSON:
        """Per-response values of the verifier's own options (any other key: 422)."""
        target = options
        if "$ref" in options:
            target = components[options["$ref"].removeprefix(_REF_PREFIX)]
        if "allOf" in target:
            target = target["allOf"][0]
            if "$ref" in target:
                target = components[target["$ref"].removeprefix(_REF_PREFIX)]
        item = {"type": "object", "properties": target.get("properties", {}), "additionalProperties": False}
        schema: JSON = {
            "anyOf": [{"type": "array", "items": item}, {"type": "null"}],
            "description": "One object per response (as many entries), merged into the options.",
        }
        if options.get(BEYOND_SCHEMA):
            schema[BEYOND_SCHEMA] = True
        return schema

    def per_verifier(base: JSON, verifier: Verifier) -> JSON:
        reference, required = branches.reference(verifier)
        options = branches.options(verifier)
        return _branch(
            base,
            f"GroupSpec ({verifier.name})",
            {
                "verifier": branches.name_enum(verifier),
                "reference": reference,
                "options": options,
                "response_options": response_options(options),
            },
            ["reference"] if required else [],
        )

    def others(base: JSON) -> list[JSON]:
        name = branches.other_names({"type": "string", "minLength": 1, "maxLength": 200})
        components_list = {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": f"{_REF_PREFIX}VerifierComponent"},
            "description": "Weighted components whose scores are summed into the reward.",
        }
        any_reference = {
            "description": (
                "Checked against each component's reference schema (`GET /v1/verifiers/{name}`): "
                "one that does not fit them all is a 422 naming it."
            ),
            BEYOND_SCHEMA: True,
        }
        no_options = {
            "type": "object",
            "maxProperties": 0,
            "description": "Empty: with components, options go in each component.",
        }
        return [
            _branch(
                base,
                "GroupSpec (components)",
                {"verifier": components_list, "reference": any_reference, "options": no_options},
            ),
            _branch(base, "GroupSpec (registered type)", {"verifier": name}),
        ]

    _one_of(components, "GroupSpec", "verifier", branches, per_verifier, others)


def _limits(components: JSON, limits: RequestLimits) -> None:
    """The configured limits of a whole request, stated (a group's own limits are not: with
    on_invalid=error_verdict a group over them gets error verdicts, not a 422)."""
    batch = components.get("BatchScoreRequest", {}).get("properties", {}).get("items")
    if batch is not None:
        batch["maxItems"] = limits.max_items
    groups = components.get("GroupsRequest", {}).get("properties", {}).get("groups")
    if groups is not None:
        groups["maxItems"] = limits.max_groups
    response = components.get("ScoreRequest", {}).get("properties", {}).get("response")
    if response is not None:
        response["maxLength"] = limits.max_response_chars


def document_verifier_requests(app: FastAPI, installed: Iterable[Verifier], limits: RequestLimits) -> None:
    """Build `app`'s document with the scoring requests split per installed verifier, the
    configured request limits, and each operation's refusals beyond the document."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            _limits(components, limits)
            branches = _Branches(installed, components)
            if "VerifierComponent" in components:
                _component(branches, components)
            if "ScoreRequest" in components:
                _score_request(branches, components)
            if "GroupSpec" in components:
                _group_spec(branches, components)
            document_refusals(schema.get("paths", {}))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
