"""Python client for the Referee HTTP API (httpx; sync and async)."""

from referee.client._async import AsyncClient, AsyncSession
from referee.client._common import RefereeError, RefereeHTTPError, RefereeUnavailable
from referee.client._patience import DEFAULT_PATIENCE_S, Attempts, Outage, RetryPolicy
from referee.client._sessions import (
    EnvironmentInfo,
    Episode,
    RunResult,
    SessionInfo,
    SessionState,
    StepResult,
    message,
    tool_call,
)
from referee.client._sync import Client, Session

# `RetryPolicy`, `Outage` and `Attempts` are the clients' patience, for other transports to
# the same service (`referee.deploy`'s Ray Serve handle) to wait alike.
__all__ = [
    "DEFAULT_PATIENCE_S",
    "AsyncClient",
    "AsyncSession",
    "Attempts",
    "Client",
    "EnvironmentInfo",
    "Episode",
    "Outage",
    "RefereeError",
    "RefereeHTTPError",
    "RefereeUnavailable",
    "RetryPolicy",
    "RunResult",
    "Session",
    "SessionInfo",
    "SessionState",
    "StepResult",
    "message",
    "tool_call",
]
