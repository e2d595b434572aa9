"""verl's reward functions over the Serve deployment's handle: no HTTP hop for a verl run on
the Ray cluster that runs Referee.

Point verl at this module instead of `referee.trainer_adapter.verl`; everything else (which
verifier, prompt ids, `return_dict`, batching of the reward loop's concurrent calls) is that
module's, only the connection differs::

    reward.custom_reward_function.path=pkg://referee.deploy.verl_reward
    reward.custom_reward_function.name=compute_score_async      # or compute_score

`url` defaults to ``ray://referee`` (the Serve application `referee serve --ray` starts);
``ray://NAME`` selects another application. Importing this module registers the `ray://`
scheme with the adapters' connections (`referee.trainer_adapter.register_scheme`), in every
process that loads it: verl imports the reward module by path in each worker.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from referee.client import RefereeUnavailable
from referee.grouping import ChunkPolicy, score_in_chunks
from referee.models import AdvantageConfig, GroupResult, GroupSpec, GroupsResponse, OnInvalid
from referee.trainer_adapter import register_scheme
from referee.trainer_adapter import verl as verl_adapter

__all__ = [
    "DEFAULT_URL",
    "HandleClient",
    "SyncHandleClient",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
]

DEFAULT_URL = "ray://referee"
T = TypeVar("T")


class HandleClient:
    """The part of `referee.client.AsyncClient` the adapters use (`score_groups`), through a
    `HandleScorer`: chunked as the HTTP client chunks (a verl batch exceeds one request)."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        chunks: ChunkPolicy | None = None,
        patience_s: float | None = None,
        retries: int | None = None,
    ) -> None:
        self.app_name = url.partition("://")[2].strip("/") or "referee"
        self.api_key = api_key
        self.chunks = chunks or ChunkPolicy()
        self.patience_s = patience_s  # reward_kwargs' `patience_s` / `retries`, as over HTTP
        self.retries = retries
        self._scorers: dict[OnInvalid, Any] = {}

    def _scorer(self, on_invalid: OnInvalid) -> Any:
        scorer = self._scorers.get(on_invalid)
        if scorer is None:
            # Imported here: Ray Serve is only needed once a request is sent.
            from referee.deploy.ray_rewarder import HandleScorer
            from referee.deploy.ray_serve import get_handle

            scorer = self._scorers[on_invalid] = HandleScorer(
                get_handle(self.app_name),
                api_key=self.api_key,
                on_invalid=on_invalid,
                patience_s=self.patience_s,
                retries=self.retries,
            )
        return scorer

    async def score_groups(
        self,
        groups: Sequence[GroupSpec],
        advantage: AdvantageConfig | None = None,
        on_invalid: OnInvalid = "reject",
    ) -> GroupsResponse:
        scorer = self._scorer(on_invalid)

        async def one(chunk: list[GroupSpec]) -> list[GroupResult]:
            return list((await scorer.score_groups(chunk, advantage)).groups)

        return GroupsResponse(groups=await score_in_chunks(one, list(groups), self.chunks))


class SyncHandleClient:
    """`HandleClient` for the synchronous functions (verl's batch reward manager)."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        patience_s: float | None = None,
        retries: int | None = None,
    ) -> None:
        self._async = HandleClient(url, api_key, patience_s=patience_s, retries=retries)

    def score_groups(
        self,
        groups: Sequence[GroupSpec],
        advantage: AdvantageConfig | None = None,
        on_invalid: OnInvalid = "reject",
    ) -> GroupsResponse:
        return _run(self._async.score_groups(groups, advantage, on_invalid))


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion from synchronous code, also when this thread already runs an
    event loop (then in a thread of its own, as a blocking call would anyway block the loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, name="referee-handle-call")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    if "value" not in box:
        raise RefereeUnavailable("the handle call ended without a result")
    value: T = box["value"]
    return value


register_scheme("ray", SyncHandleClient, HandleClient)


def compute_score_batch(*args: Any, url: str | None = DEFAULT_URL, **kwargs: Any) -> Any:
    """`referee.trainer_adapter.verl.compute_score_batch` through the handle."""
    return verl_adapter.compute_score_batch(*args, url=url or DEFAULT_URL, **kwargs)


def compute_score(*args: Any, url: str | None = DEFAULT_URL, **kwargs: Any) -> Any:
    """`referee.trainer_adapter.verl.compute_score` through the handle."""
    return verl_adapter.compute_score(*args, url=url or DEFAULT_URL, **kwargs)


async def compute_score_async(*args: Any, url: str | None = DEFAULT_URL, **kwargs: Any) -> Any:
    """`referee.trainer_adapter.verl.compute_score_async` through the handle."""
    return await verl_adapter.compute_score_async(*args, url=url or DEFAULT_URL, **kwargs)
