"""The dashboard's audits (/ui/audits) follow `/v1/audits`' rule (issue 27, defect 5): a key
sees the audits it started, an admin key every one; another key's audit is absent from the
page and the htmx fragment, and its reports are 404. A running audit has a cancel button (a
same-origin form) that cancels it as `DELETE /v1/audits/{id}` does; a cancelled one shows as
such."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from referee.service.security_headers import REPORT_CSP
from tests.conftest import make_settings
from tests.timing import wait_until, within

KEY_A, KEY_B, ADMIN = "ui-audit-key-a", "ui-audit-key-b", "ui-audit-admin"
ROWS = [
    {"response": "42", "reference": "42", "expected": 1.0},
    {"response": "41", "reference": "42", "expected": 0.0},
]
AUDIT_IDS = re.compile(r'data-audit="([0-9a-f]{32})"')


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def finished_audit(server: BackgroundServer, key: str) -> str:
    with httpx.Client(base_url=server.url, timeout=60, headers=bearer(key)) as http:
        started = http.post("/v1/audits", json={"verifier": "exact", "rows": ROWS, "probes": False})
        assert started.status_code == 202, started.text
        audit_id: str = started.json()["id"]
        wait_until(
            lambda: http.get(f"/v1/audits/{audit_id}").json()["status"] == "done",
            within(60),
            interval_s=0.1,
            what="the audit to finish",
        )
    return audit_id


def sleepy_audit(http: httpx.Client, rows: int = 40) -> str:
    """An audit that runs for a while (0.5 s a row, two at a time): long enough to cancel."""
    body = {
        "verifier": "test.sleepy",
        "rows": [{"response": "0.5", "reference": None, "expected": 1.0}] * rows,
        "probes": False,
    }
    started = http.post("/v1/audits", json=body)
    assert started.status_code == 202, started.text
    audit_id: str = started.json()["id"]
    return audit_id


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[BackgroundServer, str, str]]:
    """A service with two client keys and an admin key; one finished audit of each client key."""
    with BackgroundServer(make_settings(workers=1, api_keys=[KEY_A, KEY_B], admin_keys=[ADMIN])) as server:
        yield server, finished_audit(server, KEY_A), finished_audit(server, KEY_B)


def shown(http: httpx.Client) -> tuple[set[str], set[str]]:
    """The audit ids on the audits page and in its htmx fragment."""
    page, fragment = http.get("/ui/audits"), http.get("/ui/fragments/audits")
    assert page.status_code == fragment.status_code == 200
    return set(AUDIT_IDS.findall(page.text)), set(AUDIT_IDS.findall(fragment.text))


def test_a_key_sees_its_own_audits_and_an_admin_every_one(service: tuple[BackgroundServer, str, str]) -> None:
    server, of_a, of_b = service
    for key, expected in ((KEY_A, {of_a}), (KEY_B, {of_b}), (ADMIN, {of_a, of_b})):
        with httpx.Client(base_url=server.url, timeout=60, headers=bearer(key)) as http:
            page, fragment = shown(http)
            assert page == fragment == expected, key
            # The API lists the same audits to the same key: one rule for both.
            listed = {a["id"] for a in http.get("/v1/audits").json()["audits"]}
            assert listed == expected, key


@pytest.mark.parametrize("form", ["html", "md"])
def test_another_keys_report_is_404(service: tuple[BackgroundServer, str, str], form: str) -> None:
    server, of_a, of_b = service
    with httpx.Client(base_url=server.url, timeout=60) as http:
        theirs = http.get(f"/ui/audits/{of_a}/report.{form}", headers=bearer(KEY_B))
        assert theirs.status_code == 404 and theirs.json()["error"] == "unknown_audit"
        for key, audit_id in ((KEY_A, of_a), (ADMIN, of_a), (ADMIN, of_b), (KEY_B, of_b)):
            report = http.get(f"/ui/audits/{audit_id}/report.{form}", headers=bearer(key))
            assert report.status_code == 200 and "exact" in report.text, (key, audit_id)
            assert report.headers["content-security-policy"] == REPORT_CSP


def test_a_logged_in_browser_sees_only_its_keys_audits(service: tuple[BackgroundServer, str, str]) -> None:
    server, of_a, of_b = service
    with httpx.Client(base_url=server.url, timeout=60, headers={"Origin": server.url}) as http:
        logged_in = http.post("/ui/login", data={"key": KEY_B, "next": "/ui/audits"})
        assert logged_in.status_code == 303
        assert shown(http) == ({of_b}, {of_b})
        assert http.get(f"/ui/audits/{of_a}/report.html").status_code == 404


def _status(server: BackgroundServer, audit_id: str) -> Any:
    with httpx.Client(base_url=server.url, timeout=60, headers=bearer(ADMIN)) as http:
        return http.get(f"/v1/audits/{audit_id}").json()["status"]


def test_the_cancel_button_cancels_a_running_audit(service: tuple[BackgroundServer, str, str]) -> None:
    server, _, _ = service
    own_page = {"Origin": server.url}
    with httpx.Client(base_url=server.url, timeout=60, headers=bearer(KEY_A)) as http:
        audit_id = sleepy_audit(http)
        row = http.get("/ui/audits").text.split(f'data-audit="{audit_id}"')[1].split("</tr>")[0]
        assert 'class="status-running"' in http.get("/ui/fragments/audits").text
        assert f'action="/ui/audits/{audit_id}/cancel"' in row
        # Another key's cancel is 404 (the id might as well not exist); a post from another
        # site, or naming no page, is refused: the audit runs on.
        other = http.post(f"/ui/audits/{audit_id}/cancel", headers={**own_page, **bearer(KEY_B)})
        assert other.status_code == 404 and other.json()["error"] == "unknown_audit"
        foreign = http.post(f"/ui/audits/{audit_id}/cancel", headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["error"] == "cross_origin"
        assert http.post(f"/ui/audits/{audit_id}/cancel").status_code == 403
        assert _status(server, audit_id) == "running"

        cancelled = http.post(f"/ui/audits/{audit_id}/cancel", headers=own_page)
        assert cancelled.status_code == 303 and cancelled.headers["location"] == "/ui/audits"
        job = http.get(f"/v1/audits/{audit_id}").json()
        assert job["status"] == "cancelled" and job["progress"]["done"] < job["progress"]["total"]
        row = http.get("/ui/audits").text.split(f'data-audit="{audit_id}"')[1].split("</tr>")[0]
        assert 'class="status-cancelled"' in row and ">cancelled<" in row.replace("\n", "").replace(" ", "")
        assert "/cancel" not in row
        # Cancelling an ended audit again changes nothing (DELETE would forget it).
        again = http.post(f"/ui/audits/{audit_id}/cancel", headers=own_page)
        assert again.status_code == 303 and _status(server, audit_id) == "cancelled"


def test_an_admin_cancels_any_audit_from_a_session(service: tuple[BackgroundServer, str, str]) -> None:
    server, _, _ = service
    with httpx.Client(base_url=server.url, timeout=60, headers=bearer(KEY_B)) as owner:
        audit_id = sleepy_audit(owner)
    with httpx.Client(base_url=server.url, timeout=60, headers={"Origin": server.url}) as browser:
        # Without a session the button leads to the login form, back to the audits afterwards.
        anonymous = browser.post(f"/ui/audits/{audit_id}/cancel")
        assert anonymous.status_code == 303
        assert anonymous.headers["location"] == "/ui/login?next=/ui/audits"
        assert _status(server, audit_id) == "running"
        assert browser.post("/ui/login", data={"key": ADMIN, "next": "/ui/audits"}).status_code == 303
        assert browser.post(f"/ui/audits/{audit_id}/cancel").status_code == 303
    assert _status(server, audit_id) == "cancelled"
