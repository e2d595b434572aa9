"""The dashboard: pages at `/ui`, rendered on the server (Jinja2), charts drawn by
Chart.js, data fragments refreshed by htmx. Both libraries are vendored under `static/vendor/`
(`scripts/vendor-ui.sh`): the service needs no network to serve them.

Pages: `/ui` (verifier activity over a picked range, 15 min to 24 h; mean reward,
zero-variance share; the caller's prompt difficulty and solved / unsolved prompts; the health
panel), `/ui/prompts/{id}` (one prompt's history), `/ui/verifiers` (installed verifiers, registered types with their
versions), `/ui/audits` (audit jobs, their reports, a cancel button on a running one). The
audits are those `/v1/audits` shows the same key (`routes_audits.Caller`: its own, an admin
key's every one); another key's report is 404 here as there.

Auth is the service's: open without keys; with keys, an API or admin key, sent as
`Authorization: Bearer <key>` or, from a browser, through a login at `/ui/login`, which opens a
server-side session (`referee.runtime.sessions`) whose random id is the HttpOnly cookie
(SameSite=Strict, Secure over TLS, path /ui); the key itself is never stored or sent back.
Logging out ends the session on the server. Failed logins are limited per client (429 with
Retry-After), and every state-changing form must come from this service's own pages
(`same_origin.py`, 403 otherwise). A page without a valid session or key redirects to the
login form, a data fragment answers 401. Every page carries a Content-Security-Policy that
runs only the service's own script files (the chart data is a `<script
type="application/json">` block, never executed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

import structlog
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from referee.audit import AuditReport, audit_html, audit_markdown
from referee.errors import DomainError, ErrorKind
from referee.runtime import BackgroundJobs, DashboardLogins, Runtime, SessionIdentity, client_of
from referee.service.auth import Auth, AuthError, Role
from referee.service.deps import AuditJobsDep, AuthDep, CatalogDep, RuntimeDep, StatsDep
from referee.service.routes_audits import AuditJob, Caller, cancel_visible, visible_job, visible_jobs
from referee.service.routes_stats import health_page, owner_label
from referee.service.same_origin import require_same_origin
from referee.service.security_headers import HEADERS, REPORT_HEADERS
from referee.service.ui_data import (
    RANGES,
    audit_rows,
    chosen_range,
    episode_figures,
    overview,
    prompt_view,
    session_figures,
    verifier_rows,
)
from referee.stats import Statistics

log = structlog.get_logger(__name__)

HERE = Path(__file__).resolve().parent
COOKIE = "referee_ui_session"  # a session id, never a key
REFRESH_S = 10
templates = Jinja2Templates(directory=HERE / "templates")
# Every state-changing request under /ui (login, logout, any form to come) must come from the
# service's own pages: 403 otherwise.
ui_router = APIRouter(include_in_schema=False, dependencies=[Depends(require_same_origin)])


def ui_static() -> StaticFiles:
    """The dashboard's script, style sheet and vendored libraries (mounted at /ui/static)."""
    return StaticFiles(directory=HERE / "static")


# ---- who is looking --------------------------------------------------------------------------


def _base(request: Request) -> str:
    """`/ui` under the app's root path (a proxy may mount the service below a prefix)."""
    return f"{request.scope.get('root_path', '').rstrip('/')}/ui"


def get_logins(runtime: RuntimeDep) -> DashboardLogins:
    return runtime.dashboard


LoginsDep = Annotated[DashboardLogins, Depends(get_logins)]


def _client(request: Request) -> str:
    # uvicorn puts the address a trusted proxy forwarded (X-Forwarded-For) here.
    return client_of(request.client.host if request.client else None)


class TooManyFailedLogins(DomainError):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(
            ErrorKind.throttled,
            "too_many_failed_logins",
            "too many failed logins from this address; retry after Retry-After seconds",
            retry_after_s=retry_after_s,
        )


