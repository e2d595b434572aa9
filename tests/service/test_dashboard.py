"""The dashboard (/ui) against real services: pages, the chart data they embed, the login
cookie with keys configured, statistics switched off; then the same pages in a real browser
(Debian's chromium driven by Playwright): the charts are drawn from the service's numbers,
htmx refreshes them, and the console stays free of errors (CSP violations included)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.client import Client
from referee.models import GroupSpec
from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import wait_until, within

API, ADMIN, OTHER = "dash-api-key", "dash-admin-key", "dash-other-key"
CHROMIUM = Path("/usr/bin/chromium")
DATA = re.compile(r'<script type="application/json" id="overview-json">(.*?)</script>', re.S)

# A declarative type with two versions (the second one replaces the first).
WHOLE_ANSWER = {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "exact"}}
NUMERIC = {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "numeric"}}


def registration(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "dash.answer",
        "kind": "declarative",
        "description": "the whole response is the answer",
        "spec": spec,
        "examples": [
            {"response": "42", "reference": "42", "expected_score": 1.0},
            {"response": "41", "reference": "42", "expected_score": 0.0},
        ],
    }


def group(prompt: str, right: int, wrong: int, verifier: str = "exact") -> GroupSpec:
    return GroupSpec(
        verifier=verifier, reference="42", responses=["42"] * right + ["41"] * wrong, prompt_id=prompt
    )


# Prompt pass rates 0.75, 1.0 (twice: zero variance), 0.0 (zero variance), 0.5; and one group
# of a verifier that raises (error verdicts, no prompt_id).
GROUPS = [
    group("p1", 3, 1),
    group("p2", 4, 0),
    group("p2", 4, 0),
    group("p3", 0, 4),
    group("p4", 1, 1, verifier="numeric"),
]
ERRORS = [GroupSpec(verifier="test.raising", reference=None, responses=["boom", "boom"])]


def score(url: str, key: str | None, groups: list[GroupSpec] = GROUPS) -> None:
    with Client(url, api_key=key) as client:
        client.score_groups(groups)
        client.score_groups(ERRORS, on_invalid="error_verdict")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def embedded(html: str) -> dict[str, Any]:
    match = DATA.search(html)
    assert match, "the page carries no chart data"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def finished_audit(http: httpx.Client, body: dict[str, Any]) -> str:
    started = http.post("/v1/audits", json=body)
    assert started.status_code == 202, started.text
    audit_id: str = started.json()["id"]
    wait_until(
        lambda: http.get(f"/v1/audits/{audit_id}").json()["status"] != "running",
        120,
        interval_s=0.1,
        what="the audit to finish",
    )
    assert http.get(f"/v1/audits/{audit_id}").json()["status"] == "done"
    return audit_id


AUDIT = {
    "verifier": "exact",
    "rows": [
        {"response": "42", "reference": "42", "expected": 1.0, "category": "right"},
        {"response": "41", "reference": "42", "expected": 0.0, "category": "wrong"},
        {"response": "7", "reference": "7", "expected": 1.0, "category": "right"},
    ],
    "probes": False,
}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """A service with keys: groups scored with the API key, a type registered (two versions),
    an audit done by the API key (the key the browser logs in with: an audit is its key's)."""
    settings = make_settings(
        workers=1,
        api_keys=[API, OTHER],
        admin_keys=[ADMIN],
        db_path=tmp_path_factory.mktemp("dash") / "referee.db",
    )
    with BackgroundServer(settings) as server:
        score(server.url, API)
        with httpx.Client(base_url=server.url, timeout=60, headers=bearer(ADMIN)) as http:
            for spec in (WHOLE_ANSWER, NUMERIC):
                r = http.post("/v1/verifiers", json=registration(spec))
                assert r.status_code == 201, r.text
        with httpx.Client(base_url=server.url, timeout=60, headers=bearer(API)) as http:
            finished_audit(http, AUDIT)
        yield server


@pytest.fixture(scope="module")
def open_service() -> Iterator[BackgroundServer]:
    with BackgroundServer(make_settings(workers=1)) as server:
        score(server.url, None)
        yield server


# ---- HTTP ------------------------------------------------------------------------------------


def test_pages_are_html_under_a_strict_content_security_policy(open_service: BackgroundServer) -> None:
    with httpx.Client(base_url=open_service.url, timeout=60) as http:
        for path in ("/ui", "/ui/verifiers", "/ui/audits", "/ui/login", "/ui/fragments/overview"):
            r = http.get(path)
            assert r.status_code == 200, (path, r.text)
            assert r.headers["content-type"] == "text/html; charset=utf-8"
            csp = r.headers["content-security-policy"]
            assert "script-src 'self';" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
            assert r.headers["x-content-type-options"] == "nosniff"
            if "/fragments/" not in path:  # a fragment is swapped into one of these pages
                # htmx's own eval paths (hx-on, `js:` values, event filters) stay off, whatever
                # the CSP says: the vendored htmx.min.js still carries them.
                config = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", r.text)
                assert config is not None and json.loads(config[1])["allowEval"] is False, path
        page = http.get("/ui").text
        # Every script is a file of the service, or a JSON data block; no inline handler.
        for tag in re.findall(r"<script[^>]*>", page):
            assert 'src="/ui/static/' in tag or 'type="application/json"' in tag, tag
        assert not re.search(r"\son[a-z]+=", page) and " style=" not in page
        for asset in ("dashboard.js", "dashboard.css", "vendor/chart.umd.min.js", "vendor/htmx.min.js"):
            r = http.get(f"/ui/static/{asset}")
            assert r.status_code == 200 and len(r.content) > 1000, asset
            assert r.headers["content-type"].startswith(("text/javascript", "text/css")), asset
        # Not part of the API's OpenAPI document.
        assert not any(p.startswith("/ui") for p in http.get("/openapi.json").json()["paths"])
        # The open service needs no login: the form says so and the POST goes on to the page.
        assert "no login is needed" in http.get("/ui/login").text
        r = http.post(
            "/ui/login", data={"key": "anything", "next": "/ui/audits"}, headers={"Origin": open_service.url}
        )
        assert r.status_code == 303 and r.headers["location"] == "/ui/audits"


def test_the_overview_embeds_the_service_statistics(open_service: BackgroundServer) -> None:
    with httpx.Client(base_url=open_service.url, timeout=60) as http:
        page = http.get("/ui").text
        data = embedded(page)
        fragment = embedded(http.get("/ui/fragments/overview").text)
        api_verifiers = http.get("/v1/stats/verifiers", params={"minutes": 60}).json()["verifiers"]
        api_prompts = http.get("/v1/stats/prompts").json()
    assert data["enabled"] and len(data["minutes"]) == 60
    assert data["minutes"] == sorted(data["minutes"]) and data["minutes"][1] - data["minutes"][0] == 60
    series = {v["name"]: v for v in data["verifiers"]}
    assert set(series) == {"exact", "numeric", "test.raising"}
    totals = {v["verifier"]: v for v in api_verifiers}
    assert sum(series["exact"]["verdicts"]) == totals["exact"]["verdicts"] == 4 + 4 + 4 + 4
    assert sum(series["numeric"]["verdicts"]) == 2
    assert sum(series["test.raising"]["verdicts"]) == totals["test.raising"]["errors"] == 2
    assert 1.0 in series["test.raising"]["error_share"]
    for v in series.values():
        assert len(v["verdicts"]) == len(v["pass_rate"]) == len(v["p50_ms"]) == len(v["p99_ms"]) == 60
    busy = [i for i, n in enumerate(series["exact"]["verdicts"]) if n]
    assert all(series["exact"]["p50_ms"][i] is not None for i in busy)
    # Prompt difficulty: p3 at 0, p4 at 0.5, p1 at 0.75, p2 at 1.0; two of five visits were flat.
    assert data["histogram"]["counts"] == api_prompts["pass_rate_histogram"]["counts"]
    assert data["histogram"]["counts"] == [1, 0, 0, 0, 0, 1, 0, 1, 0, 1]
    assert data["zero_variance_share"] == pytest.approx(api_prompts["zero_variance_share"])
    assert data["zero_variance_share"] == pytest.approx(3 / 5)
    assert fragment["histogram"] == data["histogram"]
    assert sum(sum(v["verdicts"]) for v in fragment["verifiers"]) == 20
    assert 'id="count-verdicts">20<' in page and 'id="count-prompts">4<' in page
    assert 'id="zero-variance-share">60.0%<' in page
    assert all(f'id="chart-{c}"' in page for c in ("verdicts", "errors", "pass", "latency", "difficulty"))


def test_verifiers_and_audits_pages_list_what_the_service_holds(keyed: BackgroundServer) -> None:
    with httpx.Client(base_url=keyed.url, timeout=60, headers=bearer(API)) as http:
        page = http.get("/ui/verifiers").text
        audits = http.get("/ui/audits").text
        fragment = http.get("/ui/fragments/audits")
        job = next(iter(re.findall(r'data-audit="([0-9a-f]{32})"', audits)))
        html_report = http.get(f"/ui/audits/{job}/report.html")
        markdown = http.get(f"/ui/audits/{job}/report.md")
        missing = http.get("/ui/audits/0123/report.html")
    registered = page.split('id="registered-table"')[1].split("</table>")[0]
    assert "<code>dash.answer</code>" in registered and "declarative" in registered
    assert "<code>@2</code>" in registered and "<code>@1</code>" in registered
    assert '<li class="disabled"><code>@1</code>' not in registered  # @1 stays pinnable
    installed = page.split('id="installed-table"')[1]
    for name in ("exact", "math", "numeric", "code"):
        assert f"<td><code>{name}</code></td>" in installed
    assert "builtin" in installed and "extra" in installed
    assert 'class="status-done"' in audits and "3 rows" in audits and "3/3" in audits
    assert fragment.status_code == 200 and job in fragment.text
    assert html_report.status_code == 200 and "Audit of exact" in html_report.text
    assert "sandbox" in html_report.headers["content-security-policy"]
    assert markdown.status_code == 200 and markdown.headers["content-type"].startswith("text/plain")
    assert "exact" in markdown.text
    assert missing.status_code == 404 and missing.json()["error"] == "unknown_audit"


def test_with_keys_the_pages_need_a_key_or_the_login_cookie(keyed: BackgroundServer) -> None:
    # A browser names the page its forms come from (the login's same-origin check).
    with httpx.Client(base_url=keyed.url, timeout=60, headers={"Origin": keyed.url}) as http:
        for path in ("/ui", "/ui/verifiers", "/ui/audits?x=1"):
            r = http.get(path)
            assert r.status_code == 303 and r.headers["location"].startswith("/ui/login?next=/ui"), path
        for path in ("/ui/fragments/overview", "/ui/fragments/audits"):
            r = http.get(path)
            assert r.status_code == 401 and r.json()["error"] == "unauthorized", path
            assert r.headers["www-authenticate"] == "Bearer"
            assert http.get(path, headers=bearer("wrong")).status_code == 401
        for junk in ("bm90LWEta2V5", "%%%", "_", API):  # no session's id (the key is none either)
            with httpx.Client(base_url=keyed.url, cookies={"referee_ui_session": junk}) as jar:
                assert jar.get("/ui").status_code == 303

        form = http.get("/ui/login", params={"next": "/ui/audits"})
        assert form.status_code == 200 and 'name="next" value="/ui/audits"' in form.text
        wrong = http.post("/ui/login", data={"key": "wrong", "next": "/ui/audits"})
        assert wrong.status_code == 401 and 'id="login-form"' in wrong.text and "Unknown key" in wrong.text
        assert "set-cookie" not in wrong.headers
        assert http.post("/ui/login", data={}).status_code == 401
        many = "&".join(f"f{i}=x" for i in range(50))  # more fields than a login form has
        form_type = {"content-type": "application/x-www-form-urlencoded"}
        assert http.post("/ui/login", content=many, headers=form_type).status_code == 401

        right = http.post("/ui/login", data={"key": API, "next": "/ui/audits"})
        assert right.status_code == 303 and right.headers["location"] == "/ui/audits"
        cookie = right.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert API not in cookie  # a session id (tests/service/test_ui_login.py)
        # httpx keeps the cookie for /ui paths: the pages and fragments open.
        assert http.get("/ui").status_code == 200
        assert http.get("/ui/fragments/overview").status_code == 200
        assert "client key" in http.get("/ui/verifiers").text
        # The cookie is the dashboard's only: the API still wants the header.
        assert http.get("/v1/stats/verifiers").status_code == 401
        out = http.post("/ui/logout")
        assert out.status_code == 303 and 'referee_ui_session=""' in out.headers["set-cookie"]
        http.cookies.clear()
        assert http.get("/ui").status_code == 303

        # After login, only a dashboard path: never another site.
        for target in ("https://example.org/", "//example.org/ui", "/v1/verifiers", "/ui\\..\\x"):
            r = http.post("/ui/login", data={"key": ADMIN, "next": target})
            assert r.status_code == 303 and r.headers["location"] == "/ui", target
        http.cookies.clear()

        # An admin key reads the dashboard too; the Bearer header works without a cookie.
        assert http.get("/ui", headers=bearer(ADMIN)).status_code == 200
        # Prompt statistics are the caller's own, verifier statistics the service's.
        mine, theirs = (embedded(http.get("/ui", headers=bearer(k)).text) for k in (API, OTHER))
    assert sum(mine["histogram"]["counts"]) == 4 and sum(theirs["histogram"]["counts"]) == 0
    assert theirs["zero_variance_share"] is None
    assert theirs["verifiers"] == mine["verifiers"]


def test_with_statistics_off_the_overview_says_so(tmp_path: Path) -> None:
    settings = make_settings(workers=1, stats=False, db_path=tmp_path / "referee.db")
    with BackgroundServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        score(server.url, None)
        page = http.get("/ui")
        fragment = http.get("/ui/fragments/overview")
        verifiers = http.get("/ui/verifiers")
    assert (
        page.status_code == 200 and 'id="stats-disabled"' in page.text and "REFEREE_STATS=false" in page.text
    )
    assert "<canvas" not in page.text and embedded(page.text) == {"enabled": False}
    assert fragment.status_code == 200 and 'id="stats-disabled"' in fragment.text
    assert verifiers.status_code == 200


# ---- a real browser ----------------------------------------------------------------------------


def _chart(page: Any, canvas_id: str) -> dict[str, Any]:
    """What Chart.js holds for a canvas, and whether it painted any pixel."""
    result: dict[str, Any] = page.evaluate(
        """(id) => {
            const canvas = document.getElementById(id);
            const chart = Chart.getChart(canvas);
            if (!chart) return null;
            const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
            let painted = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) painted++;
            return {
                type: chart.config.type,
                labels: chart.data.labels,
                datasets: chart.data.datasets.map((d) => ({label: d.label, data: d.data})),
                painted: painted,
                width: canvas.width,
                // Per dataset: the points Chart.js laid out inside the plot (null values skipped).
                placed: chart.data.datasets.map((d, i) => chart.getDatasetMeta(i).data.filter(
                    (e) => !e.skip && Number.isFinite(e.x) && Number.isFinite(e.y)
                        && e.x >= chart.chartArea.left - 1 && e.x <= chart.chartArea.right + 1).length),
            };
        }""",
        canvas_id,
    )
    assert result is not None, f"Chart.js has no chart on #{canvas_id}"
    return result


@pytest.mark.slow
def test_the_dashboard_in_a_real_browser(keyed: BackgroundServer, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            "Debian's chromium is missing (/usr/bin/chromium): run scripts/ensure-chromium.sh "
            "(the test command and CI do)"
        )
    pytest.importorskip("playwright", reason="needs the `dev` extra: pip install -e '.[dev]'")
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    fragments: list[int] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox"] if os.geteuid() == 0 else [],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            page.on(
                "console",
                lambda m: (
                    problems.append(f"console {m.type}: {m.text} ({m.location.get('url')})")
                    if m.type == "error"
                    else None
                ),
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            # A poll cut short by leaving the page (net::ERR_ABORTED) is no failure.
            page.on(
                "requestfailed",
                lambda r: (
                    problems.append(f"request failed: {r.url} {r.failure}")
                    if "ERR_ABORTED" not in (r.failure or "")
                    else None
                ),
            )
            page.on(
                "response",
                lambda r: fragments.append(r.status) if "/ui/fragments/overview" in r.url else None,
            )

            # Keys are configured: the dashboard sends the browser to the login form.
            page.goto(f"{keyed.url}/ui")
            assert page.url.startswith(f"{keyed.url}/ui/login")
            page.fill("#key", "not-a-key")
            page.click("#login-form button[type=submit]")
            assert page.locator("#login-error").inner_text() == "Unknown key."
            # The form comes back with 401, which the browser notes in its console: the one
            # message this test expects, and only here.
            assert len(problems) == 1 and "status of 401" in problems[0] and "/ui/login" in problems[0]
            problems.clear()
            page.fill("#key", API)
            page.click("#login-form button[type=submit]")
            page.wait_for_url(f"{keyed.url}/ui")
            page.wait_for_function(
                "() => window.Chart && Chart.getChart(document.getElementById('chart-difficulty'))"
            )

            with httpx.Client(base_url=keyed.url, timeout=60, headers=bearer(API)) as http:
                stats = {v["verifier"]: v for v in http.get("/v1/stats/verifiers").json()["verifiers"]}
                prompts = http.get("/v1/stats/prompts").json()
            verdicts = _chart(page, "chart-verdicts")
            assert len(verdicts["labels"]) == 60 and re.fullmatch(r"\d\d:\d\d.*", verdicts["labels"][-1])
            drawn = {d["label"]: d["data"] for d in verdicts["datasets"]}
            # Every verifier of the training traffic: the groups. The registration's examples
            # (dash.answer) and the audit's rows are counted apart (test_dashboard_watch.py).
            assert set(drawn) == set(stats) == {"exact", "numeric", "test.raising"}
            assert {name: sum(data) for name, data in drawn.items()} == {
                name: stat["verdicts"] for name, stat in stats.items()
            }
            errors = {d["label"]: d["data"] for d in _chart(page, "chart-errors")["datasets"]}
            assert 100 in errors["test.raising"] and 0 in errors["exact"]
            latency = _chart(page, "chart-latency")
            assert {d["label"] for d in latency["datasets"]} == {
                f"{n} {q}" for n in drawn for q in ("p50", "p99")
            }
            difficulty = _chart(page, "chart-difficulty")
            assert difficulty["type"] == "bar" and len(difficulty["labels"]) == 10
            assert difficulty["datasets"][0]["data"] == prompts["pass_rate_histogram"]["counts"]
            for canvas in (
                "chart-verdicts",
                "chart-errors",
                "chart-pass",
                "chart-reward",
                "chart-zero-variance",
                "chart-latency",
                "chart-http",
                "chart-difficulty",
            ):
                chart = _chart(page, canvas)
                assert chart["width"] > 100 and chart["painted"] > 500, (canvas, chart["painted"])
                values = [sum(v is not None for v in d["data"]) for d in chart["datasets"]]
                assert chart["placed"] == values and any(values), (canvas, chart["placed"], values)

            # htmx refreshes the data: new groups scored now show up without a reload.
            score(keyed.url, API, [group("p5", 2, 0)])
            total = sum(s["verdicts"] for s in stats.values()) + 2 + 2
            page.wait_for_function(
                f"""() => Chart.getChart(document.getElementById('chart-verdicts')).data.datasets
                    .reduce((n, d) => n + d.data.reduce((a, b) => a + b, 0), 0) === {total}""",
                timeout=within(30) * 1000,
            )
            assert page.locator("#count-verdicts").inner_text() == str(total)
            assert fragments and set(fragments) == {200}
            page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
            if target := os.environ.get("REFEREE_UI_SCREENSHOT"):
                page.screenshot(path=target, full_page=True)

            page.click("nav >> text=Verifiers")
            page.wait_for_url(f"{keyed.url}/ui/verifiers")
            row = page.locator("#registered-table tr", has_text="dash.answer")
            assert "@2" in row.inner_text() and "@1" in row.inner_text()
            assert page.locator("#installed-table td code", has_text=re.compile(r"^exact$")).count() == 1

            page.click("nav >> text=Audits")
            page.wait_for_url(f"{keyed.url}/ui/audits")
            assert page.locator("#audits-table tr.status-done").count() == 1
            page.click("#audits-table a >> text=HTML")
            page.wait_for_load_state()
            assert page.locator("h1").inner_text() == "Audit of exact"
            page.go_back()
            page.click("#audits-table a >> text=Markdown")
            assert "exact" in page.locator("body").inner_text()

            # A running audit's cancel button: the browser's own form passes the same-origin
            # check and the audit ends cancelled (tests/service/test_dashboard_audits.py).
            with httpx.Client(base_url=keyed.url, timeout=60, headers=bearer(API)) as http:
                sleepy = [{"response": "0.5", "reference": None, "expected": 1.0}] * 40
                started = http.post(
                    "/v1/audits", json={"verifier": "test.sleepy", "rows": sleepy, "probes": False}
                )
                assert started.status_code == 202, started.text
                running = started.json()["id"]
            page.goto(f"{keyed.url}/ui/audits")
            page.click(f'tr[data-audit="{running}"] form.cancel-audit button')
            page.wait_for_selector(f'tr[data-audit="{running}"].status-cancelled')
            assert page.url == f"{keyed.url}/ui/audits"

            # Logging out sends the next page view back to the form.
            page.goto(f"{keyed.url}/ui")
            page.click("header form button")
            page.wait_for_url(re.compile(r".*/ui/login.*"))
            page.goto(f"{keyed.url}/ui/audits")
            assert "/ui/login" in page.url
        finally:
            browser.close()
    assert not problems, problems
