"""Python client for the Referee HTTP API (httpx; sync and async)."""

from referee.client._async import AsyncClient
from referee.client._common import RefereeError, RefereeHTTPError, RefereeUnavailable
from referee.client._sync import Client

__all__ = ["AsyncClient", "Client", "RefereeError", "RefereeHTTPError", "RefereeUnavailable"]
