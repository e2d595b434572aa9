"""Schemathesis checks for this service (loaded by `SCHEMATHESIS_HOOKS`), run beside every
built-in check (issue 32):

- `refusals_are_documented`: the built-in `positive_data_acceptance` holds on every operation;
  on the few whose document lists refusals beyond JSON Schema (`x-referee-checked-beyond-schema`,
  `referee.service.openapi_refusals.REFUSALS`) it is told that 422 may answer a schema-valid
  request, and this check takes its place there: such a 422 must be one that list names, and
  where it can be verified, verified true (lists of different lengths, a field whose schema
  in the document marks it checked beyond the schema). Any other 422 fails.
- `server_errors_are_documented_503s`: the built-in `not_a_server_error` is told that 503 is no
  server error (the service answers 503 + Retry-After when overloaded, when no sandbox runs,
  and for OpenRLHF batches without a verdict); this check holds each one to the document: a
  503 the operation documents, with the error body.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema
import schemathesis
from schemathesis import Case, CheckContext, Response

BEYOND_SCHEMA = "x-referee-checked-beyond-schema"
# The document's schemas split per verifier, and the field naming the verifier in each.
_SPLIT = {"ScoreRequest": "verifier", "GroupSpec": "verifier", "VerifierComponent": "name"}


def _json(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


@schemathesis.check
def server_errors_are_documented_503s(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    status = response.status_code
    if status < 500:
        return None
    documented = str(status) in case.operation.definition.raw.get("responses", {})
    body = _json(response)
    if status == 503 and documented and isinstance(body, dict) and {"error", "message"} <= set(body):
        return None
    raise AssertionError(
        f"server error {status} (only a documented 503 may be answered): {response.text[:500]}"
    )


def _at(body: Any, loc: list[Any]) -> Any:
    for part in loc:
        if isinstance(body, dict) and isinstance(part, str):
            body = body.get(part)
        elif isinstance(body, list) and isinstance(part, int) and 0 <= part < len(body):
            body = body[part]
        else:
            return None
    return body


def _branch_marks(schemas: dict[str, Any], name: str, field: str) -> bool:
    """Whether the document leaves `field` to the verifier called `name`: a name no installed
    verifier has (a registered type), or an installed one whose schema marks the field."""
    for split, key in _SPLIT.items():
        for ref in schemas.get(split, {}).get("oneOf", []):
            branch = schemas.get(ref["$ref"].rsplit("/", 1)[-1], {})
            if name in branch.get("properties", {}).get(key, {}).get("enum", []):
                return bool(branch["properties"].get(field, {}).get(BEYOND_SCHEMA))
    return True


def _beyond_schema(schemas: dict[str, Any], body: Any, loc: list[Any], fields: list[str]) -> bool:
    where = next((i for i, part in enumerate(loc) if part in fields), None)
    if where is None:
        return False
    owner, field = _at(body, loc[:where]), loc[where]
    # A response's own options are merged into the options (and checked with the reference)
    # of its group: `response_options.<r>.options` is the group's options field.
    rest = [part for part in loc[where + 1 :] if part in ("options", "reference")]
    if field == "response_options" and rest:
        field = rest[0]
    if not isinstance(owner, dict):
        return False
    if "name" in owner and field == "reference":
        return True  # a component's check of its group's reference: the components branch marks it
    name = owner.get("verifier", owner.get("name"))
    if isinstance(name, list):
        return field != "options" or not owner.get("options")
    return isinstance(name, str) and _branch_marks(schemas, name, field)


def _lengths_differ(body: Any, loc: list[Any], lists: list[str]) -> bool:
    owner = _at(body, loc)
    if not isinstance(owner, dict):
        return False
    lengths = {len(owner[n]) for n in lists if isinstance(owner.get(n), list)}
    return len(lengths) > 1


def _documented(refusals: list[dict[str, Any]], schemas: dict[str, Any], body: Any, error: Any) -> bool:
    if not isinstance(error, dict):
        return False
    if error.get("error") != "validation_error":
        return any(r["error"] == error.get("error") for r in refusals)
    details = error.get("detail")
    if not isinstance(details, list) or not details:
        return False

    def explained(detail: dict[str, Any], refusal: dict[str, Any]) -> bool:
        loc = [part for part in detail.get("loc", []) if part != "body"]
        if refusal["error"] != "validation_error":
            return False
        if "types" in refusal and detail.get("type") not in refusal["types"]:
            return False
        if "lists" in refusal:
            return _lengths_differ(body, loc, refusal["lists"])
        if refusal.get("where") == "beyond_schema":
            return _beyond_schema(schemas, body, loc, refusal["fields"])
        if "fields" in refusal:
            return any(part in refusal["fields"] for part in loc)
        return True

    return all(isinstance(d, dict) and any(explained(d, r) for r in refusals) for d in details)


_DOCUMENTS: dict[int, tuple[dict[str, Any], referencing.Registry[Any]]] = {}


@cache
def _body_validator(document_id: int, path: str, method: str) -> jsonschema.Draft202012Validator:
    _, registry = _DOCUMENTS[document_id]  # the document stays held: its id stays its own
    pointer = "/".join(part.replace("~", "~0").replace("/", "~1") for part in ("paths", path, method))
    schema = {"$ref": f"urn:document#/{pointer}/requestBody/content/application~1json/schema"}
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _valid_body(case: Case) -> bool:
    """Whether the case's body is valid against the document. Schemathesis's fuzzing (4.32)
    now and then sends as positive a body that is not (an object of one `oneOf` branch
    spliced into another): the promise holds for valid requests only."""
    document = case.operation.schema.raw_schema
    if id(document) not in _DOCUMENTS:
        resource = referencing.Resource.from_contents(document, referencing.jsonschema.DRAFT202012)
        _DOCUMENTS[id(document)] = (document, referencing.Registry().with_resource("urn:document", resource))
    validator = _body_validator(id(document), case.operation.path, case.operation.method.lower())
    return validator.is_valid(case.body)


@schemathesis.check
def refusals_are_documented(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    refusals = case.operation.definition.raw.get(BEYOND_SCHEMA)
    meta = case.meta
    if not refusals or meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    schemas = case.operation.schema.raw_schema.get("components", {}).get("schemas", {})
    error = _json(response)
    if not _valid_body(case) or _documented(refusals, schemas, case.body, error):
        return None
    detail = error.get("detail") if isinstance(error, dict) else error
    summary = (
        [(d.get("loc"), d.get("type")) for d in detail if isinstance(d, dict)]
        if isinstance(detail, list)
        else error
    )
    raise AssertionError(f"schema-valid request refused with 422, not as documented: {summary}"[:2000])
