"""Asynchronous client: the same methods as `Client`, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from referee.client import _common as c
from referee.models import (
    AdvantageConfig,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    ScoreRequest,
    Verdict,
    VerifierInfo,
)


class AsyncClient:
    """`await AsyncClient(url).score("math", response, reference)`; reuse one instance (connection pool)."""

    def __init__(
        self,
        base_url: str = c.DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff_s: float = 0.25,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._retry = c.RetryPolicy(retries=retries, backoff_s=backoff_s)
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout,
            headers=c.auth_headers(api_key),
            transport=transport,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

    async def _request(self, method: str, path: str, json: Any = None) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(method, path, json=json)
            except c.RETRY_EXCEPTIONS as exc:
                if attempt >= self._retry.retries:
                    raise c.RefereeUnavailable(f"{method} {path}: {exc!r}") from exc
                await asyncio.sleep(self._retry.delay(attempt))
                attempt += 1
                continue
            except httpx.TimeoutException as exc:
                # Not retried: the service may still be working on it (see RETRY_EXCEPTIONS).
                raise c.RefereeUnavailable(f"{method} {path}: no answer in time ({exc!r})") from exc
            if response.status_code in c.RETRY_STATUSES and attempt < self._retry.retries:
                await asyncio.sleep(self._retry.delay(attempt, response.headers.get("Retry-After")))
                attempt += 1
                continue
            c.raise_for_error(response)
            return response

    async def score(
        self, verifier: str, response: str, reference: Any = None, options: Mapping[str, Any] | None = None
    ) -> Verdict:
        return c.parse_verdict(
            await self._request("POST", "/v1/score", c.score_payload(verifier, response, reference, options))
        )

    async def score_batch(self, items: Sequence[ScoreRequest | Mapping[str, Any]]) -> list[Verdict]:
        return c.parse_batch(await self._request("POST", "/v1/score", c.batch_payload(items)))

    async def score_groups(
        self,
        groups: Sequence[GroupSpec | Mapping[str, Any]] | GroupsRequest,
        advantage: AdvantageConfig | None = None,
    ) -> GroupsResponse:
        return c.parse_groups(await self._request("POST", "/v1/groups", c.groups_payload(groups, advantage)))

    async def verifiers(self) -> list[VerifierInfo]:
        return c.parse_verifiers(await self._request("GET", "/v1/verifiers"))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
