"""Every error leaves the service as JSON (`ErrorBody`), never as a traceback.

One convention: the packages below the service raise `referee.errors.DomainError` with a kind;
`STATUS` below is the only place where a kind becomes an HTTP status code.
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from referee.errors import DomainError, ErrorKind
from referee.models import ErrorBody

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
    ErrorKind.unavailable: 503,
}


_DESCRIPTIONS = {
    401: "Missing or unknown key",
    403: "The key is not an admin key",
    404: "Unknown verifier",
    409: "A built-in verifier's name",
    413: "Body too large",
    422: "Invalid request; `detail` names the fields",
    503: "Overloaded; retry after the Retry-After header",
}


def documented(*codes: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error codes, all with the `ErrorBody` schema;
    `descriptions` (keyed `d422=...`) replace the default wording for a route."""
    return {
        code: {"model": ErrorBody, "description": descriptions.get(f"d{code}", _DESCRIPTIONS[code])}
        for code in codes
    }


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
        loc = [part for part in e.get("loc", ()) if part not in ("single", "batch")]
        item = {"loc": loc, "msg": e.get("msg"), "type": e.get("type")}
        cleaned.append(item)
    return cleaned


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = _clean_validation_errors(exc.errors())
        where = ", ".join(".".join(map(str, d["loc"])) for d in detail[:5])
        return error_response(422, "validation_error", f"invalid request: {where}", detail)

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        return domain_error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled_error", path=request.url.path)
        return error_response(500, "internal_error", "internal error; see the service log")
