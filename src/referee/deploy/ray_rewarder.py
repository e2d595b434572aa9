"""A `GroupRewarder` for trainers on the Ray cluster that runs Referee: it calls the Serve
deployment's replicas through a `DeploymentHandle`, with no HTTP hop.

Same methods and results as `referee.trainer_adapter.GroupRewarder` (it is one, with a
`HandleScorer` in place of the HTTP client). What the HTTP client retries, this retries too:
a 503 `overloaded` after its `Retry-After`, a 429, and a replica that died or became unreachable
while it held the request (scoring has no side effect, so the request is sent again and Serve
routes it to a live replica); every other error status raises `RefereeHTTPError`.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

from ray.exceptions import RayActorError
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from ray.serve.handle import DeploymentHandle

from referee.client import RefereeHTTPError, RefereeUnavailable
from referee.models import AdvantageConfig, GroupSpec, GroupsRequest, GroupsResponse, OnInvalid
from referee.trainer_adapter import GroupRewarder

# What a replica's death looks like to a handle caller: the actor died (killed, its node
# lost) or cannot be reached for now, or no replica is up yet.
REPLICA_LOST: tuple[type[BaseException], ...] = (
    RayActorError,
    DeploymentUnavailableError,
    BackPressureError,
)


class HandleScorer:
    """A `GroupScorer` over a Serve `DeploymentHandle` of `RefereeDeployment`."""

    def __init__(
        self,
        handle: DeploymentHandle,
        *,
        api_key: str | None = None,
        on_invalid: OnInvalid = "reject",
        lost_replica_patience_s: float = 120.0,
        overload_patience_s: float = 900.0,
    ) -> None:
        self.handle = handle
        self.api_key = api_key
        self.on_invalid: OnInvalid = on_invalid
        self.lost_replica_patience_s = lost_replica_patience_s
        self.overload_patience_s = overload_patience_s
        self.retries = 0  # requests sent again (a lost replica, an overload), for tests and logs

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None
    ) -> GroupsResponse:
        request = GroupsRequest(
            groups=groups, advantage=advantage or AdvantageConfig(), on_invalid=self.on_invalid
        )
        _status, _headers, body = await self._send(request.model_dump_json().encode())
        return GroupsResponse.model_validate_json(body)

    async def _send(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        start = time.monotonic()
        attempt = 0
        while True:
            try:
                status, headers, content = await self.handle.groups.remote(body, self.api_key)
            except REPLICA_LOST as exc:
                waited = time.monotonic() - start
                if waited > self.lost_replica_patience_s:
                    raise RefereeUnavailable(f"no Referee replica answered in {waited:.0f}s: {exc}") from exc
                await asyncio.sleep(random.uniform(0, min(2.0, 0.1 * 2**attempt)))
            else:
                if status < 400:
                    return status, headers, content
                error = _error_body(status, content)
                retryable = status == 429 or (status == 503 and error.get("error") == "overloaded")
                waited = time.monotonic() - start
                if not retryable or waited > self.overload_patience_s:
                    raise RefereeHTTPError(
                        status,
                        str(error.get("error", "http_error")),
                        str(error.get("message", "")),
                        error.get("detail"),
                    )
                told = _retry_after(headers)
                await asyncio.sleep(told * random.uniform(1.0, 1.25))
            attempt += 1
            self.retries += 1


def _error_body(status: int, content: bytes) -> dict[str, Any]:
    try:
        body = json.loads(content)
    except ValueError:
        return {"error": "http_error", "message": content[:500].decode(errors="replace")}
    return body if isinstance(body, dict) else {"error": "http_error", "message": str(body)[:500]}


def _retry_after(headers: dict[str, str]) -> float:
    try:
        return min(60.0, max(0.5, float(headers.get("retry-after") or 1)))
    except ValueError:
        return 1.0


class RayGroupRewarder(GroupRewarder):
    """`GroupRewarder` whose requests go to the Serve deployment through a handle.

    ``RayGroupRewarder(verifier="math")`` finds the deployment of the Serve application
    `referee` (the default of `referee serve --ray`); pass `handle=` or `app_name=` otherwise.
    The other keywords are `GroupRewarder`'s (chunking, advantage, options).
    """

    def __init__(
        self,
        handle: DeploymentHandle | None = None,
        *,
        app_name: str = "referee",
        api_key: str | None = None,
        lost_replica_patience_s: float = 120.0,
        **kwargs: Any,
    ) -> None:
        if handle is None:
            from referee.deploy.ray_serve import get_handle

            handle = get_handle(app_name)
        self.handle_scorer = HandleScorer(
            handle, api_key=api_key, lost_replica_patience_s=lost_replica_patience_s
        )
        super().__init__(self.handle_scorer, **kwargs)
