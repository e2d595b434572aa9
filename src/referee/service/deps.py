"""FastAPI dependency providers: the service's long-lived objects and the auth checks.

Every route gets what it needs from here, typed, instead of reading `request.app.state`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from referee.registered import VerifierCatalog
from referee.scoring import Scorer
from referee.service.auth import OWNER_KEY, Auth, Role
from referee.service.metrics import Metrics


def get_scorer(request: Request) -> Scorer:
    scorer: Scorer = request.app.state.scorer
    return scorer


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def get_catalog(request: Request) -> VerifierCatalog:
    catalog: VerifierCatalog = request.app.state.catalog
    return catalog


def get_owner(request: Request) -> Hashable:
    """Who the request's work is for: its key (set by KeyGate), or None in open mode."""
    owner: Hashable = request.scope.get("state", {}).get(OWNER_KEY)
    return owner


def _auth(request: Request) -> Auth:
    auth: Auth = request.app.state.auth
    return auth


# Declares the bearer scheme in the OpenAPI document; the checks below (and KeyGate before
# them) read the header themselves, so a missing key is the service's own 401 body.
_BEARER = HTTPBearer(
    auto_error=False,
    description="An API key (scoring, catalog) or admin key (also registration); "
    "required when REFEREE_API_KEYS or REFEREE_ADMIN_KEYS is set.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]


async def require_client(request: Request, _: Credentials) -> None:
    """Scoring and catalog reads: an API or admin key (when keys are configured)."""
    _auth(request).require(request, Role.client)


async def require_admin(request: Request, _: Credentials) -> None:
    """Registration and deletion: an admin key (when keys are configured)."""
    _auth(request).require(request, Role.admin)


ScorerDep = Annotated[Scorer, Depends(get_scorer)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
CatalogDep = Annotated[VerifierCatalog, Depends(get_catalog)]
OwnerDep = Annotated[Hashable, Depends(get_owner)]
CLIENT = [Depends(require_client)]
ADMIN = [Depends(require_admin)]