@dataclass(frozen=True)
class Viewer:
    """A caller allowed to read the dashboard: its role and key digest (None when open)."""

    role: Role | None
    digest: bytes | None

    @property
    def owner(self) -> str:
        """Whose prompt statistics are shown: the caller's, as in GET /v1/stats/prompts."""
        return owner_label(self.digest)

    @property
    def caller(self) -> Caller:
        """Whose audits it sees: the API's rule (`Caller.of`), so a key sees the same audits
        on both."""
        return Caller.of(self.role, self.digest)


def _failed_login(logins: DashboardLogins, client: str) -> None:
    """Count a failure; logged once per client, at the one that makes it refused."""
    if logins.throttle.failed(client):
        log.warning("ui_login_refused", client=client, retry_after_s=math.ceil(logins.throttle.window_s))


def _bearer_viewer(request: Request, auth: Auth, logins: DashboardLogins, header: str) -> Viewer:
    """A key sent by a script: held to the failed-login limit like the form, so the fragments
    are no faster a way to guess keys."""
    client = _client(request)
    wait = logins.throttle.retry_after(client)
    if wait is not None:
        raise TooManyFailedLogins(wait)
    try:
        role, digest = auth.identify(header)
    except AuthError:
        _failed_login(logins, client)
        raise
    return Viewer(role, digest)


def identify(request: Request, auth: AuthDep, logins: LoginsDep) -> Viewer:
    """The caller, from `Authorization: Bearer` or the session cookie; AuthError (401) if none."""
    if auth.open:
        return Viewer(None, None)
    header = request.headers.get("authorization")
    if header:
        return _bearer_viewer(request, auth, logins, header)
    session = logins.sessions.find(request.cookies.get(COOKIE))
    if session is None:
        raise AuthError(ErrorKind.unauthenticated, "no live dashboard session: log in at /ui/login")
    return Viewer(Role(session.role), session.key_digest)


def page_viewer(request: Request, auth: AuthDep, logins: LoginsDep) -> Viewer | None:
    """The caller of a page; None sends it to the login form."""
    try:
        return identify(request, auth, logins)
    except AuthError:
        return None


# Fragments answer 401 without a key, like the API; pages redirect to the login form.
FragmentViewer = Annotated[Viewer, Depends(identify)]
PageViewer = Annotated[Viewer | None, Depends(page_viewer)]


