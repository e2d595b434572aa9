"""`JudgeClients`: the service's connections to its judge endpoints (`Resources.judges`).

Each configured endpoint (`REFEREE_JUDGE_ENDPOINTS`) gets one HTTP client (connections kept
alive), a limit of calls in flight (`max_concurrency`: servers like vLLM batch the requests
that arrive together, so a group's calls go out at once, up to the limit), a per-attempt
timeout, retries and a circuit breaker:

- retried, with jittered exponential backoff: connection failures, timeouts, 408, 5xx, and
  429 (after the server's Retry-After, up to `MAX_RETRY_AFTER_S`);
- not retried: other 4xx (`refused`: the request itself is wrong, e.g. an unknown model or a
  prompt over the context length) and a 200 whose body is not a chat completion (`bad_reply`);
- the breaker opens after `breaker_failures` failed calls in a row (a call fails once its
  retries are spent) and lets one trial call through after `breaker_reset_s`; meanwhile calls
  fail at once (`breaker_open`) instead of each waiting out its timeouts. A refusal is not a
  failure of the endpoint: it answered.

Identical requests in flight (the same response sampled twice in a group) are sent once and
share the reply: the first caller to receive it gets it as it came, the others marked `shared`
(so whoever counts calls from the verdicts counts this one once). Every failure is a
`ChatFailure` whose `detail` says what happened in words, naming the endpoint by its name: never
its URL, never its key (the key is also scrubbed from anything a server says back). Nothing here
decides readiness: a judge endpoint that is down fails judge verdicts (masked), and every other
verifier goes on scoring.

One event loop uses an instance (the breakers and single-flight table are not thread-safe);
the counters (`calls`, `tokens`, the cache's hits and misses) are read by /metrics at scrape.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import structlog

from referee.breaker import BreakerState, CircuitBreaker
from referee.judges.cache import VerdictCache
from referee.judges.contract import ChatFailure, ChatReply, ChatRequest, FailureKind
from referee.judges.wire import read_reply, request_body, retry_after_s, server_says
from referee.settings import JudgeEndpoint, JudgeSettings

log = structlog.get_logger(__name__)

# A reply larger than this is not a judge's verdict: refused unread (bad_reply).
MAX_REPLY_BYTES = 8 << 20
# A server asking for a longer pause than this gets this: a verdict waits on it.
MAX_RETRY_AFTER_S = 30.0
BACKOFF_S = 0.25  # before the first retry; doubled for each next one, up to BACKOFF_CAP_S
BACKOFF_CAP_S = 8.0
# Failure kinds that say the endpoint is unwell (they count towards opening its breaker).
ENDPOINT_FAILURES: frozenset[str] = frozenset(
    {"unreachable", "timeout", "rate_limited", "server_error", "bad_reply"}
)

Outcome = Literal["ok"] | FailureKind


@dataclass(frozen=True, slots=True)
class EndpointHealth:
    """One endpoint as /readyz reports it: never its URL or key."""

    model: str
    state: BreakerState
    retry_in_s: float
    in_flight: int
    reason: str | None = None  # why calls cannot go (an unreadable key file): never the key

    def as_dict(self) -> dict[str, Any]:
        shown = {k: v for k, v in dataclasses.asdict(self).items() if k != "reason" or v is not None}
        return {"ok": self.state == "closed" and self.reason is None, **shown}


class _Endpoint:
    def __init__(self, name: str, config: JudgeEndpoint, clock: Callable[[], float]) -> None:
        self.name = name
        self.config = config
        self.url = f"{config.url}/chat/completions"
        self.key: str | None = None
        self.key_problem: str | None = None  # the key file cannot be read: why (never the key)
        self._keys: set[str] = set()  # every key read, scrubbed from what servers say back
        self.read_key()
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_reset_s, clock=clock)
        self.limit = asyncio.Semaphore(config.max_concurrency)
        self.client: httpx.AsyncClient | None = None
        self.in_flight = 0

    def http(self) -> httpx.AsyncClient:
        if self.client is None:
            n = self.config.max_concurrency
            # trust_env=False: the configured URL is called directly, whatever proxy variables
            # the service's environment holds.
            self.client = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
                trust_env=False,
                follow_redirects=False,
            )
        return self.client

    def read_key(self) -> None:
        """(Re)read the key. From `api_key_file` this happens when the clients are built, before
        each call while the file could not be read (the secret may be mounted late), and after
        a 401/403 (the secret store may have rotated it): a rotated key needs no restart."""
        try:
            self.key, self.key_problem = self.config.key(), None
        except OSError as exc:  # settings.key() words it: the file and why, never its content
            self.key, self.key_problem = None, str(exc)
        if self.key:
            self._keys.add(self.key)

    def scrub(self, text: str) -> str:
        """`text` without the endpoint's keys (a server may echo a request's headers)."""
        for key in self._keys:
            text = text.replace(key, "[api key]")
        return text


class _Flight:
    """A call in flight and the callers waiting for it."""

    def __init__(self, task: asyncio.Task[ChatReply | ChatFailure]) -> None:
        self.task = task
        self.waiters = 0
        self.delivered = 0  # callers that received the reply (a cancelled one never does)


class JudgeClients:
    """Implements `referee.judges.Judges` over the endpoints of `settings`.

    `clock` (monotonic seconds) times the breakers' cool-downs (tests pass a fake one);
    `backoff_s` is the pause before the first retry (tests shorten it)."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        backoff_s: float = BACKOFF_S,
    ) -> None:
        self.cache = VerdictCache(settings.cache_entries)
        self.backoff_s = backoff_s
        self._endpoints = {name: _Endpoint(name, cfg, clock) for name, cfg in settings.endpoints.items()}
        self._flights: dict[ChatRequest, _Flight] = {}
        self._closed = False
        # (endpoint, outcome) -> calls sent (a request that joined one in flight is not one);
        # (endpoint, "prompt" | "completion") -> tokens the server reported.
        self.calls: Counter[tuple[str, str]] = Counter()
        self.tokens: Counter[tuple[str, str]] = Counter()
        for endpoint in self._endpoints.values():
            if endpoint.config.api_key_env and not endpoint.key:
                log.warning(
                    "judge_api_key_unset",
                    endpoint=endpoint.name,
                    variable=endpoint.config.api_key_env,
                    consequence="calls are sent without a key",
                )
            if endpoint.key_problem:
                log.warning(
                    "judge_api_key_unreadable",
                    endpoint=endpoint.name,
                    problem=endpoint.key_problem,
                    consequence="no call is sent until the file can be read",
                )

    def endpoints(self) -> list[str]:
        return sorted(self._endpoints)

    def endpoint_model(self, endpoint: str) -> str | None:
        found = self._endpoints.get(endpoint)
        return None if found is None else found.config.model

    def health(self) -> dict[str, dict[str, Any]]:
        """Per endpoint: its breaker's state and the calls in flight (for /readyz, which reports
        it without deciding on it)."""
        return {
            name: EndpointHealth(
                ep.config.model,
                ep.breaker.state(),
                round(ep.breaker.retry_in(), 3),
                ep.in_flight,
                None if ep.key_problem is None else f"API key unavailable: {ep.key_problem}",
            ).as_dict()
            for name, ep in sorted(self._endpoints.items())
        }

    async def complete_many(self, requests: Sequence[ChatRequest]) -> list[ChatReply | ChatFailure]:
        return list(await asyncio.gather(*(self._shared(request) for request in requests)))

    async def aclose(self) -> None:
        """Cancel the calls in flight and close the connections; later calls fail at once."""
        self._closed = True
        tasks = [flight.task for flight in self._flights.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for endpoint in self._endpoints.values():
            if endpoint.client is not None:
                await endpoint.client.aclose()
                endpoint.client = None

    # ---- single flight ------------------------------------------------------------------

    async def _shared(self, request: ChatRequest) -> ChatReply | ChatFailure:
        endpoint = self._endpoints.get(request.endpoint)
        if endpoint is None:
            known = ", ".join(self.endpoints()) or "none is configured (REFEREE_JUDGE_ENDPOINTS)"
            return ChatFailure("unknown_endpoint", f"no judge endpoint {request.endpoint!r} ({known})")
        if self._closed:
            return ChatFailure("unreachable", "the judge endpoints are closed (the service is stopping)")
        key = dataclasses.replace(
            request,
            messages=tuple(request.messages),
            sampling=dataclasses.replace(request.sampling, stop=tuple(request.sampling.stop)),
            model=request.model or endpoint.config.model,
        )
        flight = self._flights.get(key)
        if flight is None:
            flight = _Flight(asyncio.create_task(self._call(endpoint, key)))
            self._flights[key] = flight
            flight.task.add_done_callback(functools.partial(self._landed, key, flight))
        flight.waiters += 1
        try:
            # Shielded: one waiter cancelled (its verdict's time is up) leaves the call to the
            # others; the last one to leave cancels it.
            result = await asyncio.shield(flight.task)
            flight.delivered += 1
            if flight.delivered > 1 and isinstance(result, ChatReply):
                return dataclasses.replace(result, shared=True)
            return result
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                self._land(key, flight)
                flight.task.cancel()

    def _land(self, key: ChatRequest, flight: _Flight) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]

    def _landed(self, key: ChatRequest, flight: _Flight, _: object) -> None:
        self._land(key, flight)

    # ---- one call: slot, breaker, attempts ----------------------------------------------

    async def _call(self, endpoint: _Endpoint, request: ChatRequest) -> ChatReply | ChatFailure:
        result = await self._guarded(endpoint, request)
        outcome: Outcome = "ok" if isinstance(result, ChatReply) else result.kind
        self.calls[(endpoint.name, outcome)] += 1
        if isinstance(result, ChatReply):
            self.tokens[(endpoint.name, "prompt")] += result.prompt_tokens
            self.tokens[(endpoint.name, "completion")] += result.completion_tokens
        elif result.kind != "breaker_open":
            log.warning(
                "judge_call_failed",
                endpoint=endpoint.name,
                kind=result.kind,
                detail=result.detail,
                attempts=result.attempts,
            )
        return result

    async def _guarded(self, endpoint: _Endpoint, request: ChatRequest) -> ChatReply | ChatFailure:
        if endpoint.key_problem is not None:
            endpoint.read_key()
            if endpoint.key_problem is not None:  # sent without its key, it would only be refused
                detail = (
                    f"judge endpoint {endpoint.name!r}: no API key ({endpoint.key_problem}); nothing sent"
                )
                return ChatFailure("no_key", detail)
        breaker = endpoint.breaker
        if breaker.opened_at is not None and breaker.retry_in() > 0:  # fail fast, without queueing
            return self._open(endpoint)
        async with endpoint.limit:
            # Asked once a slot is free: calls queued behind a failing endpoint must not each go
            # on to try it after the circuit has opened.
            if not breaker.allow():
                return self._open(endpoint)
            endpoint.in_flight += 1
            settled = False
            try:
                result = await self._attempts(endpoint, request)
                settled = True
            finally:
                endpoint.in_flight -= 1
                # Cancelled mid-call: a failure, or a half-open breaker would wait for this
                # trial's outcome forever.
                if not settled:
                    breaker.failure()
        if isinstance(result, ChatFailure) and result.kind in ENDPOINT_FAILURES:
            breaker.failure()
        elif not (isinstance(result, ChatFailure) and result.kind == "breaker_open"):
            breaker.success()
        return result

    def _open(self, endpoint: _Endpoint) -> ChatFailure:
        wait = endpoint.breaker.retry_in()
        return ChatFailure(
            "breaker_open",
            f"judge endpoint {endpoint.name!r} failed {endpoint.breaker.failures} call(s) in a row; "
            f"calls are refused until a trial call succeeds (next in {wait:.1f} s)",
            retry_in_s=wait,
        )

    async def _attempts(self, endpoint: _Endpoint, request: ChatRequest) -> ChatReply | ChatFailure:
        config, breaker = endpoint.config, endpoint.breaker
        body = json.dumps(request_body(request), ensure_ascii=False).encode()
        kind: FailureKind = "unreachable"
        problem, pause = "no attempt", 0.0
        attempts = config.retries + 1
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                backoff = min(BACKOFF_CAP_S, self.backoff_s * 2 ** (attempt - 2)) * random.uniform(0.5, 1.0)
                await asyncio.sleep(max(backoff, pause))
                if breaker.opened_at is not None and not breaker.trial:
                    # Other calls opened the circuit meanwhile: stop hammering the endpoint.
                    return ChatFailure(
                        "breaker_open",
                        f"judge endpoint {endpoint.name!r}: the circuit opened while retrying ({problem})",
                        attempts=attempt - 1,
                        retry_in_s=breaker.retry_in(),
                    )
            pause = 0.0
            started = time.perf_counter()
            try:
                status, retry_after, raw = await self._post(endpoint, body)
            except (httpx.TimeoutException, TimeoutError):
                kind, problem = "timeout", f"no reply within {config.timeout_s:g} s"
                continue
            except (httpx.HTTPError, OSError) as exc:
                kind, problem = "unreachable", f"connection failed ({_describe(exc)})"
                continue
            latency = time.perf_counter() - started
            if status == 429:
                kind, problem = "rate_limited", "HTTP 429 (rate limited)"
                pause = min(MAX_RETRY_AFTER_S, retry_after or 0.0)
                continue
            if status == 408:
                kind, problem = "timeout", "HTTP 408 (the server timed the request out)"
                continue
            if status >= 500:
                kind, problem = "server_error", f"HTTP {status}{server_says(raw)}"
                continue
            if status in (401, 403) and endpoint.config.api_key_file is not None:
                endpoint.read_key()  # the secret store may have rotated it: the next call uses it
            if not 200 <= status < 300:
                detail = (
                    f"judge endpoint {endpoint.name!r} refused the request: HTTP {status}{server_says(raw)}"
                )
                return ChatFailure("refused", endpoint.scrub(detail), attempts=attempt)
            if raw is None:
                return ChatFailure(
                    "bad_reply",
                    f"judge endpoint {endpoint.name!r} sent a reply over {MAX_REPLY_BYTES} bytes",
                    attempts=attempt,
                )
            reply = read_reply(raw, default_model=request.model or config.model)
            if isinstance(reply, str):
                detail = f"judge endpoint {endpoint.name!r} sent no chat completion: {reply}"
                return ChatFailure("bad_reply", endpoint.scrub(detail), attempts=attempt)
            return dataclasses.replace(reply, latency_s=latency, attempts=attempt)
        detail = f"judge endpoint {endpoint.name!r}: {problem} (after {attempts} attempt(s))"
        return ChatFailure(kind, endpoint.scrub(detail), attempts=attempts)

    async def _post(self, endpoint: _Endpoint, body: bytes) -> tuple[int, float | None, bytes | None]:
        """(status, Retry-After seconds, body; None when over MAX_REPLY_BYTES)."""
        headers = {"content-type": "application/json", "accept": "application/json"}
        if endpoint.key:
            headers["authorization"] = f"Bearer {endpoint.key}"
        timeout = endpoint.config.timeout_s
        # The whole exchange (connect, send, read every byte) is bounded, not only each read.
        async with asyncio.timeout(timeout):
            client = endpoint.http()
            async with client.stream(
                "POST", endpoint.url, content=body, headers=headers, timeout=timeout
            ) as answer:
                chunks, size = [], 0
                async for chunk in answer.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_REPLY_BYTES:
                        return answer.status_code, None, None
                    chunks.append(chunk)
                return answer.status_code, retry_after_s(answer.headers.get("retry-after")), b"".join(chunks)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
