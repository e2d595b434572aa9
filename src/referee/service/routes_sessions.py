"""`/v1/sessions`: stateful code sessions, for tool calls during a rollout (issue 30).

`POST /v1/sessions` opens one (a container of the sandbox pinned to it, a Python kernel kept
alive in it); `POST /v1/sessions/{id}/run` runs code in it, variables, imports and files in
/work kept from call to call; `GET` reads it (or lists the key's own); `DELETE` closes it.
Everything is `runtime.code_sessions`' (`referee.sessions.CodeSessions`): ids, owners, quotas,
TTLs and the one-call-at-a-time queue; here is only HTTP. Any API key may use sessions (a
trainer's key is a scoring key); a session is its key's alone: another key's id is 404, as
for an id never issued.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response
from pydantic import BaseModel

from referee.models import (
    SessionCreated,
    SessionLimitsInfo,
    SessionList,
    SessionOpenRequest,
    SessionRunRequest,
    SessionRunResult,
    SessionState,
)
from referee.service.deps import CLIENT, OwnerDep, RuntimeDep
from referee.service.errors import documented
from referee.service.json_body import StrictJSONRoute
from referee.sessions import MAX_WAITING_CALLS, CodeSessions

sessions_router = APIRouter(
    prefix="/v1/sessions", tags=["sessions"], dependencies=CLIENT, route_class=StrictJSONRoute
)

_D404 = "No open session of this key by that id (never issued, closed, expired, or another key's)"
_D503 = (
    "Every session slot is taken (REFEREE_SANDBOX_MAX_SESSIONS), or there is no sandbox; "
    "retry after Retry-After"
)
SessionId = Annotated[str, Path(min_length=1, max_length=128, description="The id `POST /v1/sessions` gave.")]


def get_code_sessions(runtime: RuntimeDep) -> CodeSessions:
    return runtime.code_sessions


SessionsDep = Annotated[CodeSessions, Depends(get_code_sessions)]
M = TypeVar("M", bound=BaseModel)


def _as(model: type[M], record: Any, **more: Any) -> M:
    """`model` from a dataclass of the sessions package (the fields the model has)."""
    fields = asdict(record) | more
    return model.model_validate({name: fields[name] for name in model.model_fields})


@sessions_router.post(
    "",
    status_code=201,
    response_model=SessionCreated,
    responses=documented(
        401,
        413,
        422,
        429,
        503,
        d422="Invalid request; `detail` names the fields. Beyond the schema: files over 8 MiB in all "
        "(`too_long`). Limits and idle_ttl_s over the configured caps are lowered to them, not refused.",
        d429="This key holds REFEREE_SESSIONS_MAX_PER_KEY open sessions, or has too many requests "
        "in flight; retry after Retry-After",
        d503=_D503,
    ),
)
async def open_session(body: SessionOpenRequest, sessions: SessionsDep, owner: OwnerDep) -> SessionCreated:
    """Open a code session: its id, and the limits and TTLs that apply to it."""
    limits = body.limits.model_dump(exclude_none=True)
    info = await sessions.open(
        owner, language=body.language, limits=limits, files=body.files, idle_ttl_s=body.idle_ttl_s
    )
    return _as(SessionCreated, info, limits=_as(SessionLimitsInfo, info.limits))


@sessions_router.get("", response_model=SessionList, responses=documented(401, 429))
async def list_sessions(sessions: SessionsDep, owner: OwnerDep) -> SessionList:
    """This key's open sessions, oldest first."""
    return SessionList(sessions=[_as(SessionState, info) for info in sessions.list(owner)])


@sessions_router.get(
    "/{session_id}", response_model=SessionState, responses=documented(401, 404, 422, 429, d404=_D404)
)
async def get_session(session_id: SessionId, sessions: SessionsDep, owner: OwnerDep) -> SessionState:
    """How far a session is (calls, restarts) and when it closes if left unused."""
    return _as(SessionState, sessions.get(owner, session_id))


@sessions_router.post(
    "/{session_id}/run",
    response_model=SessionRunResult,
    responses=documented(
        401,
        404,
        409,
        413,
        422,
        429,
        503,
        d404=_D404,
        d409=f"Calls wait for the session's running one; more than {MAX_WAITING_CALLS} waiting, or "
        "one waiting past the session's call time, is refused (`session_busy`)",
        d422="Invalid request; `detail` names the fields. Beyond the schema: code over "
        "REFEREE_SESSIONS_MAX_CODE_BYTES (`too_long`).",
        d503="The session's container was lost (`session_lost`, detail.status `error`): the "
        "session is gone, open another",
    ),
)
async def run_in_session(
    session_id: SessionId, body: SessionRunRequest, sessions: SessionsDep, owner: OwnerDep
) -> SessionRunResult:
    """Run code in the session: stdout, stderr, the value of its last expression, how it ended.
    A call that times out or runs out of memory costs the kernel's state (`restarted`), never
    the session: the next call runs in a fresh kernel, files in /work kept."""
    outcome, call = await sessions.run(owner, session_id, body.code, body.time_s)
    return _as(SessionRunResult, outcome, call=call)


@sessions_router.delete(
    "/{session_id}",
    status_code=204,
    response_class=Response,
    responses=documented(401, 404, 422, 429, d404=_D404),
)
async def close_session(session_id: SessionId, sessions: SessionsDep, owner: OwnerDep) -> Response:
    """Close the session (after the call it runs, if any); its container is scrubbed for reuse."""
    await sessions.close(owner, session_id)
    return Response(status_code=204)
