"""Webhook types against a loopback grading server: signature, failures, slowness, breaker."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import httpx

from tests.registered.conftest import WEBHOOK_SECRET, Webhook, register, score

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
            assert time.monotonic() - start < 1.5 * 2  # bounded by the 0.5 s per-attempt timeout


def test_retry_recovers_from_one_503(http: httpx.Client, webhook: Webhook) -> None:
    r = register(http, hook_type("hook.retry", webhook.url("/flaky")))
    assert r.status_code == 201, r.text
    verdict = score(http, "hook.retry", "green", REF)
    assert verdict["status"] == "ok" and verdict["score"] == 0.5


def test_host_allowlist(http: httpx.Client) -> None:
    for url in ("http://localhost:9/x", "http://10.0.0.1/x", "ftp://127.0.0.1/x", "http://u:p@127.0.0.1/x"):
        r = register(http, hook_type("hook.evil", url))
        assert r.status_code == 422, url


def test_circuit_breaker_opens_and_recovers(http: httpx.Client, webhook: Webhook) -> None:
    # The breaker is per URL: every call to /fail fails, so consecutive failures open it.
    url = webhook.url("/fail")
    before = webhook.hits["/fail"]
    verdicts = []
    for _ in range(6):
        r = register(http, hook_type("hook.breaker2", url))
        verdicts.append(r.json()["detail"]["failing"][0]["reason"])
    assert any("circuit open" in v for v in verdicts)
    # 3 consecutive failed calls (2 attempts each) opened it; later calls never reached the server.
    assert webhook.hits["/fail"] - before <= 3 * 2 + 2
    time.sleep(0.6)  # past REFEREE_WEBHOOK_BREAKER_RESET_S: one trial call goes through
    before = webhook.hits["/fail"]
    r = register(http, hook_type("hook.breaker2", url))
    assert "HTTP 500" in r.json()["detail"]["failing"][0]["reason"] and webhook.hits["/fail"] > before


async def test_cancelled_trial_call_does_not_wedge_the_breaker(webhook: Webhook, tmp_path: Any) -> None:
    import asyncio

    from referee.registered.webhook import WebhookRuntime, build_class
    from tests.registered.conftest import registered_settings

    settings = registered_settings(tmp_path / "db.sqlite", webhook_timeout_s=5.0)
    runtime = WebhookRuntime(settings)
    url = webhook.url("/slow")
    cls = build_class("hook.cancel", "1", {"url": url}, WEBHOOK_SECRET, None, runtime)
    verifier = cls()
    breaker = runtime.breaker(url)
    breaker.opened_at = time.monotonic() - 10  # open, cool-down over: the next call is the trial
    call = asyncio.create_task(verifier._call_webhook("red", REF, {}))
    await asyncio.sleep(0.2)
    assert breaker.trial
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    assert not breaker.trial  # the trial's outcome was recorded (as a failure): the breaker reopened
    breaker.opened_at = time.monotonic() - 10
    assert breaker.allow()  # after the next cool-down a new trial goes through
    await runtime.aclose()
