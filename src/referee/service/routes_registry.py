"""Registering verifier types over HTTP: POST /v1/verifiers, versions, DELETE."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from referee.models import ErrorBody, Verdict
from referee.registered.api import (
    DisableResponse,
    RegisterExample,
    RegisterRequest,
    RegisterResponse,
    VersionList,
)
from referee.registered.catalog import RegistrationError, version_info
from referee.scoring.engine import Scorer
from referee.service.auth import require_admin, require_client
from referee.service.errors import error_response
from referee.service.routes import get_catalog
from referee.verifiers.base import Verifier

router = APIRouter(tags=["registration"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or unknown key"},
    403: {"model": ErrorBody, "description": "The key is not an admin key"},
    404: {"model": ErrorBody, "description": "Unknown verifier"},
    409: {"model": ErrorBody, "description": "A built-in verifier's name"},
    422: {"model": ErrorBody, "description": "Invalid spec, failing examples (`detail.failing`) or quota"},
}


def _refused(exc: RegistrationError) -> JSONResponse:
    return error_response(exc.status, exc.error, exc.message, exc.detail)


@router.post(
    "/v1/verifiers",
    response_model=RegisterResponse,
    status_code=201,
    responses={
        200: {"model": RegisterResponse, "description": "Same content as the latest version"},
        **_ERRORS,
    },
    dependencies=[Depends(require_admin)],
)
async def register(body: RegisterRequest, request: Request) -> Any:
    """Register a verifier type (or its next version). The examples run first through the
    scoring path; the version is stored only if each reproduces its expected score."""
    catalog = get_catalog(request)
    scorer: Scorer = request.app.state.scorer

    async def score_examples(verifier: Verifier, examples: list[RegisterExample]) -> list[Verdict]:
        items = [(e.response, e.reference, e.options) for e in examples]
        return await scorer.score_with(verifier, items, ("body", "examples"))

    try:
        stored, created, secret = await catalog.register(body, score_examples)
    except RegistrationError as exc:
        return _refused(exc)
    answer = RegisterResponse(
        created=created, verifier=stored.qualified, version=version_info(stored), secret=secret
    )
    return JSONResponse(status_code=201 if created else 200, content=answer.model_dump(mode="json"))


@router.get(
    "/v1/verifiers/{name}/versions",
    response_model=VersionList,
    responses=_ERRORS,
    dependencies=[Depends(require_client)],
)
async def versions(name: str, request: Request) -> Any:
    """Every version of a registered type, disabled ones included (oldest first)."""
    try:
        return VersionList(name=name, versions=await get_catalog(request).versions(name))
    except RegistrationError as exc:
        return _refused(exc)


@router.delete(
    "/v1/verifiers/{name}",
    response_model=DisableResponse,
    responses=_ERRORS,
    dependencies=[Depends(require_admin)],
)
async def disable(name: str, request: Request) -> Any:
    """Disable a registered type (`name`: every version; `name@3`: that one). History is kept;
    a later POST of the same name creates the next version."""
    try:
        return DisableResponse(name=name, disabled=await get_catalog(request).disable(name))
    except RegistrationError as exc:
        return _refused(exc)
