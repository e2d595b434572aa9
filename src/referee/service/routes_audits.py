"""`POST /v1/audits` and `GET /v1/audits/{id}`: a verifier audit as a background job.

The audit itself is `referee.audit.run_audit` (accuracy on labelled rows, false positives
first, latency, the verifier kind's probe battery). Here it runs as a task of the service, over
the service's own scorer but admitted under an owner of its own (`("audit", id)`), with at most
MAX_RUNNING jobs and a small chunk concurrency: scoring traffic is never starved by an audit,
and an audit waits its turn like any other caller. Jobs are the runtime's (`runtime.audits`:
the last AUDITS_KEPT, running ones cancelled when the service stops), in memory, so a restart
forgets them: the report is the client's to keep.
"""

from __future__ import annotations

import time
import uuid
from typing import Literal

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from pydantic import BaseModel

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
from referee.models import AuditRequest, VerifierComponent
from referee.runtime import AUDITS_KEPT
from referee.service.deps import CLIENT, AuditJobsDep, ScorerDep
from referee.service.errors import documented

MAX_RUNNING = 2
# Chunks of one audit scored at once: small, so an audit never fills a lane on its own.
AUDIT_CONCURRENCY = 2

audits_router = APIRouter(prefix="/v1/audits", tags=["audits"], dependencies=CLIENT)


class AuditJob(BaseModel):
    id: str
    status: Literal["running", "done", "failed"]
    verifier: str
    progress: dict[str, int]
    created: float
    finished: float | None = None
    error: str | None = None
    report: AuditReport | None = None


@audits_router.post(
    "",
    status_code=202,
    response_model=AuditJob,
    responses=documented(
        401, 413, 422, 429, 503, d503=f"{MAX_RUNNING} audits are running; retry after Retry-After"
    ),
)
async def start_audit(body: AuditRequest, scorer: ScorerDep, jobs: AuditJobsDep) -> AuditJob:
    """Start an audit; poll `GET /v1/audits/{id}` for its progress and report."""
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
    if jobs.running() >= MAX_RUNNING:
        raise DomainError(
            ErrorKind.overloaded,
            "audits_busy",
            f"{MAX_RUNNING} audits are running; retry when one is done",
            retry_after_s=10,
        )
    name = verifier if isinstance(verifier, str) else " + ".join(f"{c.weight:g}*{c.name}" for c in verifier)
    job = AuditJob(
        id=uuid.uuid4().hex,
        status="running",
        verifier=name,
        progress={"done": 0, "total": 0},
        created=time.time(),
    )

    def progress(done: int, total: int) -> None:
        job.progress = {"done": done, "total": total}

    async def run() -> None:
        try:
            job.report = await run_audit(
                rows,
                verifier,
                scorer_backend(scorer, owner=("audit", job.id)),
                progress=progress,
                probes=body.probes,
                source=f"POST /v1/audits {job.id}",
                concurrency=AUDIT_CONCURRENCY,
            )
            job.status = "done"
        except Exception as exc:  # reported on the job; the service goes on
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"[:500]
        finally:
            job.finished = time.time()

    jobs.start(job.id, job, run())
    return job.model_copy(update={"report": None})


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
        **documented(401, 404, 422, 429, d404=f"No such audit (only the last {AUDITS_KEPT} are kept)"),
    },
)
async def get_audit(
    audit_id: str,
    jobs: AuditJobsDep,
    format: Literal["json", "markdown", "html"] = Query(default="json", description="The report's form"),
) -> Response | AuditJob:
    """The job: its progress while it runs, its report when done (`format=markdown|html`: the
    report alone, once done)."""
    job: AuditJob | None = jobs.get(audit_id)
    if job is None:
        raise DomainError(
            ErrorKind.not_found, "unknown_audit", f"no audit {audit_id!r} (kept: the last {jobs.keep})"
        )
    if format == "json" or job.report is None:
        return job
    if format == "markdown":
        return PlainTextResponse(audit_markdown(job.report), media_type="text/markdown")
    return HTMLResponse(audit_html(job.report))
