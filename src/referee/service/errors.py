"""Every error leaves the service as JSON (`ErrorBody`), never as a traceback.

One convention: the packages below the service raise `referee.errors.DomainError` with a kind;
`STATUS` below is the only place where a kind becomes an HTTP status code.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Route

from referee.errors import DomainError, ErrorKind
from referee.models import ErrorBody
from referee.service.json_body import DuplicateKey

log = structlog.get_logger(__name__)


def error_response(status: int, error: str, message: str, detail: Any = None, **headers: str) -> JSONResponse:
    body = {"error": error, "message": message, "detail": detail}
    return JSONResponse(status_code=status, content=body, headers=headers or None)


STATUS: dict[ErrorKind, int] = {
    ErrorKind.invalid: 422,
    ErrorKind.not_found: 404,
    ErrorKind.conflict: 409,
    ErrorKind.unauthenticated: 401,
    ErrorKind.forbidden: 403,
    ErrorKind.overloaded: 503,
    ErrorKind.throttled: 429,
    ErrorKind.unavailable: 503,
}


_DESCRIPTIONS = {
    401: "Missing or unknown key (when keys are configured)",
    403: "The key is not an admin key",
    404: "Unknown verifier",
    409: "A built-in verifier's name",
    413: "Body too large (REFEREE_MAX_BODY_BYTES)",
    422: (
        "Invalid request; `detail` names the fields. Besides the schema, a request is checked "
        "against what it names: the reference and options against the verifier's own schemas "
        "(`GET /v1/verifiers/{name}`), and the configured limits. Bodies that are not strict "
        "JSON (not UTF-8, NaN or Infinity, lone surrogates, nested over 64 levels) are refused "
        "here too (`type: json_invalid`)."
    ),
    429: (
        "This key has too many requests in flight (REFEREE_MAX_CONCURRENT_REQUESTS_PER_KEY), or this "
        "address sent too many wrong keys (REFEREE_UI_LOGIN_MAX_FAILURES); retry after Retry-After"
    ),
    503: "Overloaded (queueing time over REFEREE_MAX_QUEUE_WAIT_S); retry after Retry-After",
}
# OpenAPI extension on an operation whose 429 holds without keys too (see app._document_open_mode).
QUOTA_WITHOUT_KEYS = "x-referee-quota-without-keys"
_RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait before retrying", "schema": {"type": "integer"}}
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}},
    429: _RETRY_AFTER,
    503: _RETRY_AFTER,
}


def documented(*codes: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error codes, all with the `ErrorBody` schema;
    `descriptions` (keyed `d422=...`) replace the default wording for a route."""
    responses: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        entry: dict[str, Any] = {
            "model": ErrorBody,
            "description": descriptions.get(f"d{code}", _DESCRIPTIONS[code]),
        }
        if code in _HEADERS:
            entry["headers"] = _HEADERS[code]
        responses[code] = entry
    return responses


def domain_error_response(exc: DomainError) -> JSONResponse:
    headers: dict[str, str] = {}
    if exc.kind is ErrorKind.unauthenticated:
        headers["WWW-Authenticate"] = "Bearer"
    if exc.retry_after_s is not None:
        headers["Retry-After"] = f"{max(1, round(exc.retry_after_s))}"
    return error_response(STATUS[exc.kind], exc.code, exc.message, exc.detail, **headers)


def _clean_validation_errors(errors: Any) -> list[dict[str, Any]]:
    cleaned = []
    for e in errors:
        # The discriminator tags ("single"/"batch") are an implementation detail of /v1/score.
        loc: list[Any] = []
        for part in e.get("loc", ()):
            # Discriminator tags are an implementation detail: /v1/score's "single"/"batch", and
            # a group verifier's "name"/"components".
            if part in ("single", "batch") or (loc[-1:] == ["verifier"] and part in ("name", "components")):
                continue
            loc.append(part)
        msg = e.get("msg")
        if e.get("type") == "json_invalid" and (e.get("ctx") or {}).get("error"):
            msg = f"{msg}: {e['ctx']['error']}"  # what is wrong with the JSON (service.json_body)
        item = {"loc": loc, "msg": msg, "type": e.get("type")}
        cleaned.append(item)
    return cleaned


def _allowed_methods(path: str, routes: Iterable[BaseRoute]) -> str:
    """Every method served at `path`, for the `Allow` header of a 405 (Starlette names only the
    first matching route's, and a path may be served by routes of two routers)."""
    matching = [r for r in routes if isinstance(r, Route) and r.path_regex.match(path)]
    return ", ".join(sorted({m for route in matching for m in route.methods or set()}))


def install_error_handlers(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """`routers`: those the app includes, whose routes a 405's `Allow` header names (FastAPI
    keeps an included router's routes out of `app.router.routes`)."""

    def routes() -> Iterator[BaseRoute]:
        yield from app.router.routes
        for router in routers:
            yield from router.routes

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = _clean_validation_errors(exc.errors())
        if isinstance(exc.__cause__, DuplicateKey) and len(detail) == 1:
            # FastAPI says where in the text (a character offset); the object's path says more.
            detail[0]["loc"] = ["body", *exc.__cause__.path]
        where = ", ".join(".".join(map(str, d["loc"])) for d in detail[:5])
        return error_response(422, "validation_error", f"invalid request: {where}", detail)

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        return domain_error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request.scope.get("path", ""), routes())
        if exc.status_code == 400:
            # A body the framework could not read as JSON: a client mistake like any other
            # malformed body, so the same 422 (the service never answers a bare 400).
            detail = [{"loc": ["body"], "msg": str(exc.detail), "type": "json_invalid"}]
            return error_response(422, "validation_error", f"invalid request body: {exc.detail}", detail)
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        return error_response(exc.status_code, code, str(exc.detail), **headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled_error", path=request.url.path)
        return error_response(500, "internal_error", "internal error; see the service log")
