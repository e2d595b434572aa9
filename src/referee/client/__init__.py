"""Python client for the Referee HTTP API (httpx; sync and async)."""

from referee.client._async import AsyncClient
from referee.client._common import RefereeError, RefereeHTTPError, RefereeUnavailable
from referee.client._patience import DEFAULT_PATIENCE_S, Attempts, Outage, RetryPolicy
from referee.client._sync import Client

# `RetryPolicy`, `Outage` and `Attempts` are the clients' patience, for other transports to
# the same service (`referee.deploy`'s Ray Serve handle) to wait alike.
__all__ = [
    "DEFAULT_PATIENCE_S",
    "AsyncClient",
    "Attempts",
    "Client",
    "Outage",
    "RefereeError",
    "RefereeHTTPError",
    "RefereeUnavailable",
    "RetryPolicy",
]
