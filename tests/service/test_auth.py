"""Bearer keys: 401 without a valid key, 403 for an API key on admin routes, open mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from referee.service.auth import Auth, AuthError, Role
from referee.service.background import BackgroundServer
from tests.registered.conftest import registered_settings
from tests.registered.test_api import r1_math

ADMIN, API = "admin-key-1", "api-key-1"


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    db = Path(tmp_path_factory.mktemp("auth")) / "r.db"
    settings = registered_settings(db, admin_keys=[ADMIN, "admin-key-2"], api_keys=[API])
    with BackgroundServer(settings) as running:
        yield running


@pytest.fixture(scope="module")
def unlocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    db = Path(tmp_path_factory.mktemp("auth")) / "r.db"
    with BackgroundServer(registered_settings(db)) as running:
        yield running


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


SCORE = {"verifier": "exact", "response": "a", "reference": "a"}


def test_keys_gate_every_route_by_role(locked: BackgroundServer) -> None:
    with httpx.Client(base_url=locked.url, timeout=60) as http:
        for headers in ({}, bearer("wrong"), {"Authorization": API}, {"Authorization": "Basic " + API}):
            r = http.post("/v1/score", json=SCORE, headers=headers)
            assert r.status_code == 401, headers
            assert r.json()["error"] == "unauthorized" and set(r.json()) == {"error", "message", "detail"}
            assert r.headers["www-authenticate"] == "Bearer"
        assert http.get("/v1/verifiers").status_code == 401
        assert http.post("/v1/verifiers", json=r1_math("auth.t")).status_code == 401

        for key in (API, ADMIN, "admin-key-2"):
            assert http.post("/v1/score", json=SCORE, headers=bearer(key)).json()["score"] == 1.0
            assert http.get("/v1/verifiers/exact", headers=bearer(key)).status_code == 200

        r = http.post("/v1/verifiers", json=r1_math("auth.t"), headers=bearer(API))
        assert r.status_code == 403 and r.json()["error"] == "forbidden"
        assert http.delete("/v1/verifiers/auth.t", headers=bearer(API)).status_code == 403
        assert http.post("/v1/verifiers", json=r1_math("auth.t"), headers=bearer(ADMIN)).status_code == 201
        assert http.get("/v1/verifiers/auth.t/versions", headers=bearer(API)).status_code == 200
        assert http.delete("/v1/verifiers/auth.t", headers=bearer(ADMIN)).status_code == 200
        # A keyless caller is refused before its body is read or parsed: an unparsable body gets
        # 401, not the 422 that parsing it would give.
        junk = b"{" + b"x" * (1024 * 1024)
        r = http.post("/v1/score", content=junk, headers={"content-type": "application/json"})
        assert r.status_code == 401
        # Health and metrics stay open for probes.
        assert http.get("/livez").status_code == 200 and http.get("/readyz").status_code == 200


def test_open_mode_without_keys(unlocked: BackgroundServer) -> None:
    with httpx.Client(base_url=unlocked.url, timeout=60) as http:
        assert http.post("/v1/score", json=SCORE).json()["score"] == 1.0
        assert http.post("/v1/verifiers", json=r1_math("auth.open")).status_code == 201


def test_role_resolution_unit() -> None:
    auth = Auth(registered_settings(Path("unused.db"), admin_keys=["a" * 8], api_keys=["b" * 8]).service)
    assert auth.role_of("Bearer " + "a" * 8) is Role.admin
    assert auth.role_of("bearer " + "b" * 8) is Role.client
    for header in (None, "", "Bearer", "Bearer " + "a" * 7, "Token " + "a" * 8):
        with pytest.raises(AuthError):
            auth.role_of(header)
    assert Auth(registered_settings(Path("unused.db")).service).open
