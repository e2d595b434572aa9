"""`POST /v1/audits` / `GET /v1/audits/{id}`: a verifier audit as a background job of the
service (issue 15), over the service's own scorer, while scoring goes on."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
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
