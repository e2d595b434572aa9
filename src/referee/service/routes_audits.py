"""`/v1/audits`: a verifier audit as a background job: start, list, read, cancel.

The audit itself is `referee.audit.run_audit` (accuracy on labelled rows, false positives
first, latency, the verifier kind's probe battery). Here it runs as a task of the service, over
the service's own scorer, as background work (`BackgroundOwner`): admission never counts it
against scoring, and its programs hold at most the audits' share of the sandbox's run slots
(`runtime.audit_share`, REFEREE_AUDIT_SANDBOX_SHARE), none taken while a scoring program waits.
Before that, two audits of 5,000 `while True` programs filled the sandbox lane and every other
key's code scoring got 503 for hours (issue 27).

Quotas (`settings.audits`): audits running at once over all keys (503 beyond) and per key
(429), rows per audit (422) and over a key's running audits (429). An audit is the business of
the key that started it: every other key (admins excepted) gets 404 for it, as for an id that
never existed, and the list shows a key its own; the dashboard (`ui.py`) asks the same
`Caller` and cancels through `cancel_visible` too. `DELETE` cancels a running audit (its task
and the sandbox work it waits for) or forgets an ended one. Jobs are the runtime's
(`runtime.audits`: the last AUDITS_KEPT, running ones cancelled when the service stops), in
memory, so a restart forgets them: the report is the client's to keep.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from pydantic import BaseModel, PrivateAttr

from referee.audit import (
    AuditReport,
    LabelledFileError,
    audit_html,
    audit_markdown,
    row_from_mapping,
    run_audit,
    scorer_backend,
)
from referee.errors import DomainError, ErrorKind
from referee.models import AuditRequest, Traffic, VerifierComponent
from referee.runtime import AUDITS_KEPT, BackgroundJobs
from referee.scoring import BackgroundOwner
from referee.service.auth import Role
from referee.service.deps import CLIENT, AuditJobsDep, AuthDep, RuntimeDep
from referee.service.errors import QUOTA_WITHOUT_KEYS, documented
from referee.service.json_body import StrictJSONRoute
from referee.service.security_headers import REPORT_HEADERS
from referee.settings import AuditSettings
from referee.stats import counted_as

# Chunks of one audit scored at once: small, so an audit never fills a lane on its own.
AUDIT_CONCURRENCY = 2

audits_router = APIRouter(
    prefix="/v1/audits", tags=["audits"], dependencies=CLIENT, route_class=StrictJSONRoute
)


class AuditJob(BaseModel):
    id: str
    status: Literal["running", "done", "failed", "cancelled"]
    verifier: str
    progress: dict[str, int]
    created: float
    finished: float | None = None
    error: str | None = None
    report: AuditReport | None = None
    # Who started it (a key digest; None on an open service) and its size: never serialised.
    _key: Hashable = PrivateAttr(default=None)
    _rows: int = PrivateAttr(default=0)


class AuditList(BaseModel):
    audits: list[AuditJob]


@dataclass(frozen=True)
class Caller:
    """Who asks: a key digest (None on an open service) and whether it may see every audit."""

    key: Hashable
    sees_all: bool

    @classmethod
    def of(cls, role: Role | None, digest: Hashable) -> Caller:
        """The caller of `role` (None: an open service, no keys to tell callers apart, so every
        audit is everyone's) and key `digest`. The API and the dashboard both ask this."""
        return cls(digest, sees_all=role is None or role is Role.admin)

    def may_see(self, job: AuditJob) -> bool:
        return self.sees_all or job._key == self.key


def get_caller(request: Request, auth: AuthDep) -> Caller:
    if auth.open:
        return Caller.of(None, None)
    return Caller.of(*auth.identify(request.headers.get("authorization")))


CallerDep = Annotated[Caller, Depends(get_caller)]


def visible_jobs(jobs: BackgroundJobs[AuditJob], caller: Caller) -> list[AuditJob]:
    """The jobs `caller` may see (its own; an admin or an open service: all), oldest first."""
    return [job for job in jobs.records() if caller.may_see(job)]


def visible_job(jobs: BackgroundJobs[AuditJob], audit_id: str, caller: Caller) -> AuditJob:
    """The job, or 404 alike for an unknown id and another key's audit (ids must not leak)."""
    job = jobs.get(audit_id)
    if job is None or not caller.may_see(job):
        raise DomainError(
            ErrorKind.not_found, "unknown_audit", f"no audit {audit_id!r} (kept: the last {jobs.keep})"
        )
    return job


async def cancel_visible(jobs: BackgroundJobs[AuditJob], audit_id: str, caller: Caller) -> AuditJob | None:
    """Cancel `caller`'s running audit (its scoring and queued sandbox work with it) and return
    its job, status `cancelled`; None when it had already ended. 404 as `visible_job`. The one
    cancel path of `DELETE /v1/audits/{id}` and the dashboard's cancel button."""
    job = visible_job(jobs, audit_id, caller)
    return job if await jobs.cancel(audit_id) else None


def _check_quotas(jobs: BackgroundJobs[AuditJob], limits: AuditSettings, key: Hashable, rows: int) -> None:
    """Refuse an audit beyond its key's quotas (429) or the service's (503); nothing started."""
    if rows > limits.max_rows:
        raise DomainError(
            ErrorKind.invalid,
            "audit_too_large",
            f"{rows} rows; an audit may have at most {limits.max_rows} (REFEREE_AUDIT_MAX_ROWS)",
            {"rows": rows, "max_rows": limits.max_rows},
        )
    own = jobs.running_records(lambda job: job._key == key)
    if len(own) >= limits.max_running_per_key:
        raise DomainError(
            ErrorKind.throttled,
            "audit_quota",
            f"this key has {len(own)} audits running (REFEREE_AUDIT_MAX_RUNNING_PER_KEY); "
            "retry when one is done, or cancel one",
            {"running": len(own), "max_running_per_key": limits.max_running_per_key},
            retry_after_s=10,
        )
    rows_running = sum(job._rows for job in own)
    if rows_running + rows > limits.max_rows_per_key:
        raise DomainError(
            ErrorKind.throttled,
            "audit_quota",
            f"this key's running audits hold {rows_running} rows; {rows} more exceed "
            f"{limits.max_rows_per_key} (REFEREE_AUDIT_MAX_ROWS_PER_KEY)",
            {"rows_running": rows_running, "max_rows_per_key": limits.max_rows_per_key},
            retry_after_s=10,
        )
    if jobs.running() >= limits.max_running:
        raise DomainError(
            ErrorKind.overloaded,
            "audits_busy",
            f"{limits.max_running} audits are running; retry when one is done",
            retry_after_s=10,
        )


@audits_router.post(
    "",
    status_code=202,
    response_model=AuditJob,
    responses=documented(
        401,
        413,
        422,
        429,
        503,
        d429="This key's audit quota (running audits, rows) or request quota is used; retry after Retry-After",
        d503="REFEREE_AUDIT_MAX_RUNNING audits are running; retry after Retry-After",
    ),
    # Audit quotas hold without keys too: every caller then shares the anonymous quota.
    openapi_extra={QUOTA_WITHOUT_KEYS: True},
)
async def start_audit(body: AuditRequest, runtime: RuntimeDep, caller: CallerDep) -> AuditJob:
    """Start an audit; poll `GET /v1/audits/{id}` for its progress and report."""
    jobs: BackgroundJobs[AuditJob] = runtime.audits
    verifier: str | list[VerifierComponent] = (
        body.verifier
        if isinstance(body.verifier, str)
        else [VerifierComponent.model_validate(c.model_dump()) for c in body.verifier]
    )
    try:
        rows = [
            row_from_mapping({**row.model_dump(exclude_none=True), "reference": row.reference}, i)
            for i, row in enumerate(body.rows)
        ]
    except (LabelledFileError, ValueError) as exc:  # the model above should make this unreachable
        raise DomainError(ErrorKind.invalid, "invalid_rows", str(exc)[:500]) from None
    _check_quotas(jobs, runtime.settings.audits, caller.key, len(rows))
    name = verifier if isinstance(verifier, str) else " + ".join(f"{c.weight:g}*{c.name}" for c in verifier)
    job = AuditJob(
        id=uuid.uuid4().hex,
        status="running",
        verifier=name,
        progress={"done": 0, "total": 0},
        created=time.time(),
    )
    job._key, job._rows = caller.key, len(rows)
    backend = scorer_backend(
        runtime.scorer, owner=BackgroundOwner("audit", job.id, caller.key), share=runtime.audit_share
    )

    def progress(done: int, total: int) -> None:
        job.progress = {"done": done, "total": total}

    async def run() -> None:
        try:
            with counted_as(Traffic.audit):  # statistics keep its verdicts apart from training's
                job.report = await run_audit(
                    rows,
                    verifier,
                    backend,
                    progress=progress,
                    probes=body.probes,
                    source=f"POST /v1/audits {job.id}",
                    concurrency=AUDIT_CONCURRENCY,
                )
            job.status = "done"
        except asyncio.CancelledError:  # DELETE, or the service stopping
            job.status = "cancelled"
            raise
        except Exception as exc:  # reported on the job; the service goes on
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"[:500]
        finally:
            job.finished = time.time()

    def mark_cancelled(job: AuditJob) -> None:  # also when cancelled before `run` began
        job.status, job.finished = "cancelled", job.finished or time.time()

    jobs.start(job.id, job, run(), on_cancelled=mark_cancelled)
    return job.model_copy(update={"report": None})


@audits_router.get("", response_model=AuditList, responses=documented(401, 429))
async def list_audits(jobs: AuditJobsDep, caller: CallerDep) -> AuditList:
    """The audits this key started (an admin key: every audit), oldest first, without reports."""
    return AuditList(audits=[job.model_copy(update={"report": None}) for job in visible_jobs(jobs, caller)])


@audits_router.get(
    "/{audit_id}",
    response_model=AuditJob,
    responses={
        200: {
            "content": {
                "text/markdown": {"schema": {"type": "string"}},
                "text/html": {"schema": {"type": "string"}},
            }
        },
        **documented(
            401, 404, 422, 429, d404=f"No such audit, or another key's (only the last {AUDITS_KEPT} are kept)"
        ),
    },
)
async def get_audit(
    audit_id: str,
    jobs: AuditJobsDep,
    caller: CallerDep,
    format: Literal["json", "markdown", "html"] = Query(default="json", description="The report's form"),
) -> Response | AuditJob:
    """The job: its progress while it runs, its report when done (`format=markdown|html`: the
    report alone, once done)."""
    job = visible_job(jobs, audit_id, caller)
    if format == "json" or job.report is None:
        return job
    if format == "markdown":
        return PlainTextResponse(
            audit_markdown(job.report), media_type="text/markdown", headers=REPORT_HEADERS
        )
    return HTMLResponse(audit_html(job.report), headers=REPORT_HEADERS)


@audits_router.delete(
    "/{audit_id}",
    response_model=AuditJob,
    responses={
        204: {"description": "An ended audit, forgotten"},
        **documented(
            401, 404, 429, d404=f"No such audit, or another key's (only the last {AUDITS_KEPT} are kept)"
        ),
    },
)
async def delete_audit(audit_id: str, jobs: AuditJobsDep, caller: CallerDep) -> Response | AuditJob:
    """A running audit is cancelled (its scoring and queued sandbox work with it) and its job
    returned, status `cancelled`; an ended one is forgotten (204)."""
    cancelled = await cancel_visible(jobs, audit_id, caller)
    if cancelled is not None:
        return cancelled.model_copy(update={"report": None})
    jobs.forget(audit_id)
    return Response(status_code=204)