def _to_login(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(
        f"{_base(request)}/login?next={quote(target, safe='/')}", status_code=303, headers=HEADERS
    )


def _safe_next(request: Request, target: str | None) -> str:
    """Where to go after logging in: a dashboard path only (never another site)."""
    base = _base(request)
    inside = target is not None and (target == base or target.startswith((base + "/", base + "?")))
    if inside and target is not None and "//" not in target and "\\" not in target:
        return target
    return base


# ---- rendering ------------------------------------------------------------------------------


def _render(
    request: Request, auth: Auth, name: str, viewer: Viewer | None, status_code: int = 200, **context: Any
) -> HTMLResponse:
    context.update(
        ui=_base(request),
        viewer=viewer,
        open=auth.open,
        refresh_s=REFRESH_S,
    )
    return templates.TemplateResponse(request, name, context, status_code=status_code, headers=HEADERS)


# ---- pages ----------------------------------------------------------------------------------


async def _overview(
    runtime: Runtime, stats: Statistics | None, viewer: Viewer, minutes: int | None
) -> dict[str, Any]:
    """The overview's context for the picked range (`GET /v1/stats/...`'s figures: every
    replica's through the shared store when there is one)."""
    window = chosen_range(minutes)
    scoped = runtime.scoped_stats
    if stats is None or scoped is None:
        return overview(None, viewer.owner) | {"role": viewer.role}
    snapshot = await scoped.snapshot(window)
    health = health_page(runtime, snapshot, window, RANGES[window], scoped.now_minute())
    sessions = session_figures(runtime.code_sessions)
    return overview(stats, viewer.owner, health, window, snapshot) | {
        "role": viewer.role,
        "sessions": sessions,
        "episodes": episode_figures(runtime.environments.episodes),
    }


@ui_router.get("/ui", response_class=HTMLResponse)
async def overview_page(
    request: Request,
    auth: AuthDep,
    viewer: PageViewer,
    runtime: RuntimeDep,
    stats: StatsDep,
    minutes: int | None = None,
) -> Response:
    """`?minutes=15|60|360|1440`: the range picker (an hour by default)."""
    if viewer is None:
        return _to_login(request)
    context = await _overview(runtime, stats, viewer, minutes)
    return _render(request, auth, "overview.html", viewer, page="overview", **context)


@ui_router.get("/ui/prompts/{prompt_id:path}", response_class=HTMLResponse)
async def prompt_page(
    request: Request, auth: AuthDep, viewer: PageViewer, stats: StatsDep, prompt_id: str
) -> Response:
    """One of the viewer's prompts (`GET /v1/stats/prompts/{prompt_id}`); 404 if untracked."""
    if viewer is None:
        return _to_login(request)
    context = prompt_view(stats, viewer.owner, prompt_id)
    status = 200 if context["detail"] is not None else 404
    return _render(request, auth, "prompt.html", viewer, status, page="prompt", **context)


@ui_router.get("/ui/verifiers", response_class=HTMLResponse)
async def verifiers_page(
    request: Request, auth: AuthDep, viewer: PageViewer, catalog: CatalogDep
) -> Response:
    if viewer is None:
        return _to_login(request)
    rows = await verifier_rows(catalog)
    return _render(request, auth, "verifiers.html", viewer, page="verifiers", **rows)


@ui_router.get("/ui/audits", response_class=HTMLResponse)
async def audits_page(request: Request, auth: AuthDep, viewer: PageViewer, jobs: AuditJobsDep) -> Response:
    if viewer is None:
        return _to_login(request)
    rows = audit_rows(visible_jobs(jobs, viewer.caller))
    return _render(request, auth, "audits.html", viewer, page="audits", audits=rows, max_kept=jobs.keep)


def _report(jobs: BackgroundJobs[AuditJob], audit_id: str, viewer: Viewer) -> AuditReport:
    """A finished audit's report; 404 for an unknown id, another key's audit, or one unfinished."""
    report = visible_job(jobs, audit_id, viewer.caller).report
    if report is None:
        raise DomainError(ErrorKind.not_found, "unknown_audit", f"no finished audit {audit_id!r}")
    return report


@ui_router.get("/ui/audits/{audit_id}/report.html", response_class=HTMLResponse)
async def audit_report_html(
    request: Request, audit_id: str, viewer: PageViewer, jobs: AuditJobsDep
) -> Response:
    if viewer is None:
        return _to_login(request)
    return HTMLResponse(audit_html(_report(jobs, audit_id, viewer)), headers=REPORT_HEADERS)


@ui_router.get("/ui/audits/{audit_id}/report.md", response_class=PlainTextResponse)
async def audit_report_markdown(
    request: Request, audit_id: str, viewer: PageViewer, jobs: AuditJobsDep
) -> Response:
    if viewer is None:
        return _to_login(request)
    # text/plain so that a browser shows it rather than downloading it.
    return PlainTextResponse(audit_markdown(_report(jobs, audit_id, viewer)), headers=REPORT_HEADERS)


@ui_router.post("/ui/audits/{audit_id}/cancel")
async def cancel_audit(request: Request, audit_id: str, viewer: PageViewer, jobs: AuditJobsDep) -> Response:
    """The audits page's cancel button: `DELETE /v1/audits/{id}`'s cancel (same-origin forms
    only, like every POST under /ui), then back to the page. An audit that ended meanwhile is
    left as it is (DELETE would forget it; a button that said "cancel" should not)."""
    audits = f"{_base(request)}/audits"
    if viewer is None:
        return RedirectResponse(
            f"{_base(request)}/login?next={quote(audits, safe='/')}", status_code=303, headers=HEADERS
        )
    await cancel_visible(jobs, audit_id, viewer.caller)
    return RedirectResponse(audits, status_code=303, headers=HEADERS)


@ui_router.get("/favicon.ico")
async def favicon() -> Response:
    """Browsers ask for it on every page without an icon link (the audit reports): the
    dashboard's icon rather than a 404 in their console."""
    return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")


# ---- fragments (htmx): 401 without a key, like the API ----------------------------------------


@ui_router.get("/ui/fragments/overview", response_class=HTMLResponse)
async def overview_fragment(
    request: Request,
    auth: AuthDep,
    viewer: FragmentViewer,
    runtime: RuntimeDep,
    stats: StatsDep,
    minutes: int | None = None,
) -> Response:
    context = await _overview(runtime, stats, viewer, minutes)
    return _render(request, auth, "_overview_data.html", viewer, **context)


@ui_router.get("/ui/fragments/audits", response_class=HTMLResponse)
async def audits_fragment(
    request: Request, auth: AuthDep, viewer: FragmentViewer, jobs: AuditJobsDep
) -> Response:
    rows = audit_rows(visible_jobs(jobs, viewer.caller))
    return _render(request, auth, "_audits_table.html", viewer, audits=rows, max_kept=jobs.keep)


# ---- login ----------------------------------------------------------------------------------


@ui_router.get("/ui/login", response_class=HTMLResponse)
async def login_form(request: Request, auth: AuthDep, next: str | None = None) -> Response:
    return _render(
        request, auth, "login.html", None, page="login", next=_safe_next(request, next), error=None
    )


def _form(body: bytes) -> dict[str, str]:
    """An url-encoded form's fields (the first value of each); {} for anything else."""
    try:
        fields = parse_qs(body.decode("utf-8", errors="replace"), max_num_fields=8)
    except ValueError:
        return {}
    return {name: values[0] for name, values in fields.items()}


@ui_router.post("/ui/login", response_class=HTMLResponse)
async def login(request: Request, auth: AuthDep, logins: LoginsDep) -> Response:
    """Form fields `key` and `next`. A valid API or admin key opens a session (its id in the
    cookie) and goes on to `next`; a wrong one shows the form again with 401, and a client with
    too many recent failures gets it with 429 and `Retry-After`, its key unchecked."""
    form = _form(await request.body())
    key = form.get("key", "").strip()
    target = _safe_next(request, form.get("next"))
    if auth.open:
        return RedirectResponse(target, status_code=303, headers=HEADERS)
    client = _client(request)
    wait = logins.throttle.retry_after(client)
    if wait is not None:
        seconds = max(1, math.ceil(wait))
        page = _render(
            request,
            auth,
            "login.html",
            None,
            429,
            page="login",
            next=target,
            error=f"Too many failed logins from your address: try again in {seconds} s.",
        )
        page.headers["Retry-After"] = str(seconds)
        return page
    try:
        role, digest = auth.identify(f"Bearer {key}")
    except AuthError:
        _failed_login(logins, client)
        return _render(
            request, auth, "login.html", None, 401, page="login", next=target, error="Unknown key."
        )
    # A new id at every login (never one the browser brought), and the old session ends.
    logins.sessions.revoke(request.cookies.get(COOKIE))
    session_id = logins.sessions.open(SessionIdentity(role.value, digest))
    response = RedirectResponse(target, status_code=303, headers=HEADERS)
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=math.ceil(logins.sessions.max_age_s),
        path=_base(request),
        httponly=True,
        samesite="strict",
        # uvicorn takes the scheme from X-Forwarded-Proto when a trusted proxy sends it.
        secure=request.url.scheme == "https",
    )
    return response


@ui_router.post("/ui/logout")
async def logout(request: Request, logins: LoginsDep) -> Response:
    """Ends the session on the server (its cookie opens nothing any more) and clears the cookie."""
    logins.sessions.revoke(request.cookies.get(COOKIE))
    response = RedirectResponse(f"{_base(request)}/login", status_code=303, headers=HEADERS)
    response.delete_cookie(
        COOKIE, path=_base(request), httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return response
