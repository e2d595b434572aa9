"""The dashboard's login against a real service: the cookie holds a session id (never the key),
logout ends the session on the server, failed logins are limited per client and across clients
(429 + Retry-After), cross-origin form posts are refused (403), and an expired session sends
the browser back to the login form.

Clients are told apart by `X-Forwarded-For`, which uvicorn honours from a loopback proxy (the
test client is one), as it honours `X-Forwarded-Proto` for a proxy that terminates TLS."""

from __future__ import annotations

import base64
import hashlib
import itertools
from collections.abc import Iterator

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings

API, ADMIN = "login-api-key", "login-admin-key"
COOKIE = "referee_ui_session"
_addresses = itertools.count(1)


@pytest.fixture(scope="module")
def keyed() -> Iterator[BackgroundServer]:
    with BackgroundServer(make_settings(workers=1, api_keys=[API], admin_keys=[ADMIN])) as server:
        yield server


def browser(server: BackgroundServer, address: str | None = None, **headers: str) -> httpx.Client:
    """A browser on its own address (a fresh one unless given), on the service's own pages."""
    if address is None:
        n = next(_addresses)
        address = f"10.9.{n // 250}.{n % 250 + 1}"
    return httpx.Client(
        base_url=server.url,
        timeout=60,
        headers={"Origin": server.url, "X-Forwarded-For": address, **headers},
    )


def log_in(http: httpx.Client, key: str = API) -> httpx.Response:
    return http.post("/ui/login", data={"key": key, "next": "/ui/verifiers"})


def test_the_cookie_is_a_random_session_id_never_the_key(keyed: BackgroundServer) -> None:
    with browser(keyed) as http:
        r = log_in(http)
        assert r.status_code == 303 and r.headers["location"] == "/ui/verifiers"
        cookie = r.headers["set-cookie"]
        session_id = http.cookies[COOKIE]
        assert http.get("/ui/verifiers").status_code == 200
    attributes = [part.strip() for part in cookie.split(";")]
    assert "HttpOnly" in attributes and "SameSite=strict" in attributes and "Path=/ui" in attributes
    assert "Secure" not in attributes  # plain HTTP: a Secure cookie would never come back
    encoded = base64.urlsafe_b64encode(API.encode()).decode()
    assert API not in cookie and encoded not in cookie and len(session_id) >= 43
    # The service holds neither the id nor the key, only the id's digest.
    held = keyed.runtime.dashboard.sessions._sessions
    assert hashlib.sha256(session_id.encode()).digest() in held
    assert all(session_id.encode() not in digest and API.encode() not in digest for digest in held)
    with browser(keyed) as other:
        log_in(other)
        assert other.cookies[COOKIE] != session_id  # a new random id per login


def test_the_cookie_is_secure_behind_a_tls_proxy(keyed: BackgroundServer) -> None:
    origin = keyed.url.replace("http://", "https://")
    with browser(keyed, **{"X-Forwarded-Proto": "https", "Origin": origin}) as http:
        r = log_in(http)
    assert r.status_code == 303
    assert "Secure" in [part.strip() for part in r.headers["set-cookie"].split(";")]


def test_logout_ends_the_session_on_the_server(keyed: BackgroundServer) -> None:
    with browser(keyed) as http:
        assert log_in(http).status_code == 303
        stolen = http.cookies[COOKIE]
        assert http.get("/ui/fragments/overview").status_code == 200
        out = http.post("/ui/logout")
        assert out.status_code == 303 and f'{COOKIE}=""' in out.headers["set-cookie"]
    # The old cookie, replayed (say, copied before the logout), opens nothing any more.
    with httpx.Client(base_url=keyed.url, timeout=60, cookies={COOKIE: stolen}) as replay:
        page = replay.get("/ui")
        assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
        assert replay.get("/ui/fragments/overview").status_code == 401


def test_logging_in_again_ends_the_previous_session(keyed: BackgroundServer) -> None:
    with browser(keyed) as http:
        log_in(http)
        first = http.cookies[COOKIE]
        log_in(http, ADMIN)
        assert http.cookies[COOKIE] != first and "admin key" in http.get("/ui").text
    with httpx.Client(base_url=keyed.url, timeout=60, cookies={COOKIE: first}) as replay:
        assert replay.get("/ui").status_code == 303


