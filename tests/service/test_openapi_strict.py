"""The OpenAPI document is as strict as the validators (issue 32): a scoring request's reference
and options take the schema of the verifier it names, options are read strictly, and what no
schema can say is listed per operation. The fuzzing itself is tests/service/test_schemathesis.py;
these are the cases the issue found, checked against the document and the service alike."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest
import referencing
import referencing.jsonschema

from referee.service.background import BackgroundServer
from referee.service.openapi_refusals import BEYOND_SCHEMA


@pytest.fixture(scope="module")
def document(server: BackgroundServer) -> dict[str, Any]:
    return httpx.get(f"{server.url}/openapi.json", timeout=30).json()


def _valid(document: dict[str, Any], component: str, value: Any) -> bool:
    resource = referencing.Resource.from_contents(document, referencing.jsonschema.DRAFT202012)
    registry: referencing.Registry[Any] = referencing.Registry().with_resource("urn:doc", resource)
    schema = {"$ref": f"urn:doc#/components/schemas/{component}"}
    return jsonschema.Draft202012Validator(schema, registry=registry).is_valid(value)


def _score(server: BackgroundServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/score", json=body, timeout=30)


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"verifier": "exact", "response": "4", "reference": "4"}, True),
        ({"verifier": "exact@1", "response": "4", "reference": 4}, True),  # a number is its text
        ({"verifier": "exact", "response": "4", "reference": None}, False),
        ({"verifier": "exact", "response": "4"}, False),
        ({"verifier": "exact", "response": "4", "reference": True}, False),
        ({"verifier": "exact", "response": "4", "reference": "4", "options": {"strip": "yes"}}, False),
        ({"verifier": "exact", "response": "4", "reference": "4", "options": {"strip": 0}}, False),
        ({"verifier": "exact", "response": "4", "reference": "4", "options": {"nope": 1}}, False),
        ({"verifier": "format.think_answer", "response": "x", "reference": None}, True),
        ({"verifier": "length.overlong", "response": "x", "options": {}}, False),  # max_length
        # JSON Schema's integer takes 512.0 (a YAML config's spelling), and so does the service.
        (
            {
                "verifier": "length.overlong",
                "response": "x",
                "options": {"max_length": 512.0, "cache_length": 64},
            },
            True,
        ),
        (
            {
                "verifier": "length.overlong",
                "response": "x",
                "options": {"max_length": 512.5, "cache_length": 64},
            },
            False,
        ),
    ],
)
def test_the_document_and_the_service_agree(
    server: BackgroundServer, document: dict[str, Any], body: dict[str, Any], valid: bool
) -> None:
    assert _valid(document, "ScoreRequest", body) is valid
    assert (_score(server, body).status_code == 200) is valid


def test_registered_names_keep_an_open_branch(document: dict[str, Any]) -> None:
    """A registered type's reference is its registration's business; a built-in name is not."""
    body = {"verifier": "house.style", "response": "x", "reference": {"any": ["thing"]}}
    assert _valid(document, "ScoreRequest", body)
    assert not _valid(document, "ScoreRequest", {**body, "verifier": "exact"})


def test_what_no_schema_states_is_marked_and_listed(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]

    def branch(name: str) -> dict[str, Any]:
        for ref in schemas["ScoreRequest"]["oneOf"]:
            found = schemas[ref["$ref"].rsplit("/", 1)[-1]]
            if name in found["properties"]["verifier"].get("enum", []):
                return found
        raise AssertionError(name)

    # A sudoku's givens must fit its size, a regex compile: marked; exact's string is exact.
    assert branch("logic.sudoku_4x4")["properties"]["reference"][BEYOND_SCHEMA] is True
    assert branch("regex")["properties"]["reference"][BEYOND_SCHEMA] is True
    assert BEYOND_SCHEMA not in branch("exact")["properties"]["reference"]
    groups = document["paths"]["/v1/groups"]["post"]
    assert {"length_mismatch"} <= {t for r in groups[BEYOND_SCHEMA] for t in r.get("types", [])}
    assert "Checked beyond this document" in groups["description"]
    # Operations that check nothing beyond the document list nothing.
    assert BEYOND_SCHEMA not in document["paths"]["/v1/verifiers"]["get"]


def test_request_limits_are_stated(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert schemas["BatchScoreRequest"]["properties"]["items"]["maxItems"] == 1024
    assert schemas["GroupsRequest"]["properties"]["groups"]["maxItems"] == 256


def test_bounds_are_written_as_json_schema_keywords(document: dict[str, Any]) -> None:
    """pydantic writes a field's bounds as `gt`/`ge`/`lt`/`le` (no JSON Schema keyword: nothing
    checks them, so out-of-bounds values look schema-valid) when a validator wraps an optional
    type; every bound must be minimum/maximum/exclusive*."""
    misspelt: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("integer", "number"):
                misspelt.extend(f"{path}.{k}" for k in ("gt", "ge", "lt", "le") if k in node)
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(document["components"]["schemas"], "schemas")
    assert misspelt == []
    seed = document["components"]["schemas"]["EpisodeRequest"]["properties"]["seed"]["anyOf"][0]
    assert seed["minimum"] == 0
