"""Asynchronous client: the same methods as `Client`, awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from referee.client import _common as c
from referee.client import _patience as p
from referee.client import _sessions as s
from referee.grouping import ChunkPolicy, score_in_chunks
from referee.models import (
    AdvantageConfig,
    GroupResult,
    GroupSpec,
    GroupsRequest,
    GroupsResponse,
    OnInvalid,
    OpenRLHFRequest,
    OpenRLHFResponse,
    PromptFilter,
    PromptStatsPage,
    ScoreRequest,
    Verdict,
    VerifierInfo,
    VerifierStatsPage,
)


class AsyncClient:
    """`await AsyncClient(url).score("math", response, reference)`; reuse one instance (connection pool)."""

    def __init__(
        self,
        base_url: str = c.DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        patience_s: float | None = None,
        retries: int | None = None,
        backoff_s: float = 0.25,
        overload_patience_s: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        chunks: ChunkPolicy | None = None,
    ) -> None:
        """`patience_s` (default 900): how long one request waits out a service that is down,
        restarting or overloaded before it fails (`referee.client._patience`);
        `overload_patience_s` is its former name. `retries`: at most this many resends after a
        failure (None: patience alone decides). `timeout`: for one answer; a read timeout is
        not resent."""
        self._retry = p.RetryPolicy.of(patience_s, retries, backoff_s, overload_patience_s)
        self._chunks = chunks or ChunkPolicy()
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout,
            headers=c.auth_headers(api_key),
            transport=transport,
            limits=s.POOL_LIMITS,
        )
        self._outage = p.Outage(base_url, self._retry.patience_s)

    async def _request(
        self,
        method: str,
        path: str,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        resend: s.Resend = s.IDEMPOTENT,
    ) -> httpx.Response:
        """`resend`: which failures this request may be sent again after (`_sessions.Resend`)."""
        what = f"{method} {path}"
        attempts = p.Attempts(self._retry, self._outage, what)
        while True:
            sent_at = time.monotonic()
            try:
                response = await self._http.request(method, path, json=json, params=params)
            except p.RESEND_EXCEPTIONS as exc:
                await asyncio.sleep(resend.after_error(exc, attempts, sent_at, what))
                continue
            except httpx.TimeoutException as exc:
                # Not resent: the service is still working on it (see referee.client._patience).
                raise c.RefereeUnavailable(f"{what}: no answer in time ({exc!r})") from exc
            wait = resend.after_response(response, attempts, sent_at)
            if wait is not None:
                await asyncio.sleep(wait)
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
        on_invalid: OnInvalid = "reject",
    ) -> GroupsResponse:
        """Any number of groups: sent in chunks (`ChunkPolicy`), concurrently, results in order."""
        request = c.groups_request(groups, advantage, on_invalid)

        async def post(chunk: list[GroupSpec]) -> list[GroupResult]:
            body = c.chunk_body(request, chunk)
            return c.parse_groups(await self._request("POST", "/v1/groups", body)).groups

        return GroupsResponse(groups=await score_in_chunks(post, request.groups, self._chunks))

    async def openrlhf_reward(
        self,
        request: OpenRLHFRequest | Mapping[str, Any],
        params: Mapping[str, Any] | None = None,
        path: str = c.OPENRLHF_PATH,
    ) -> OpenRLHFResponse:
        """OpenRLHF's remote reward protocol (`{query, prompts, labels}`), with the client's
        patience; `params` are the route's query (`verifier`, `on_error`, `strip_eos`)."""
        body = c.openrlhf_payload(request)
        return c.parse_openrlhf(await self._request("POST", path, body, params=params))

    async def verifiers(self) -> list[VerifierInfo]:
        return c.parse_verifiers(await self._request("GET", "/v1/verifiers"))

    async def prompt_stats(
        self, filter: PromptFilter | str = "all", last: int = 1, limit: int = 100, offset: int = 0
    ) -> PromptStatsPage:
        """This key's per-prompt statistics (`GET /v1/stats/prompts`), most recently seen first:
        `filter="always_solved", last=3` lists the prompts every sample of which passed in each
        of their latest 3 visits. One page (`limit` up to 10,000); `matched` counts them all."""
        params = c.prompt_stats_params(filter, last, limit, offset)
        return c.parse_prompt_stats(await self._request("GET", "/v1/stats/prompts", params=params))

    async def verifier_stats(self, minutes: int = 60) -> VerifierStatsPage:
        """Per verifier over the last `minutes` (`GET /v1/stats/verifiers`): the service's, all callers."""
        params = {"minutes": minutes}
        return c.parse_verifier_stats(await self._request("GET", "/v1/stats/verifiers", params=params))

    async def open_session(
        self,
        language: str = "python",
        limits: Mapping[str, Any] | None = None,
        files: Mapping[str, str] | None = None,
        idle_ttl_s: float | None = None,
    ) -> AsyncSession:
        """A stateful code session (`Client.open_session`): `async with await
        client.open_session() as py: await py.run("x = 1")`."""
        body = s.session_body(language, limits, files, idle_ttl_s)
        response = await self._request("POST", "/v1/sessions", body, resend=s.CREATE)
        return AsyncSession(self, s.parse_session(response))

    async def run(self, session_id: str, code: str, time_s: float | None = None) -> s.RunResult:
        """Run `code` in a session; never sent twice (`Client.run`)."""
        path = f"{s.session_path(session_id)}/run"
        return s.parse_run(await self._request("POST", path, s.run_body(code, time_s), resend=s.ONCE))

    async def session_state(self, session_id: str) -> s.SessionState:
        return s.parse_state(await self._request("GET", s.session_path(session_id)))

    async def list_sessions(self) -> list[s.SessionState]:
        """This key's open sessions."""
        return s.parse_states(await self._request("GET", "/v1/sessions"))

    async def close_session(self, session_id: str) -> bool:
        """End a session; False when it was already gone (closed, expired, unknown)."""
        return await self._delete(s.session_path(session_id))

    async def list_environments(self) -> list[s.EnvironmentInfo]:
        return s.parse_environments(await self._request("GET", "/v1/environments"))

    async def start_episode(
        self, name: str, task: Mapping[str, Any] | None = None, seed: int | None = None
    ) -> s.Episode:
        """Start an episode of environment `name` (`Client.start_episode`)."""
        body = s.episode_body(task, seed)
        return s.parse_episode(name, await self._request("POST", s.episode_path(name), body, resend=s.CREATE))

    async def step(self, name: str, episode_id: str, action: Mapping[str, Any]) -> s.StepResult:
        """One action (`tool_call(...)` or `message(...)`); never sent twice."""
        path = f"{s.episode_path(name, episode_id)}/step"
        return s.parse_step(await self._request("POST", path, {"action": dict(action)}, resend=s.ONCE))

    async def verify(self, name: str, episode_id: str, response: str | None = None) -> Verdict:
        """The episode's verdict; `response` None judges its final message."""
        path = f"{s.episode_path(name, episode_id)}/verify"
        body = {"response": response}
        return c.parse_verdict(await self._request("POST", path, body, resend=s.BACKPRESSURE))

    async def end_episode(self, name: str, episode_id: str) -> bool:
        """End an episode (and its code session); False when it was already gone."""
        return await self._delete(s.episode_path(name, episode_id))

    async def _delete(self, path: str) -> bool:
        try:
            await self._request("DELETE", path)
        except c.RefereeHTTPError as exc:
            if exc.status_code == 404:
                return False
            raise
        return True

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class AsyncSession(s.SessionHandle):
    """A code session of an `AsyncClient` (`Session`, awaited)."""

    client: AsyncClient

    async def run(self, code: str, time_s: float | None = None) -> s.RunResult:
        return await self.client.run(self.id, code, time_s)

    async def state(self) -> s.SessionState:
        return await self.client.session_state(self.id)

    async def close(self) -> None:
        """End the session (idempotent; a session the service already ended is fine)."""
        if not self.closed:
            self.closed = True
            await self.client.close_session(self.id)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
