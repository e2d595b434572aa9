"""Bearer keys: 401 without a valid key, 403 for an API key on admin routes, open mode; wrong
keys on /v1 held to the dashboard's failed-login throttle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from referee.runtime import LoginThrottle
from referee.service.auth import Auth, AuthError, KeyGate, Role
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


# ---- wrong keys are throttled per client, as dashboard logins are ---------------------------


def from_address(address: str) -> dict[str, str]:
    """A client on its own address: uvicorn takes X-Forwarded-For from loopback (a proxy)."""
    return {"X-Forwarded-For": address}


def test_wrong_keys_on_v1_get_429_from_that_client_only(locked: BackgroundServer) -> None:
    limit = locked.settings.service.ui_login_max_failures
    window = locked.settings.service.ui_login_window_s
    attacker, honest = from_address("10.88.0.1"), from_address("10.88.0.2")
    with httpx.Client(base_url=locked.url, timeout=60) as http:
        for guess in range(limit):
            r = http.post("/v1/score", json=SCORE, headers={**attacker, **bearer(f"guess-{guess}")})
            assert r.status_code == 401, guess
        refused = http.post("/v1/score", json=SCORE, headers={**attacker, **bearer("guess-next")})
        assert refused.status_code == 429 and 0 < int(refused.headers["retry-after"]) <= window
        body = refused.json()
        assert body["error"] == "too_many_wrong_keys" and set(body) == {"error", "message", "detail"}
        # Its key is not even checked: the right one is refused too, on every route.
        assert http.post("/v1/score", json=SCORE, headers={**attacker, **bearer(API)}).status_code == 429
        assert http.get("/v1/verifiers", headers={**attacker, **bearer(ADMIN)}).status_code == 429
        # Without a key it is told to authenticate, as anyone is.
        assert http.get("/v1/verifiers", headers=attacker).status_code == 401
        # One throttle for both doors: the dashboard's login refuses this client as well.
        login = http.post(
            "/ui/login", data={"key": API}, headers={**attacker, "Origin": locked.url}, follow_redirects=False
        )
        assert login.status_code == 429
        # Another client's right key is served.
        r = http.post("/v1/score", json=SCORE, headers={**honest, **bearer(API)})
        assert r.status_code == 200 and r.json()["score"] == 1.0


def test_missing_keys_are_no_guesses(locked: BackgroundServer) -> None:
    limit = locked.settings.service.ui_login_max_failures
    client = from_address("10.88.1.1")
    with httpx.Client(base_url=locked.url, timeout=60, headers=client) as http:
        for headers in ({}, {"Authorization": API}, {"Authorization": "Basic " + API}) * limit:
            assert http.post("/v1/score", json=SCORE, headers=headers).status_code == 401
        assert http.post("/v1/score", json=SCORE, headers=bearer(API)).status_code == 200


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _served(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_a_throttled_client_is_let_in_again_once_its_failures_leave_the_window() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(max_failures=3, window_s=60.0, max_failures_all=100, clock=clock)
    gate = KeyGate(
        _served, Auth(registered_settings(Path("unused.db"), api_keys=[API]).service), throttle=throttle
    )

    def client(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=gate, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://referee")

    async with client("10.99.0.1") as attacker, client("10.99.0.2") as honest:
        for _ in range(3):
            assert (await attacker.get("/v1/verifiers", headers=bearer("guess"))).status_code == 401
            clock.now += 10
        refused = await attacker.get("/v1/verifiers", headers=bearer(API))
        # The first failure leaves the window 60 s after it: 30 s from now.
        assert refused.status_code == 429 and refused.headers["retry-after"] == "30"
        assert (await honest.get("/v1/verifiers", headers=bearer(API))).status_code == 200
        clock.now += 29.5
        assert (await attacker.get("/v1/verifiers", headers=bearer(API))).status_code == 429
        # Let in (the refusals were not counted as failures), but its two newer failures still
        # count: one more wrong key and it is refused again.
        clock.now += 0.5
        assert (await attacker.get("/v1/verifiers", headers=bearer(API))).status_code == 200
        assert (await attacker.get("/v1/verifiers", headers=bearer("guess"))).status_code == 401
        assert (await attacker.get("/v1/verifiers", headers=bearer(API))).status_code == 429
