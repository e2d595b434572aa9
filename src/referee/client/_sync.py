"""Synchronous client."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

import httpx

from referee.client import _common as c
from referee.client import _patience as p
from referee.client import _sessions as s
from referee.grouping import ChunkPolicy, chunk_groups
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


class Client:
    """`Client(url).score("math", response, reference)`; reuse one instance (connection pool)."""

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
        transport: httpx.BaseTransport | None = None,
        chunks: ChunkPolicy | None = None,
    ) -> None:
        """`patience_s` (default 900): how long one request waits out a service that is down,
        restarting or overloaded before it fails (`referee.client._patience`);
        `overload_patience_s` is its former name. `retries`: at most this many resends after a
        failure (None: patience alone decides). `timeout`: for one answer; a read timeout is
        not resent."""
        self._retry = p.RetryPolicy.of(patience_s, retries, backoff_s, overload_patience_s)
        self._chunks = chunks or ChunkPolicy()
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            headers=c.auth_headers(api_key),
            transport=transport,
            limits=s.POOL_LIMITS,
        )
        self._outage = p.Outage(base_url, self._retry.patience_s)

    def _request(
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
                response = self._http.request(method, path, json=json, params=params)
            except p.RESEND_EXCEPTIONS as exc:
                time.sleep(resend.after_error(exc, attempts, sent_at, what))
                continue
            except httpx.TimeoutException as exc:
                # Not resent: the service is still working on it (see referee.client._patience).
                raise c.RefereeUnavailable(f"{what}: no answer in time ({exc!r})") from exc
            wait = resend.after_response(response, attempts, sent_at)
            if wait is not None:
                time.sleep(wait)
                continue
            c.raise_for_error(response)
            return response

    def score(
        self, verifier: str, response: str, reference: Any = None, options: Mapping[str, Any] | None = None
    ) -> Verdict:
        return c.parse_verdict(
            self._request("POST", "/v1/score", c.score_payload(verifier, response, reference, options))
        )

    def score_batch(self, items: Sequence[ScoreRequest | Mapping[str, Any]]) -> list[Verdict]:
        return c.parse_batch(self._request("POST", "/v1/score", c.batch_payload(items)))

    def score_groups(
        self,
        groups: Sequence[GroupSpec | Mapping[str, Any]] | GroupsRequest,
        advantage: AdvantageConfig | None = None,
        on_invalid: OnInvalid = "reject",
    ) -> GroupsResponse:
        """Any number of groups: sent in chunks (`ChunkPolicy`), concurrently from a few threads
        (httpx.Client is thread-safe), results in order."""
        request = c.groups_request(groups, advantage, on_invalid)
        policy = self._chunks
        chunks = chunk_groups(list(request.groups), policy.max_groups, policy.max_responses)

        def post(chunk: list[GroupSpec]) -> list[GroupResult]:
            body = c.chunk_body(request, chunk)
            return c.parse_groups(self._request("POST", "/v1/groups", body)).groups

        if len(chunks) <= 1:
            parts = [post(chunk) for chunk in chunks]
        else:
            with ThreadPoolExecutor(min(policy.max_concurrency, len(chunks))) as executor:
                parts = list(executor.map(post, chunks))
        results = [result for part in parts for result in part]
        if len(results) != len(request.groups):
            raise c.RefereeError(f"service returned {len(results)} groups for {len(request.groups)} sent")
        return GroupsResponse(groups=results)

    def openrlhf_reward(
        self,
        request: OpenRLHFRequest | Mapping[str, Any],
        params: Mapping[str, Any] | None = None,
        path: str = c.OPENRLHF_PATH,
    ) -> OpenRLHFResponse:
        """OpenRLHF's remote reward protocol (`{query, prompts, labels}`), with the client's
        patience; `params` are the route's query (`verifier`, `on_error`, `strip_eos`)."""
        body = c.openrlhf_payload(request)
        return c.parse_openrlhf(self._request("POST", path, body, params=params))

    def verifiers(self) -> list[VerifierInfo]:
        return c.parse_verifiers(self._request("GET", "/v1/verifiers"))

    def prompt_stats(
        self, filter: PromptFilter | str = "all", last: int = 1, limit: int = 100, offset: int = 0
    ) -> PromptStatsPage:
        """This key's per-prompt statistics (`GET /v1/stats/prompts`), most recently seen first:
        `filter="always_solved", last=3` lists the prompts every sample of which passed in each
        of their latest 3 visits. One page (`limit` up to 10,000); `matched` counts them all."""
        params = c.prompt_stats_params(filter, last, limit, offset)
        return c.parse_prompt_stats(self._request("GET", "/v1/stats/prompts", params=params))

    def verifier_stats(self, minutes: int = 60) -> VerifierStatsPage:
        """Per verifier over the last `minutes` (`GET /v1/stats/verifiers`): the service's, all callers."""
        params = {"minutes": minutes}
        return c.parse_verifier_stats(self._request("GET", "/v1/stats/verifiers", params=params))

    def open_session(
        self,
        language: str = "python",
        limits: Mapping[str, Any] | None = None,
        files: Mapping[str, str] | None = None,
        idle_ttl_s: float | None = None,
    ) -> Session:
        """A stateful code session (`POST /v1/sessions`): `with client.open_session() as py:
        py.run("x = 1"); py.run("x + 1").value == "2"`. `limits` (`call_time_s`,
        `session_cpu_s`, `memory_mb`, `output_bytes`, `file_size_mb`, `open_files`) are capped
        by the service; `files` (relative path -> text) are placed in the work dir first. A
        full quota or no free slot (429/503) is waited out with the client's patience."""
        body = s.session_body(language, limits, files, idle_ttl_s)
        return Session(self, s.parse_session(self._request("POST", "/v1/sessions", body, resend=s.CREATE)))

    def run(self, session_id: str, code: str, time_s: float | None = None) -> s.RunResult:
        """Run `code` in a session. Never sent twice: an answer lost on the way raises
        `RefereeUnavailable` (the call may have run)."""
        path = f"{s.session_path(session_id)}/run"
        return s.parse_run(self._request("POST", path, s.run_body(code, time_s), resend=s.ONCE))

    def session_state(self, session_id: str) -> s.SessionState:
        return s.parse_state(self._request("GET", s.session_path(session_id)))

    def list_sessions(self) -> list[s.SessionState]:
        """This key's open sessions."""
        return s.parse_states(self._request("GET", "/v1/sessions"))

    def close_session(self, session_id: str) -> bool:
        """End a session; False when it was already gone (closed, expired, unknown)."""
        return self._delete(s.session_path(session_id))

    def list_environments(self) -> list[s.EnvironmentInfo]:
        return s.parse_environments(self._request("GET", "/v1/environments"))

    def start_episode(
        self, name: str, task: Mapping[str, Any] | None = None, seed: int | None = None
    ) -> s.Episode:
        """Start an episode of environment `name`; `task` is the environment's (for `code`:
        `prompt`, `verifier`, `reference`, `options`)."""
        body = s.episode_body(task, seed)
        return s.parse_episode(name, self._request("POST", s.episode_path(name), body, resend=s.CREATE))

    def step(self, name: str, episode_id: str, action: Mapping[str, Any]) -> s.StepResult:
        """One action (`tool_call(...)` or `message(...)` of `referee.client`); never sent twice."""
        path = f"{s.episode_path(name, episode_id)}/step"
        return s.parse_step(self._request("POST", path, {"action": dict(action)}, resend=s.ONCE))

    def verify(self, name: str, episode_id: str, response: str | None = None) -> Verdict:
        """The episode's verdict; `response` None judges its final message."""
        path = f"{s.episode_path(name, episode_id)}/verify"
        return c.parse_verdict(self._request("POST", path, {"response": response}, resend=s.BACKPRESSURE))

    def end_episode(self, name: str, episode_id: str) -> bool:
        """End an episode (and its code session); False when it was already gone."""
        return self._delete(s.episode_path(name, episode_id))

    def _delete(self, path: str) -> bool:
        try:
            self._request("DELETE", path)
        except c.RefereeHTTPError as exc:
            if exc.status_code == 404:
                return False
            raise
        return True

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Session(s.SessionHandle):
    """A code session of a `Client`: `run` calls in it, `close` ends it (also on leaving a
    `with` block). The state (variables, imports, files) lives in the service until then, or
    until the session's idle TTL or maximum lifetime ends it there."""

    client: Client

    def run(self, code: str, time_s: float | None = None) -> s.RunResult:
        return self.client.run(self.id, code, time_s)

    def state(self) -> s.SessionState:
        return self.client.session_state(self.id)

    def close(self) -> None:
        """End the session (idempotent; a session the service already ended is fine)."""
        if not self.closed:
            self.closed = True
            self.client.close_session(self.id)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
