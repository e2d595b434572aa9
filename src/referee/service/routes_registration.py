"""Registering verifier types over HTTP: POST /v1/verifiers, versions, DELETE."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from referee.models import Verdict
from referee.registered import (
    DisableResponse,
    RegisterExample,
    RegisterRequest,
    RegisterResponse,
    VersionList,
    version_info,
)
from referee.service.deps import ADMIN, CLIENT, CatalogDep, OwnerDep, ScorerDep
from referee.service.errors import documented
from referee.service.json_body import StrictJSONRoute
from referee.verifiers import Verifier

router = APIRouter(tags=["registration"], route_class=StrictJSONRoute)

_READ_ERRORS = documented(401, 404, 409, 429, d409="A built-in verifier's name (not registered)")


# What a client can do next with a registered version (OpenAPI links; stateful API testing
# follows them: register -> score -> versions -> disable).
_NAME = {"name": "$response.body#/version/name"}
_LINKS = {
    "ScoreWithIt": {
        "operationId": "score",
        "requestBody": {"verifier": "$response.body#/verifier", "response": "4", "reference": "4"},
    },
    "ItsVersions": {"operationId": "list_versions", "parameters": _NAME},
    "DisableIt": {"operationId": "disable_verifier", "parameters": _NAME},
}
_EXAMPLE = {
    "name": "plain.exact",
    "kind": "declarative",
    "description": "the whole response, compared exactly",
    "spec": {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "exact"}},
    "examples": [
        {"response": "4", "reference": "4", "expected_score": 1.0},
        {"response": "5", "reference": "4", "expected_score": 0.0},
    ],
}


@router.post(
    "/v1/verifiers",
    response_model=RegisterResponse,
    status_code=201,
    operation_id="register_verifier",
    openapi_extra={"requestBody": {"content": {"application/json": {"example": _EXAMPLE}}}},
    responses={
        201: {"links": _LINKS},
        200: {
            "model": RegisterResponse,
            "description": "Same content as the latest version",
            "links": _LINKS,
        },
        **documented(
            401,
            403,
            409,
            413,
            422,
            429,
            503,
            d409="A name taken by a built-in verifier (compared case-insensitively)",
            d422=(
                "Invalid request, a spec that is not valid for its kind, failing examples "
                "(`detail.failing`), a webhook host not allowed, or a quota"
            ),
            d503="Overloaded while scoring the examples; retry after Retry-After",
        ),
    },
    dependencies=ADMIN,
)
async def register(body: RegisterRequest, catalog: CatalogDep, scorer: ScorerDep, owner: OwnerDep) -> Any:
    """Register a verifier type (or its next version). The examples run first through the
    scoring path; the version is stored only if each reproduces its expected score."""

    async def score_examples(verifier: Verifier, examples: list[RegisterExample]) -> list[Verdict]:
        items = [(e.response, e.reference, e.options) for e in examples]
        return await scorer.score_with(verifier, items, ("body", "examples"), owner)

    stored, created, secret = await catalog.register(body, score_examples)
    answer = RegisterResponse(
        created=created, verifier=stored.qualified, version=version_info(stored), secret=secret
    )
    return JSONResponse(status_code=201 if created else 200, content=answer.model_dump(mode="json"))


@router.get(
    "/v1/verifiers/{name}/versions",
    response_model=VersionList,
    operation_id="list_versions",
    responses=_READ_ERRORS,
    dependencies=CLIENT,
)
async def versions(name: str, catalog: CatalogDep) -> VersionList:
    """Every version of a registered type, disabled ones included (oldest first)."""
    return VersionList(name=name, versions=await catalog.versions(name))


@router.delete(
    "/v1/verifiers/{name}",
    response_model=DisableResponse,
    operation_id="disable_verifier",
    responses=documented(401, 403, 404, 409, 429, d409="A built-in verifier's name (not registered)"),
    dependencies=ADMIN,
)
async def disable(name: str, catalog: CatalogDep) -> DisableResponse:
    """Disable a registered type (`name`: every version; `name@3`: that one). History is kept;
    a later POST of the same name creates the next version."""
    return DisableResponse(name=name, disabled=await catalog.disable(name))
