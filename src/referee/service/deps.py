"""FastAPI dependency providers: the runtime's long-lived objects and the auth checks.

Every route gets what it needs from here, typed, instead of reading `request.app.state`: this
module is the only reader of the app's state (`serve_runtime` is its only writer, besides
`install_auth`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from referee.registered import VerifierCatalog
from referee.runtime import BackgroundJobs, Runtime
from referee.scoring import Scorer
from referee.service.auth import OWNER_KEY, Auth, Role
from referee.service.metrics import Metrics
from referee.stats import Statistics


def serve_runtime(app: FastAPI, runtime: Runtime, metrics: Metrics) -> None:
    """Make `runtime` (and the app's metrics) what the providers below hand out."""
    app.state.runtime = runtime
    app.state.metrics = metrics


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_scorer(runtime: RuntimeDep) -> Scorer:
    return runtime.scorer


def get_catalog(runtime: RuntimeDep) -> VerifierCatalog:
    return runtime.catalog


def get_stats(runtime: RuntimeDep) -> Statistics | None:
    """The service's statistics; None when switched off (REFEREE_STATS=false)."""
    return runtime.stats


def get_audit_jobs(runtime: RuntimeDep) -> BackgroundJobs[Any]:
    return runtime.audits


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def get_auth(request: Request) -> Auth:
    auth: Auth = request.app.state.auth
    return auth


def get_owner(request: Request) -> Hashable:
    """Who the request's work is for: its key (set by KeyGate), or None in open mode."""
    owner: Hashable = request.scope.get("state", {}).get(OWNER_KEY)
    return owner


AuthDep = Annotated[Auth, Depends(get_auth)]

# Declares the bearer scheme in the OpenAPI document; the checks below (and KeyGate before
# them) read the header themselves, so a missing key is the service's own 401 body.
_BEARER = HTTPBearer(
    auto_error=False,
    description="An API key (scoring, catalog) or admin key (also registration); "
    "required when REFEREE_API_KEYS or REFEREE_ADMIN_KEYS is set.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]


async def require_client(request: Request, auth: AuthDep, _: Credentials) -> None:
    """Scoring and catalog reads: an API or admin key (when keys are configured)."""
    auth.require(request, Role.client)


async def require_admin(request: Request, auth: AuthDep, _: Credentials) -> None:
    """Registration and deletion: an admin key (when keys are configured)."""
    auth.require(request, Role.admin)


ScorerDep = Annotated[Scorer, Depends(get_scorer)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
CatalogDep = Annotated[VerifierCatalog, Depends(get_catalog)]
StatsDep = Annotated[Statistics | None, Depends(get_stats)]
AuditJobsDep = Annotated[BackgroundJobs[Any], Depends(get_audit_jobs)]
OwnerDep = Annotated[Hashable, Depends(get_owner)]
CLIENT = [Depends(require_client)]
ADMIN = [Depends(require_admin)]
