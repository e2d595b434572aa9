"""Webhook verifier types: a remote URL judges each response.

Request: `POST url` with the JSON body `{"response", "reference", "options"}` and headers
`X-Referee-Verifier: name@version` and `X-Referee-Signature: t=<unix seconds>,v1=<hex>`, where
hex = HMAC-SHA256(secret, "<t>." + body). The receiver recomputes it over the raw body and
rejects stale timestamps. Answer: `{"score": number, "reason"?: string, "details"?: object}`.

Anything that stops a verdict from being reached (host not allowed, connection refused,
timeout, HTTP error, invalid answer, open circuit) is a `VerifierError`: status `error`, score
null, so a trainer masks the sample instead of learning from a fake 0. Timeouts, connection
errors, 5xx, 408 and 429 are retried with jittered exponential backoff; other 4xx (a bad
signature) are not. A per-URL circuit breaker stops calling a webhook after consecutive
failures and lets one trial call through after a cool-down.

DNS rebinding: the host is checked by name against `REFEREE_WEBHOOK_ALLOWED_HOSTS`, then resolved
at each attempt, and every address it resolves to must be public (not private, loopback,
link-local, shared, reserved or multicast) unless it lies in `REFEREE_WEBHOOK_ALLOWED_NETWORKS`.
The connection goes to the address that was checked (the URL's host is replaced by it; the
`Host` header and, for https, the TLS server name and certificate check keep the name), so a
second resolution cannot send the call elsewhere.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import math
import random
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from referee.breaker import CircuitBreaker
from referee.registered.refschema import reference_type_for, registered_class
from referee.settings import RegistrySettings
from referee.verifiers.base import AsyncVerifier, Check, Resources, VerifierError

SIGNATURE_HEADER = "X-Referee-Signature"
MAX_ANSWER_BYTES = 1 << 20


class WebhookSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(max_length=2000)
    timeout_s: float | None = Field(default=None, gt=0.0, le=60.0, description="Per attempt.")
    retries: int | None = Field(default=None, ge=0, le=5)
    # Write-only: stored apart from the spec, never returned. Omitted: the current version's
    # secret is kept, or a new one is generated and returned once.
    secret: str | None = Field(default=None, min_length=16, max_length=256)
    score_range: tuple[float, float] = (0.0, 1.0)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            url = httpx.URL(value)
        except httpx.InvalidURL as exc:
            raise ValueError(f"invalid URL: {exc}") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("the URL must be http(s)://host/...")
        if url.userinfo or url.fragment:
            raise ValueError("the URL may not carry credentials or a fragment")
        return value


class PassThroughOptions(BaseModel):
    """Webhook options are the webhook's business: forwarded as given."""

    model_config = ConfigDict(extra="allow")


class _Answer(BaseModel):
    score: float
    reason: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


def host_allowed(url: str, allowed: Sequence[str]) -> bool:
    """`allowed` entries: "host" (any port), "host:port", or "*.domain" (its subdomains)."""
    parsed = httpx.URL(url)
    host = (parsed.host or "").lower().rstrip(".")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    for entry in allowed:
        entry = entry.strip().lower()
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and (not entry_port.isdigit() or int(entry_port) != port):
            continue
        if name.startswith("*.") and host.endswith(name[1:]) and host != name[2:]:
            return True
        if host == name:
            return True
    return False


Resolver = Callable[[str, int], Awaitable[list[str]]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (TCP), in the resolver's order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressRefused(Exception):
    """The webhook's host resolves to an address it may not be called at."""


def address_allowed(address: IPAddress, networks: Sequence[IPNetwork]) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in net for net in networks if net.version == address.version):
        return True
    return address.is_global and not address.is_multicast


def parse_networks(entries: Sequence[str]) -> list[IPNetwork]:
    try:
        return [ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip()]
    except ValueError as exc:
        raise ValueError(f"REFEREE_WEBHOOK_ALLOWED_NETWORKS: {exc}") from None


