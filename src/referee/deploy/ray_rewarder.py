"""A `GroupRewarder` for trainers on the Ray cluster that runs Referee: it calls the Serve
deployment's replicas through a `DeploymentHandle`, with no HTTP hop.

Same methods and results as `referee.trainer_adapter.GroupRewarder` (it is one, with a
`HandleScorer` in place of the HTTP client). What the HTTP client waits out, this waits out
too, for the same `patience_s`: a 503 (`overloaded` after its `Retry-After`), 429, 502, 504, and
a replica that died or became unreachable while it held the request (scoring has no side
effect, so the request is sent again and Serve routes it to a live replica); every other error
status raises `RefereeHTTPError`.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Any

import httpx
from ray.exceptions import RayActorError
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from ray.serve.handle import DeploymentHandle

from referee.client import Attempts, Outage, RefereeHTTPError, RetryPolicy
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
    """A `GroupScorer` over a Serve `DeploymentHandle` of `RefereeDeployment`.

    It waits as the HTTP client waits (`referee.client`'s patience): a replica lost while it
    held the request, or none up yet, and answers 429/502/503/504 are retried with backoff
    (after `Retry-After` when given) for up to `patience_s` per request, one outage logged
    once; `lost_replica_patience_s` and `overload_patience_s` are former names of it."""

    def __init__(
        self,
        handle: DeploymentHandle,
        *,
        api_key: str | None = None,
        on_invalid: OnInvalid = "reject",
        patience_s: float | None = None,
        retries: int | None = None,
        lost_replica_patience_s: float | None = None,
        overload_patience_s: float | None = None,
    ) -> None:
        self.handle = handle
        self.api_key = api_key
        self.on_invalid: OnInvalid = on_invalid
        former = lost_replica_patience_s if lost_replica_patience_s is not None else overload_patience_s
        # A lost replica is replaced within seconds: a shorter backoff than over HTTP.
        self.policy = replace(
            RetryPolicy.of(patience_s, retries, overload_patience_s=former), backoff_s=0.1, max_backoff_s=2.0
        )
        self.outage = Outage(
            f"ray://{getattr(handle, 'app_name', None) or 'referee'}", self.policy.patience_s
        )
        self.retries = 0  # requests sent again (a lost replica, an overload), for tests and logs

    @property
    def patience_s(self) -> float:
        return self.policy.patience_s

    async def score_groups(
        self, groups: list[GroupSpec], advantage: AdvantageConfig | None = None
    ) -> GroupsResponse:
        request = GroupsRequest(
            groups=groups, advantage=advantage or AdvantageConfig(), on_invalid=self.on_invalid
        )
        _status, _headers, body = await self._send(request.model_dump_json().encode())
        return GroupsResponse.model_validate_json(body)

    async def _send(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        attempts = Attempts(self.policy, self.outage, "groups (Serve handle)")
        while True:
            sent_at = time.monotonic()
            try:
                status, headers, content = await self.handle.groups.remote(body, self.api_key)
            except REPLICA_LOST as exc:
                wait = attempts.after_error(exc, sent_at)
            else:
                # The same rules as the HTTP client's, read from the same kind of answer.
                answer = httpx.Response(status, headers=headers, content=content)
                found = attempts.after_response(answer, sent_at)
                if found is None:
                    _raise_for_status(status, content)
                    return status, headers, content
                wait = found
            await asyncio.sleep(wait)
            self.retries += 1


def _raise_for_status(status: int, content: bytes) -> None:
    if status < 400:
        return
    error = _error_body(status, content)
    raise RefereeHTTPError(
        status, str(error.get("error", "http_error")), str(error.get("message", "")), error.get("detail")
    )


def _error_body(status: int, content: bytes) -> dict[str, Any]:
    try:
        body = json.loads(content)
    except ValueError:
        return {"error": "http_error", "message": content[:500].decode(errors="replace")}
    return body if isinstance(body, dict) else {"error": "http_error", "message": str(body)[:500]}


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
        patience_s: float | None = None,
        retries: int | None = None,
        lost_replica_patience_s: float | None = None,
        **kwargs: Any,
    ) -> None:
        if handle is None:
            from referee.deploy.ray_serve import get_handle

            handle = get_handle(app_name)
        self.handle_scorer = HandleScorer(
            handle,
            api_key=api_key,
            patience_s=patience_s,
            retries=retries,
            lost_replica_patience_s=lost_replica_patience_s,
        )
        super().__init__(self.handle_scorer, **kwargs)
