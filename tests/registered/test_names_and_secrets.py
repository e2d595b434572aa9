"""Registered names cannot pose as others, and webhook secrets cannot be read back or cracked
(issue 14, defects 4 and 5)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from referee.registered.secrets_box import PREFIX, SecretBox, SecretUnavailable
from referee.service.background import BackgroundServer
from tests.registered.conftest import (
    SECRET_KEY,
    WEBHOOK_SECRET,
    Webhook,
    register,
    registered_settings,
    score,
)
from tests.registered.test_api import r1_math
from tests.registered.test_webhook import REF, hook_type


@pytest.mark.parametrize(
    "name", ["MATH", "Math", "math.", "exact.", ".exact", "r1..math", "r1.math-", "a b", "é"]
)
def test_names_outside_the_pattern_are_refused(http: httpx.Client, name: str) -> None:
    r = register(http, r1_math(name))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "name"], r.text


def test_builtin_names_are_taken(http: httpx.Client) -> None:
    for name in ("math", "format.think_answer", "logic.sat_cnf"):
        r = register(http, r1_math(name))
        assert r.status_code == 409 and r.json()["error"] == "builtin_verifier"
    for name in ("math2", "exact-match", "my.math"):  # near, but not posing as one
        assert register(http, r1_math(name)).status_code == 201


def test_a_name_differing_only_in_case_from_a_stored_one_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "legacy.db"
    with (
        BackgroundServer(registered_settings(db)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert register(http, r1_math("house.style")).status_code == 201
    # A type stored under a capitalised name (before the name pattern existed).
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE verifier_versions SET name = 'House.Style'")
    with (
        BackgroundServer(registered_settings(db)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        r = register(http, r1_math("house.style"))
        assert r.status_code == 409 and r.json()["error"] == "name_taken", r.text
        assert http.get("/v1/verifiers/House.Style").status_code == 200  # still resolves


def test_the_public_digest_does_not_cover_the_secret(http: httpx.Client, webhook: Webhook) -> None:
    body = hook_type("hook.digest", webhook.url("/open"))  # /open: any signature
    r = register(http, body)
    assert r.status_code == 201, r.text
    version = r.json()["version"]
    # The digest is exactly the hash of the public content: nothing about the secret in it.
    public = {"kind": "webhook", "spec": version["spec"], "reference_schema": version["reference_schema"]}
    canonical = json.dumps(public, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert version["digest"] == hashlib.sha256(canonical.encode()).hexdigest()
    # A new secret is still a new version (same public digest), the same secret is not.
    again = register(http, body)
    assert again.status_code == 200 and again.json()["verifier"] == "hook.digest@1"
    rotated = register(http, hook_type("hook.digest", webhook.url("/open"), secret="another-secret-of-16+"))
    assert rotated.status_code == 201 and rotated.json()["verifier"] == "hook.digest@2"
    assert rotated.json()["version"]["digest"] == version["digest"]


def _stored_secrets(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [s for (s,) in conn.execute("SELECT secret FROM verifier_versions WHERE secret IS NOT NULL")]


def test_secrets_are_encrypted_at_rest_and_keys_rotate(tmp_path: Path, webhook: Webhook) -> None:
    db = tmp_path / "secrets.db"
    old_key, new_key = SECRET_KEY, Fernet.generate_key().decode()
    with (
        BackgroundServer(registered_settings(db)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert register(http, hook_type("hook.rest", webhook.url("/grade"))).status_code == 201
    (stored,) = _stored_secrets(db)
    assert stored.startswith(PREFIX) and WEBHOOK_SECRET not in stored
    assert SecretBox([old_key]).open(stored) == WEBHOOK_SECRET

    # Rotation: the new key first, the old one still listed; at start-up every secret is
    # re-encrypted under the new key, and the webhook still signs its calls.
    with (
        BackgroundServer(registered_settings(db, secret_keys=[new_key, old_key])) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert score(http, "hook.rest", "red green", REF)["score"] == 1.0
    (resealed,) = _stored_secrets(db)
    assert resealed != stored and SecretBox([new_key]).open(resealed) == WEBHOOK_SECRET
    with pytest.raises(SecretUnavailable):
        SecretBox([old_key]).open(resealed)

    # The old key dropped: still works. Without any key that opens it: verdicts are masked
    # (no unsigned or wrongly signed call is made) and webhooks cannot be registered anew.
    with (
        BackgroundServer(registered_settings(db, secret_keys=[new_key])) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert score(http, "hook.rest", "red green", REF)["score"] == 1.0
    hits = webhook.hits["/grade"]
    with (
        BackgroundServer(registered_settings(db, secret_keys=[old_key])) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        verdict = score(http, "hook.rest", "red green", REF)
        assert (
            verdict["status"] == "error"
            and verdict["score"] is None
            and "REFEREE_SECRET_KEYS" in verdict["reason"]
        )
        r = register(http, hook_type("hook.rest", webhook.url("/grade"), secret=None))
        assert r.status_code == 422 and r.json()["error"] == "secret_undecryptable"
    assert webhook.hits["/grade"] == hits
    with (
        BackgroundServer(registered_settings(db, secret_keys=[])) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        r = register(http, hook_type("hook.other", webhook.url("/grade")))
        assert r.status_code == 422 and r.json()["error"] == "webhooks_disabled"


def test_plain_text_secrets_from_before_are_encrypted_at_start(tmp_path: Path, webhook: Webhook) -> None:
    db = tmp_path / "legacy.db"
    with (
        BackgroundServer(registered_settings(db)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert register(http, hook_type("hook.legacy", webhook.url("/grade"))).status_code == 201
    with sqlite3.connect(db) as conn:  # as a version before encryption at rest stored it
        conn.execute("UPDATE verifier_versions SET secret = ?", (WEBHOOK_SECRET,))
    with (
        BackgroundServer(registered_settings(db)) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        assert score(http, "hook.legacy", "red green", REF)["score"] == 1.0
    (stored,) = _stored_secrets(db)
    assert stored.startswith(PREFIX) and SecretBox([SECRET_KEY]).open(stored) == WEBHOOK_SECRET


def test_a_bad_key_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="REFEREE_SECRET_KEYS"):
        SecretBox(["not-a-fernet-key"])
