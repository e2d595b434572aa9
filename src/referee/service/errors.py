"""Every error leaves the service as JSON (`ErrorBody`), never as a traceback."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from referee.scoring.engine import InputError
from referee.scoring.pool import PoolOverloaded
from referee.verifiers.registry import UnknownVerifier

log = structlog.get_logger(__name__)


def error_response(status: int, error: str, message: str, detail: Any = None, **headers: str) -> JSONResponse:
    body = {"error": error, "message": message, "detail": detail}
    return JSONResponse(status_code=status, content=body, headers=headers or None)


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

    @app.exception_handler(InputError)
    async def _input(request: Request, exc: InputError) -> JSONResponse:
        return error_response(422, "validation_error", str(exc), exc.errors)

    @app.exception_handler(UnknownVerifier)
    async def _unknown(request: Request, exc: UnknownVerifier) -> JSONResponse:
        return error_response(404, "unknown_verifier", str(exc), {"known": exc.known})

    @app.exception_handler(PoolOverloaded)
    async def _overloaded(request: Request, exc: PoolOverloaded) -> JSONResponse:
        return error_response(503, "overloaded", str(exc), None, **{"Retry-After": "1"})

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
