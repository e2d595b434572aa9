"""`POST /v1/audits` / `GET /v1/audits/{id}`: a verifier audit as a background job of the
service (issue 15), over the service's own scorer, while scoring goes on."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from referee.service.security_headers import HEADERS, REPORT_CSP
from tests.conftest import make_settings
from tests.data import devset
from tests.timing import wait_until, within


@pytest.fixture(scope="module")
def http() -> Any:
    with BackgroundServer(make_settings()) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def _math_rows(n: int) -> list[dict[str, Any]]:
    rows = [r for r in devset("math").rows if "expected" in r][:n]
    return [
        {
            "response": r["response"],
            "reference": r["gold"],
            "expected": float(r["expected"]),
            "category": r["category"],
        }
        for r in rows
    ]


def _finished(http: httpx.Client, audit_id: str) -> dict[str, Any]:
    job: dict[str, Any] = {}

    def done() -> bool:
        job.update(http.get(f"/v1/audits/{audit_id}").json())
        return job["status"] != "running"

    wait_until(done, within(120), interval_s=0.2, what="the audit to finish")
    return job


def test_an_audit_runs_in_the_background_with_progress_and_reports(http: httpx.Client) -> None:
    rows = _math_rows(40)
    wrong_label = {**rows[0], "expected": 1.0 - rows[0]["expected"], "category": "mislabelled"}
    started = http.post("/v1/audits", json={"verifier": "math", "rows": [*rows, wrong_label]})
    assert started.status_code == 202, started.text
    job = started.json()
    assert job["status"] == "running" and job["verifier"] == "math"
    # Scoring is served while the audit runs.
    scored = http.post("/v1/score", json={"verifier": "exact", "response": "4", "reference": "4"})
    assert scored.status_code == 200 and scored.json()["score"] == 1.0
    job = _finished(http, job["id"])
    assert job["status"] == "done", job
    assert job["progress"]["done"] == job["progress"]["total"] > len(rows)  # rows and probes
    report = job["report"]
    assert report["rows"] == len(rows) + 1
    # Every dev row agrees; the one mislabelled row is the only disagreement, listed as such.
    disagreements = report["false_positives"] + report["false_negatives"]
    assert [d["category"] for d in disagreements] == ["mislabelled"]
    assert report["accuracy"] == pytest.approx(len(rows) / (len(rows) + 1))
    assert report["probes"] and all("passed" in p for p in report["probes"])
    markdown = http.get(f"/v1/audits/{job['id']}", params={"format": "markdown"})
    assert markdown.status_code == 200 and markdown.headers["content-type"].startswith("text/markdown")
    assert "math" in markdown.text and "mislabelled" in markdown.text
    html = http.get(f"/v1/audits/{job['id']}", params={"format": "html"})
    assert html.status_code == 200 and html.text.lstrip().lower().startswith("<!doctype html")


def test_an_unknown_verifier_is_reported_as_error_rows(http: httpx.Client) -> None:
    body = {"verifier": "no.such.thing", "rows": _math_rows(2), "probes": False}
    started = http.post("/v1/audits", json=body)
    assert started.status_code == 202
    job = _finished(http, started.json()["id"])
    assert job["status"] == "done"
    errors = job["report"]["errors"]
    assert len(errors) == 2 and all("unknown verifier 'no.such.thing'" in e["reason"] for e in errors)


@pytest.mark.parametrize(
    "body",
    [
        {"verifier": "math", "rows": []},
        {"verifier": "math", "rows": [{"response": "1", "reference": "1"}]},  # no expected
        {"verifier": "math", "rows": [{"response": "1", "reference": "1", "expected": 2}]},
        {"verifier": "", "rows": [{"response": "1", "reference": "1", "expected": 1}]},
    ],
)
def test_bad_audit_requests_are_422(http: httpx.Client, body: dict[str, Any]) -> None:
    r = http.post("/v1/audits", json=body)
    assert r.status_code == 422 and r.json()["error"] == "validation_error", r.text


def test_an_unknown_audit_is_404(http: httpx.Client) -> None:
    r = http.get("/v1/audits/0123")
    assert r.status_code == 404 and r.json()["error"] == "unknown_audit"


# ---- issue 27, defect 5: an audit is its key's; quotas; cancel ---------------------------------

KEY_1, KEY_2, ADMIN = "audit-key-1", "audit-key-2", "audit-admin"


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def keyed() -> Any:
    settings = make_settings(
        api_keys=[KEY_1, KEY_2], admin_keys=[ADMIN], audit_max_rows=50, audit_max_running_per_key=1
    )
    with BackgroundServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def _sleepy_audit(n: int, seconds: float = 0.5) -> dict[str, Any]:
    rows = [{"response": f"{seconds}", "reference": None, "expected": 1.0} for _ in range(n)]
    return {"verifier": "test.sleepy", "rows": rows, "probes": False}


def test_an_audit_is_visible_only_to_its_key_and_admins(keyed: httpx.Client) -> None:
    started = keyed.post("/v1/audits", json={"verifier": "math", "rows": _math_rows(3)}, headers=_as(KEY_1))
    assert started.status_code == 202, started.text
    audit_id = started.json()["id"]
    for form in ("json", "markdown", "html"):
        other = keyed.get(f"/v1/audits/{audit_id}", params={"format": form}, headers=_as(KEY_2))
        assert other.status_code == 404 and other.json()["error"] == "unknown_audit"
    assert keyed.delete(f"/v1/audits/{audit_id}", headers=_as(KEY_2)).status_code == 404
    assert audit_id not in [a["id"] for a in keyed.get("/v1/audits", headers=_as(KEY_2)).json()["audits"]]
    assert audit_id in [a["id"] for a in keyed.get("/v1/audits", headers=_as(KEY_1)).json()["audits"]]
    assert audit_id in [a["id"] for a in keyed.get("/v1/audits", headers=_as(ADMIN)).json()["audits"]]

    def done() -> bool:
        return keyed.get(f"/v1/audits/{audit_id}", headers=_as(KEY_1)).json()["status"] == "done"

    wait_until(done, within(120), interval_s=0.2, what="the audit to finish")
    assert keyed.get(f"/v1/audits/{audit_id}", headers=_as(ADMIN)).json()["report"]["rows"] == 3
    # The HTML report carries the dashboard's security headers and its report policy.
    html = keyed.get(f"/v1/audits/{audit_id}", params={"format": "html"}, headers=_as(KEY_1))
    assert html.status_code == 200
    assert html.headers["content-security-policy"] == REPORT_CSP
    assert "sandbox" in REPORT_CSP.split("; ")
    for name, value in HEADERS.items():
        if name != "Content-Security-Policy":
            assert html.headers[name] == value, name
    # An ended audit is forgotten by DELETE, for its key only.
    assert keyed.delete(f"/v1/audits/{audit_id}", headers=_as(KEY_1)).status_code == 204
    assert keyed.get(f"/v1/audits/{audit_id}", headers=_as(KEY_1)).status_code == 404


def test_a_running_audit_is_cancelled_and_the_per_key_quotas_hold(keyed: httpx.Client) -> None:
    too_large = keyed.post("/v1/audits", json=_sleepy_audit(51), headers=_as(KEY_1))
    assert too_large.status_code == 422 and too_large.json()["error"] == "audit_too_large"
    started = keyed.post("/v1/audits", json=_sleepy_audit(40), headers=_as(KEY_1))
    assert started.status_code == 202, started.text
    audit_id = started.json()["id"]
    # One running audit per key: the same key is told to wait (429), another key is not.
    second = keyed.post("/v1/audits", json=_sleepy_audit(1, 0.0), headers=_as(KEY_1))
    assert second.status_code == 429 and second.json()["error"] == "audit_quota"
    assert int(second.headers["retry-after"]) >= 1
    other = keyed.post("/v1/audits", json=_sleepy_audit(1, 0.0), headers=_as(KEY_2))
    assert other.status_code == 202, other.text

    cancelled = keyed.delete(f"/v1/audits/{audit_id}", headers=_as(KEY_1))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    job = keyed.get(f"/v1/audits/{audit_id}", headers=_as(KEY_1)).json()
    assert job["status"] == "cancelled" and job["finished"] is not None
    assert job["progress"]["done"] < job["progress"]["total"] == 40
    # Its queued work is gone: the workers drain at once, and the key may start another.
    wait_until(
        lambda: keyed.get("/readyz").json()["checks"]["workers"]["pending"] == 0,
        within(10),
        what="the cancelled audit's checks to leave the workers",
    )
    again = keyed.post("/v1/audits", json=_sleepy_audit(1, 0.0), headers=_as(KEY_1))
    assert again.status_code == 202, again.text