def test_guessing_keys_gets_429_after_the_limit(keyed: BackgroundServer) -> None:
    limit = keyed.settings.service.ui_login_max_failures
    window = keyed.settings.service.ui_login_window_s
    with browser(keyed, "10.66.0.1") as attacker:
        for guess in range(limit):
            assert log_in(attacker, f"guess-{guess}").status_code == 401, guess
        refused = log_in(attacker, "guess-next")
        assert refused.status_code == 429 and 0 < int(refused.headers["retry-after"]) <= window
        assert "Too many failed logins" in refused.text and "set-cookie" not in refused.headers
        # Beyond the limit the key is not even checked: the right one is refused as well.
        assert log_in(attacker, API).status_code == 429
        # Nor are the dashboard's fragments another way to try keys.
        r = attacker.get("/ui/fragments/overview", headers={"Authorization": "Bearer guess"})
        assert r.status_code == 429 and r.json()["error"] == "too_many_failed_logins"
        assert "retry-after" in r.headers
    # Another client is not held to the attacker's failures.
    with browser(keyed, "10.66.0.2") as honest:
        assert log_in(honest).status_code == 303
        assert honest.get("/ui").status_code == 200


def test_an_ipv6_client_is_counted_by_its_64(keyed: BackgroundServer) -> None:
    limit = keyed.settings.service.ui_login_max_failures
    with browser(keyed, "2001:db8:1:2::1") as attacker:
        for guess in range(limit):
            assert log_in(attacker, f"guess-{guess}").status_code == 401
    with browser(keyed, "2001:db8:1:2::ffff") as same_host:
        assert log_in(same_host, "guess-again").status_code == 429
    with browser(keyed, "2001:db8:1:3::1") as next_network:
        assert log_in(next_network).status_code == 303


def test_failures_across_clients_hold_back_only_clients_that_failed() -> None:
    settings = make_settings(workers=1, api_keys=[API], ui_login_max_failures_all_clients=12)
    with BackgroundServer(settings) as server:
        for n in range(12):  # a spread-out guesser: one failure from each of 12 addresses
            with browser(server, f"10.77.0.{n + 1}") as http:
                assert log_in(http, f"guess-{n}").status_code == 401
        with browser(server, "10.77.0.1") as again:
            assert log_in(again, "guess-again").status_code == 429
            assert log_in(again, API).status_code == 429
        # A client without failures still logs in.
        with browser(server, "10.77.1.1") as honest:
            assert log_in(honest).status_code == 303


@pytest.mark.parametrize(
    ("headers", "accepted"),
    [
        ({"Origin": "https://evil.example"}, False),
        ({"Origin": "null"}, False),  # what a page with `Referrer-Policy: no-referrer` sends
        ({"Origin": "http://localhost:{port}"}, False),  # another host
        ({"Origin": "http://127.0.0.1:{port}0"}, False),  # another port
        ({"Origin": "https://127.0.0.1:{port}"}, False),  # another scheme
        ({"Origin": "{url}", "Referer": "https://evil.example/"}, True),  # Origin decides
        ({"Referer": "https://evil.example/ui/login"}, False),
        ({"Referer": "{url}/ui/login?next=/ui"}, True),  # no Origin: the page's address
        ({}, False),  # neither
    ],
)
def test_cross_origin_form_posts_are_refused(
    keyed: BackgroundServer, headers: dict[str, str], accepted: bool
) -> None:
    port = str(keyed.settings.service.port)
    sent = {
        name: value.replace("{url}", keyed.url).replace("{port}", port) for name, value in headers.items()
    }
    with httpx.Client(base_url=keyed.url, timeout=60, headers={"X-Forwarded-For": "10.88.0.1"}) as http:
        r = http.post("/ui/login", data={"key": API}, headers=sent)
        if accepted:
            assert r.status_code == 303 and COOKIE in r.headers["set-cookie"], r.text
            return
        assert r.status_code == 403 and "set-cookie" not in r.headers, r.text
        assert r.json()["error"] == "cross_origin" and "form post" in r.json()["message"]


def test_a_cross_origin_logout_ends_nothing(keyed: BackgroundServer) -> None:
    with browser(keyed) as http:
        log_in(http)
        r = http.post("/ui/logout", headers={"Origin": "https://evil.example"})
        assert r.status_code == 403 and r.json()["error"] == "cross_origin"
        assert http.get("/ui").status_code == 200


def test_an_expired_session_goes_back_to_the_login_form(keyed: BackgroundServer) -> None:
    sessions = keyed.runtime.dashboard.sessions
    real_clock = sessions.clock
    with browser(keyed) as http:
        log_in(http)
        assert http.get("/ui/audits").status_code == 200
        try:
            # Idle for longer than REFEREE_UI_SESSION_IDLE_S.
            sessions.clock = lambda: real_clock() + sessions.idle_s + 1
            page = http.get("/ui/audits")
            assert page.status_code == 303 and page.headers["location"] == "/ui/login?next=/ui/audits"
            assert http.get("/ui/fragments/overview").status_code == 401
        finally:
            sessions.clock = real_clock
        # Gone for good, even once the clock is back.
        assert http.get("/ui/audits").status_code == 303