def signature(secret: str, body: bytes, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def _attempts_budget(spec: WebhookSpec, settings: RegistrySettings) -> float:
    timeout = spec.timeout_s or settings.webhook_timeout_s
    retries = settings.webhook_retries if spec.retries is None else spec.retries
    return timeout * (retries + 1) + 2.0 * retries + 1.0


class WebhookRuntime:
    """Service-lifetime state shared by every webhook type: one HTTP client, breakers.

    `clock` is the breakers' time source (monotonic seconds), handed to each breaker when it
    is built: set it, as an argument or attribute, before the first call to a URL."""

    def __init__(
        self,
        settings: RegistrySettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        resolver: Resolver = resolve_host,
    ) -> None:
        self.settings = settings
        self.clock = clock
        # Name -> addresses; tests pass a fake one to play a rebinding DNS server.
        self.resolver = resolver
        self.networks = parse_networks(settings.webhook_allowed_networks)
        # trust_env=False: proxy variables must not reroute calls away from the allowlisted host.
        self.client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        self._breakers: dict[str, CircuitBreaker] = {}
        self._limits: dict[str, asyncio.Semaphore] = {}

    def breaker(self, url: str) -> CircuitBreaker:
        if url not in self._breakers:
            s = self.settings
            self._breakers[url] = CircuitBreaker(
                s.webhook_breaker_failures, s.webhook_breaker_reset_s, clock=self.clock
            )
        return self._breakers[url]

    def limit(self, key: str) -> asyncio.Semaphore:
        if key not in self._limits:
            self._limits[key] = asyncio.Semaphore(self.settings.webhook_max_concurrency)
        return self._limits[key]

    async def pin(self, url: httpx.URL) -> str:
        """The address to connect to for `url`: its host resolved now, every address checked
        (one forbidden address refuses them all: a rebinding server may answer either)."""
        host = url.host
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            port = url.port or (443 if url.scheme == "https" else 80)
            addresses = [ipaddress.ip_address(a.split("%")[0]) for a in await self.resolver(host, port)]
        if not addresses:
            raise OSError(f"{host} resolves to no address")
        refused = [str(a) for a in addresses if not address_allowed(a, self.networks)]
        if refused:
            raise AddressRefused(
                f"{host} resolves to {', '.join(refused[:3])}, not a public address "
                "(allow it with REFEREE_WEBHOOK_ALLOWED_NETWORKS)"
            )
        return str(addresses[0])

    async def aclose(self) -> None:
        await self.client.aclose()


class WebhookVerifier(AsyncVerifier):
    options_model = PassThroughOptions
    kind: ClassVar[str] = "webhook"
    spec: ClassVar[WebhookSpec]
    secret: ClassVar[str]
    runtime: ClassVar[WebhookRuntime]

    async def check_group(
        self, responses: Sequence[str], prepared: Any, options: Any, resources: Resources
    ) -> list[Check]:
        extra = (options.model_extra or {}) if isinstance(options, BaseModel) else {}
        results = await asyncio.gather(
            *(self._call_webhook(r, prepared, extra) for r in responses), return_exceptions=True
        )
        out: list[Any] = []
        for result in results:
            if isinstance(result, Check | VerifierError):
                out.append(result)
            elif isinstance(result, Exception):  # a bug here is a masked verdict, not a 500
                out.append(VerifierError(f"webhook call raised {type(result).__name__}"))
            else:
                raise result  # cancellation
        return out

    async def _call_webhook(self, response: str, reference: Any, options: dict[str, Any]) -> Check:
        settings = self.runtime.settings
        url = self.spec.url
        if not host_allowed(url, settings.webhook_allowed_hosts):
            raise VerifierError("webhook host is not in REFEREE_WEBHOOK_ALLOWED_HOSTS")
        if not self.secret:
            raise VerifierError("the webhook's signing secret cannot be decrypted (REFEREE_SECRET_KEYS)")
        breaker = self.runtime.breaker(url)
        body = json.dumps(
            {"response": response, "reference": reference, "options": options}, ensure_ascii=False
        ).encode()
        timeout = self.spec.timeout_s or settings.webhook_timeout_s
        retries = settings.webhook_retries if self.spec.retries is None else self.spec.retries
        problem = "no attempt"
        async with self.runtime.limit(self.qualified_name()):
            # Asked only once a slot is free: calls queued behind a failing hook must not each
            # go on to try it after the circuit has opened.
            if not breaker.allow():
                raise VerifierError(f"webhook circuit open; next trial in {breaker.retry_in():.1f} s")
            settled = False
            try:
                for attempt in range(retries + 1):
                    if attempt:
                        await asyncio.sleep(min(2.0, 0.1 * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0))
                        if breaker.opened_at is not None and not breaker.trial:
                            settled = True
                            raise VerifierError(f"webhook circuit opened while retrying: {problem}")
                    try:
                        status, raw = await self._post(url, body, timeout)
                    except AddressRefused as exc:
                        settled = True
                        breaker.failure()
                        raise VerifierError(f"webhook address refused: {exc}") from None
                    except (httpx.TimeoutException, TimeoutError):
                        problem = f"timed out after {timeout:g} s"
                        continue
                    except (httpx.HTTPError, OSError) as exc:  # OSError: the name does not resolve
                        problem = f"{type(exc).__name__}"
                        continue
                    if status >= 500 or status in (408, 429):
                        problem = f"HTTP {status}"
                        continue
                    settled = True
                    if status != 200:
                        breaker.failure()
                        raise VerifierError(f"webhook answered HTTP {status} (not retried)")
                    try:
                        answer = _Answer.model_validate_json(raw)
                        if not math.isfinite(answer.score):
                            raise ValueError("score is not finite")
                    except (ValidationError, ValueError) as exc:
                        breaker.failure()
                        raise VerifierError(f"webhook answered an invalid body: {str(exc)[:200]}") from None
                    breaker.success()
                    return Check(answer.score, reason=answer.reason, details=answer.details)
                settled = True
                breaker.failure()
                raise VerifierError(f"webhook failed after {retries + 1} attempt(s): {problem}")
            finally:
                # Cancelled or broken mid-call: count it as a failure, or a half-open breaker
                # would wait for this trial's outcome forever.
                if not settled:
                    breaker.failure()

    async def _post(self, url: str, body: bytes, timeout: float) -> tuple[int, bytes]:
        target = httpx.URL(url)
        headers = {
            "content-type": "application/json",
            "host": target.netloc.decode("ascii"),
            "x-referee-verifier": self.qualified_name(),
            SIGNATURE_HEADER: signature(self.secret, body, int(time.time())),
        }
        # The TLS server name (and the certificate check) stay the URL's host name.
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        # The whole exchange (resolve, connect, send, read) is bounded, not only each socket read.
        async with asyncio.timeout(timeout):
            pinned = target.copy_with(host=await self.runtime.pin(target))
            async with self.runtime.client.stream(
                "POST", pinned, content=body, headers=headers, timeout=timeout, extensions=extensions
            ) as answer:
                chunks, size = [], 0
                async for chunk in answer.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        return 502, b""  # an oversized answer counts as a failed call
                    chunks.append(chunk)
                return answer.status_code, b"".join(chunks)


def build_class(
    name: str,
    version: str,
    spec: dict[str, Any],
    secret: str,
    reference_schema: dict[str, Any] | None,
    runtime: WebhookRuntime,
    *,
    description: str = "",
    example: dict[str, Any] | None = None,
) -> type[WebhookVerifier]:
    parsed = WebhookSpec.model_validate(spec)
    return registered_class(
        WebhookVerifier,
        "Webhook",
        name=name,
        version=version,
        description=description,
        reference_type=reference_type_for(reference_schema),
        example=example,
        score_range=parsed.score_range,
        spec=parsed,
        secret=secret,
        runtime=runtime,
        # Per verdict: every attempt may time out, plus the back-off between attempts.
        time_budget_s=_attempts_budget(parsed, runtime.settings),
    )
