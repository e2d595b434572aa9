"""Webhook types against a loopback grading server: signature, failures, slowness, breaker."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.registered.webhook import WebhookRuntime, build_class
from referee.runtime import Runtime
from referee.service.app import create_app
from referee.verifiers import Resources
from tests.registered.conftest import (
    SLOW_S,
    WEBHOOK_SECRET,
    Webhook,
    register,
    registered_settings,
    score,
)
from tests.timing import FakeClock, wait_until_async

REF = {"words": ["red", "green"]}


def hook_type(name: str, url: str, secret: str | None = WEBHOOK_SECRET, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "kind": "webhook",
        "spec": {"url": url, **spec, **({"secret": secret} if secret else {})},
        "reference_schema": {"type": "object", "required": ["words"]},
        "examples": [{"response": "red blue", "reference": REF, "expected_score": 0.5}],
    }
    return body


def test_webhook_scores_with_signed_requests(http: httpx.Client, webhook: Webhook) -> None:
    r = register(http, hook_type("hook.words", webhook.url("/grade")))
    assert r.status_code == 201, r.text
    assert r.json()["secret"] is None  # given by the registrant: never echoed
    assert "secret" not in r.json()["version"]["spec"]
    group = http.post(
        "/v1/groups",
        json={
            "groups": [
                {"verifier": "hook.words", "reference": REF, "responses": ["red green", "red", "blue"]}
            ]
        },
    ).json()["groups"][0]
    assert group["rewards"] == [1.0, 0.5, 0.0]
    assert group["verdicts"][1]["reason"] == "1 words" and group["verdicts"][0]["verifier"] == "hook.words@1"
    sent = [b for b in webhook.bodies if b["path"] == "/grade"][-1]
    assert set(sent) == {"path", "response", "reference", "options", "verifier"} and sent["reference"] == REF
    versions = http.get("/v1/verifiers/hook.words/versions").json()["versions"]
    assert "secret" not in versions[0]["spec"]


def test_generated_secret_is_returned_once_and_kept(http: httpx.Client, webhook: Webhook) -> None:
    r = register(http, hook_type("hook.gen", webhook.url("/open"), secret=None))
    assert r.status_code == 201, r.text
    secret = r.json()["secret"]
    assert isinstance(secret, str) and len(secret) >= 32
    # Re-posting without a secret keeps the stored one: same content, same version.
    again = register(http, hook_type("hook.gen", webhook.url("/open"), secret=None))
    assert again.status_code == 200 and again.json()["secret"] is None
    assert again.json()["version"]["digest"] == r.json()["version"]["digest"]
    # The generated secret signs the requests.
    sent = [b for b in webhook.bodies if b["path"] == "/open"]
    assert sent and sent[-1]["verifier"] == "hook.gen@candidate"


def test_unreachable_webhook_masks_the_sample(http: httpx.Client, webhook: Webhook) -> None:
    assert register(http, hook_type("hook.switch", webhook.url("/switch"))).status_code == 201
    webhook.down = True
    try:
        group = http.post(
            "/v1/groups",
            json={"groups": [{"verifier": "hook.switch", "reference": REF, "responses": ["red", "green"]}]},
        ).json()["groups"][0]
    finally:
        webhook.down = False
    assert [v["status"] for v in group["verdicts"]] == ["error", "error"]
    assert group["rewards"] == [None, None] and group["advantages"] == [None, None]
    assert "HTTP 500" in group["verdicts"][0]["reason"]


def test_bad_signature_is_a_masked_error_not_zero(http: httpx.Client, webhook: Webhook) -> None:
    assert register(http, hook_type("hook.sig", webhook.url("/grade"))).status_code == 201
    # A second version with another secret: the receiver rejects its signatures.
    body = hook_type("hook.sig", webhook.url("/grade"), secret="another-secret-of-16+")
    r = register(http, body)
    assert r.status_code == 422 and r.json()["detail"]["failing"][0]["status"] == "error"
    verdict = score(http, "hook.sig", "red", REF)  # v1 is still the latest active version
    assert verdict["verifier"] == "hook.sig@1" and verdict["score"] == 0.5


@pytest.mark.slow
def test_failing_slow_and_garbage_webhooks_are_errors(http: httpx.Client, webhook: Webhook) -> None:
    cases = {"/fail": "HTTP 500", "/slow": "timed out", "/garbage": "invalid body"}
    for path, reason in cases.items():
        name = "hook" + path.replace("/", ".")
        before = webhook.hits[path]
        start = time.monotonic()
        r = register(http, hook_type(name, webhook.url(path)))
        assert r.status_code == 422, r.text
        (failing,) = r.json()["detail"]["failing"]
        assert failing["status"] == "error" and failing["score"] is None and reason in failing["reason"]
        if path != "/garbage":  # retried once (REFEREE_WEBHOOK_RETRIES=1)
            assert webhook.hits[path] - before == 2
        if path == "/slow":
            # Bounded by the per-attempt timeout: both attempts gave up before /slow answered once.
            assert time.monotonic() - start < SLOW_S


def test_retry_recovers_from_one_503(http: httpx.Client, webhook: Webhook) -> None:
    r = register(http, hook_type("hook.retry", webhook.url("/flaky")))
    assert r.status_code == 201, r.text
    verdict = score(http, "hook.retry", "green", REF)
    assert verdict["status"] == "ok" and verdict["score"] == 0.5


def test_host_allowlist(http: httpx.Client) -> None:
    for url in ("http://localhost:9/x", "http://10.0.0.1/x", "ftp://127.0.0.1/x", "http://u:p@127.0.0.1/x"):
        r = register(http, hook_type("hook.evil", url))
        assert r.status_code == 422, url


@contextlib.asynccontextmanager
async def service_with_clock(db_path: Path, clock: FakeClock) -> AsyncIterator[httpx.AsyncClient]:
    """The service in process (its own database), its webhook breakers timed by `clock`."""
    runtime = Runtime(registered_settings(db_path))
    runtime.catalog.webhooks.clock = clock  # before any breaker is built
    app = create_app(runtime)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://referee", timeout=60) as http:
            yield http


async def test_circuit_breaker_opens_and_recovers(webhook: Webhook, tmp_path: Path) -> None:
    # The breaker is per URL: every call to /fail fails, so consecutive failures open it.
    clock = FakeClock()
    url = webhook.url("/fail")
    async with service_with_clock(tmp_path / "db.sqlite", clock) as http:
        before = webhook.hits["/fail"]
        verdicts = []
        for _ in range(6):
            r = await http.post("/v1/verifiers", json=hook_type("hook.breaker2", url))
            verdicts.append(r.json()["detail"]["failing"][0]["reason"])
        # 3 consecutive failed calls (2 attempts each) opened it; later calls never reached the server.
        assert ["HTTP 500" in v for v in verdicts[:3]] == [True] * 3, verdicts
        assert ["circuit open" in v for v in verdicts[3:]] == [True] * 3, verdicts
        assert webhook.hits["/fail"] - before == 3 * 2
        clock.advance(0.6)  # past REFEREE_WEBHOOK_BREAKER_RESET_S: one trial call goes through
        before = webhook.hits["/fail"]
        r = await http.post("/v1/verifiers", json=hook_type("hook.breaker2", url))
        assert "HTTP 500" in r.json()["detail"]["failing"][0]["reason"] and webhook.hits["/fail"] > before


async def test_cancelled_trial_call_does_not_wedge_the_breaker(webhook: Webhook, tmp_path: Path) -> None:
    clock = FakeClock()
    settings = registered_settings(tmp_path / "db.sqlite", webhook_timeout_s=5.0).registry
    runtime = WebhookRuntime(settings, clock=clock)
    url = webhook.url("/slow")
    cls = build_class("hook.cancel", "1", {"url": url}, WEBHOOK_SECRET, None, runtime)
    verifier = cls()
    options = cls.validate_options({})
    prepared = verifier.prepare(cls.validate_reference(REF), options)
    breaker = runtime.breaker(url)
    for _ in range(settings.webhook_breaker_failures):
        breaker.failure()
    assert not breaker.allow()  # open
    clock.advance(settings.webhook_breaker_reset_s)  # cool-down over: the next call is the trial
    call = asyncio.create_task(verifier.check_group(["red"], prepared, options, Resources()))
    await wait_until_async(lambda: breaker.trial, 10, what="the trial call to start")
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    assert not breaker.trial  # the trial's outcome was recorded (as a failure): the breaker reopened
    assert not breaker.allow()
    clock.advance(settings.webhook_breaker_reset_s)
    assert breaker.allow()  # after the next cool-down a new trial goes through
    await runtime.aclose()
