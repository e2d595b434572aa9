"""The dashboard as a tool to watch a run with (issue 28): the range picker, mean reward and
zero-variance share per verifier, audits' and registrations' verdicts apart from training,
a row per version, the health panel, the solved / unsolved prompt lists and one prompt's page,
who the prompts belong to; then the same in a real browser (Debian's chromium driven by
Playwright): every chart has data after traffic, the picker changes the range, a prompt's page
opens from the lists, and a 420 px wide screen scrolls no page sideways."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.service.test_dashboard import (
    ADMIN,
    API,
    AUDIT,
    CHROMIUM,
    NUMERIC,
    WHOLE_ANSWER,
    bearer,
    embedded,
    finished_audit,
    registration,
)

TRAINING = [
    # "solved" twice all right, "unsolved" twice all wrong, "mixed" once, "broken": errors only.
    {"verifier": "exact", "reference": "42", "responses": ["42"] * 4, "prompt_id": "solved"},
    {"verifier": "exact", "reference": "42", "responses": ["42"] * 4, "prompt_id": "solved"},
    {"verifier": "exact", "reference": "42", "responses": ["41"] * 4, "prompt_id": "unsolved"},
    {"verifier": "exact", "reference": "42", "responses": ["41"] * 4, "prompt_id": "unsolved"},
    {"verifier": "exact", "reference": "42", "responses": ["42", "41", "7", "42"], "prompt_id": "mixed/1"},
    {"verifier": "test.raising", "reference": None, "responses": ["boom"] * 2, "prompt_id": "broken"},
    # The registered type, each version pinned.
    {"verifier": "dash.answer@1", "reference": "42", "responses": ["42", "41"]},
    {"verifier": "dash.answer@2", "reference": "42", "responses": ["42.0", "42", "41"]},
]


@pytest.fixture(scope="module")
def watched() -> Iterator[tuple[BackgroundServer, list[bool]]]:
    """Training groups (the API key), a type registered in two versions (the admin key), an
    audit (the API key), a 401 and a 422: yields the service and the groups' zero_variance."""
    settings = make_settings(workers=1, api_keys=[API], admin_keys=[ADMIN])
    with BackgroundServer(settings) as server:
        with httpx.Client(base_url=server.url, timeout=60, headers=bearer(ADMIN)) as admin:
            for spec in (WHOLE_ANSWER, NUMERIC):
                assert admin.post("/v1/verifiers", json=registration(spec)).status_code == 201
        with httpx.Client(base_url=server.url, timeout=60, headers=bearer(API)) as http:
            answer = http.post("/v1/groups", json={"groups": TRAINING, "on_invalid": "error_verdict"})
            assert answer.status_code == 200, answer.text
            finished_audit(http, AUDIT)
            assert http.get("/v1/stats/prompts", params={"limit": -1}).status_code == 422
        assert httpx.get(f"{server.url}/v1/stats/verifiers").status_code == 401
        yield server, [g["zero_variance"] for g in answer.json()["groups"]]


def api(server: BackgroundServer, path: str, **params: Any) -> Any:
    r = httpx.get(f"{server.url}{path}", params=params, headers=bearer(API), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def page(server: BackgroundServer, path: str, key: str = API) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", headers=bearer(key), timeout=60)


# ---- HTTP ------------------------------------------------------------------------------------


def test_the_range_picker_coarsens_long_ranges(watched: tuple[BackgroundServer, list[bool]]) -> None:
    server, _ = watched
    ranges = {15: (15, 60), 60: (60, 60), 360: (72, 300), 1440: (96, 900)}
    training = api(server, "/v1/stats/verifiers", minutes=1440)["verifiers"]
    for minutes, (points, spacing) in ranges.items():
        html = page(server, f"/ui?minutes={minutes}").text
        data = embedded(html)
        assert len(data["minutes"]) == points and data["step_minutes"] * 60 == spacing, minutes
        assert {b - a for a, b in zip(data["minutes"], data["minutes"][1:], strict=False)} == {spacing}
        assert all(m % spacing == 0 for m in data["minutes"])
        drawn = {v["name"]: sum(v["verdicts"]) for v in data["verifiers"]}
        assert drawn == {v["verifier"]: v["verdicts"] for v in training}, minutes
        assert f'href="/ui?minutes={minutes}" data-minutes="{minutes}" aria-current="true"' in html
        fragment = embedded(page(server, f"/ui/fragments/overview?minutes={minutes}").text)
        assert len(fragment["minutes"]) == points
        assert f'hx-get="/ui/fragments/overview?minutes={minutes}"' in html
    # Anything else is the default hour.
    assert len(embedded(page(server, "/ui?minutes=7").text)["minutes"]) == 60


def test_reward_zero_variance_and_checks_apart(watched: tuple[BackgroundServer, list[bool]]) -> None:
    server, flags = watched
    data = embedded(page(server, "/ui").text)
    html = page(server, "/ui").text
    series = {v["name"]: v for v in data["verifiers"]}
    training = {v["verifier"]: v for v in api(server, "/v1/stats/verifiers")["verifiers"]}
    audit = api(server, "/v1/stats/verifiers", traffic="audit")["verifiers"]
    registered = api(server, "/v1/stats/verifiers", traffic="registration")["verifiers"]
    # Audits and registrations are not training: the audit's exact rows, the examples of both
    # registrations are counted apart, and listed in their own table.
    assert training["exact"]["verdicts"] == 4 * 5 and [v["verdicts"] for v in audit] == [3]
    assert [v["verifier"] for v in registered] == ["dash.answer"] and registered[0]["verdicts"] == 4
    checks = html.split('id="checks-table"')[1].split("</table>")[0]
    assert checks.count('data-traffic="audit"') == 1 and checks.count('data-traffic="registration"') == 1
    # Mean reward per step: the exact groups' (the traffic may straddle a minute: the steps'
    # means, weighted by their scored verdicts, give the window's).
    rewards = series["exact"]["mean_score"]
    scored = [
        n * (1 - (e or 0))
        for n, e in zip(series["exact"]["verdicts"], series["exact"]["error_share"], strict=True)
    ]
    weighted = sum(m * n for m, n in zip(rewards, scored, strict=True) if m is not None) / sum(scored)
    assert weighted == pytest.approx(training["exact"]["mean_score"]) == pytest.approx(10 / 20)
    # Zero-variance share: the /v1/groups answers' own flags, over the window and per step.
    groups = sum(v["groups"] for v in training.values())
    flat = sum(v["zero_variance_groups"] for v in training.values())
    assert (groups, flat) == (len(flags), sum(flags)) == (8, 5)
    assert any(m is not None and 0 < m < 1 for m in data["zero_variance_all"])
    assert [m for m in series["test.raising"]["zero_variance_share"] if m is not None] == [1.0]
    # Versions of the registered type, a row each; p99 never above max.
    table = html.split('id="verifier-table"')[1].split("</table>")[0]
    assert 'data-version="dash.answer@2"' in table and 'data-version="dash.answer@1"' in table
    versions = {v["version"]: v for v in training["dash.answer"]["versions"]}
    assert (versions["dash.answer@1"]["verdicts"], versions["dash.answer@2"]["verdicts"]) == (2, 3)
    assert versions["dash.answer@2"]["pass_rate"] == pytest.approx(2 / 3)  # numeric: 42.0 = 42
    for stat in training.values():
        assert stat["p99_ms"] is None or stat["p99_ms"] <= stat["max_ms"]
        for step in stat["series"]:
            assert step["p99_ms"] is None or step["p99_ms"] <= step["max_ms"]


def test_the_health_panel(watched: tuple[BackgroundServer, list[bool]]) -> None:
    server, _ = watched
    html = page(server, "/ui").text
    health = api(server, "/v1/stats/health")
    panel = html.split('id="health-panel"')[1].split("</section>")[0]
    assert "worker processes" in panel and "sandbox pool" in panel and "503s" in panel
    assert health["http"]["client_errors"] >= 2 and health["sandbox"]["enabled"] is False
    lanes = panel.split('id="lanes-table"')[1]
    assert all(f"<code>{lane}</code>" in lanes for lane in health["lanes"])
    http = embedded(html)["http"]
    assert sum(http["client_errors"]) >= 2 and len(http["requests"]) == 60


def test_prompt_lists_and_pages_are_the_keys_own(watched: tuple[BackgroundServer, list[bool]]) -> None:
    server, _ = watched
    html = page(server, "/ui").text
    solved = html.split('id="always-solved"')[1].split("</div>")[0]
    unsolved = html.split('id="never-solved"')[1].split("</div>")[0]
    assert 'href="/ui/prompts/solved"' in solved and "unsolved" not in solved
    assert 'href="/ui/prompts/unsolved"' in unsolved
    assert "mixed/1" in html.split('id="recent-prompts"')[1].split("</div>")[0]
    assert "Prompt statistics are per API key" in html and 'id="no-prompts"' not in html
    # An admin sees its own (empty) namespace, and the page says why.
    admin = page(server, "/ui", ADMIN).text
    assert 'id="count-prompts">0<' in admin and 'id="no-prompts"' in admin
    assert "An admin key sees its own prompts" in admin
    # One prompt's page: the record, the latest visits, the verdicts' reasons.
    one = page(server, "/ui/prompts/mixed/1")
    assert one.status_code == 200 and 'id="prompt-visits">1<' in one.text
    assert embedded_prompt(one.text)["visits"][0]["pass_rate"] == 0.5
    broken = page(server, "/ui/prompts/broken").text
    assert "checker bug" in broken.split('id="reasons-table"')[1]
    missing = page(server, "/ui/prompts/solved", ADMIN)
    assert missing.status_code == 404 and 'id="unknown-prompt"' in missing.text


def embedded_prompt(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="prompt-json">(.*?)</script>', html, re.S)
    assert match
    data: dict[str, Any] = json.loads(match.group(1))
    return data


# ---- a real browser ----------------------------------------------------------------------------

CHARTS = (
    "chart-verdicts",
    "chart-reward",
    "chart-pass",
    "chart-zero-variance",
    "chart-errors",
    "chart-latency",
    "chart-http",
    "chart-difficulty",
)


def _charts(page: Any, ids: tuple[str, ...]) -> dict[str, Any]:
    """Per canvas: its chart's type, scale type, labels and the values of each dataset."""
    result: dict[str, Any] = page.evaluate(
        """(ids) => Object.fromEntries(ids.map((id) => {
            const chart = Chart.getChart(document.getElementById(id));
            return [id, chart && {
                y: chart.options.scales.y.type,
                labels: chart.data.labels.length,
                values: chart.data.datasets.map((d) => d.data.filter(
                    (v) => v !== null && v !== undefined).length),
                nonzero: chart.data.datasets.some((d) => d.data.some((v) => v)),
            }];
        }))""",
        list(ids),
    )
    return result


def _overflow(page: Any) -> int:
    """How far the page is wider than the screen (0: no sideways scrolling)."""
    width: int = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    return width


@pytest.mark.slow
def test_watching_a_run_in_a_real_browser(watched: tuple[BackgroundServer, list[bool]]) -> None:
    server, _ = watched
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing (/usr/bin/chromium): run scripts/ensure-chromium.sh")
    pytest.importorskip("playwright", reason="needs the `dev` extra: pip install -e '.[dev]'")
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"] if os.geteuid() == 0 else []
        )
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1200})
            context.set_extra_http_headers(bearer(API))
            tab = context.new_page()
            tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.goto(f"{server.url}/ui")
            ready = "() => window.Chart && Chart.getChart(document.getElementById('chart-difficulty'))"
            tab.wait_for_function(ready)
            # Every chart has data after the traffic, from the service's numbers.
            charts = _charts(tab, CHARTS)
            for canvas, chart in charts.items():
                assert chart is not None, canvas
                assert any(chart["values"]) and chart["nonzero"], (canvas, chart)
            assert charts["chart-latency"]["y"] == "logarithmic"
            assert charts["chart-verdicts"]["labels"] == 60

            # The range picker: 6 h in 5-minute steps, 24 h in quarters of an hour.
            for name, minutes, points in (("6 h", 360, 72), ("24 h", 1440, 96), ("15 min", 15, 15)):
                tab.click(f"#range-picker >> text={name}")
                tab.wait_for_url(f"{server.url}/ui?minutes={minutes}")
                tab.wait_for_function(ready)
                chart = _charts(tab, ("chart-verdicts",))["chart-verdicts"]
                assert chart["labels"] == points and chart["nonzero"], name
                assert tab.locator("#range-picker a[aria-current=true]").inner_text() == name

            # A prompt's page, from the always-solved list.
            tab.click("#always-solved a >> text=solved")
            tab.wait_for_url(f"{server.url}/ui/prompts/solved")
            tab.wait_for_function(
                "() => window.Chart && Chart.getChart(document.getElementById('chart-prompt'))"
            )
            prompt = _charts(tab, ("chart-prompt",))["chart-prompt"]
            assert prompt["labels"] == 2 and prompt["values"] == [2]
            assert tab.locator("#prompt-visits").inner_text() == "2"

            # 420 px wide: nothing scrolls the page sideways, the charts are still drawn.
            tab.set_viewport_size({"width": 420, "height": 900})
            for path in ("/ui", "/ui?minutes=1440", "/ui/prompts/broken", "/ui/verifiers", "/ui/audits"):
                tab.goto(f"{server.url}{path}")
                tab.wait_for_load_state("networkidle")
                assert _overflow(tab) <= 0, (path, _overflow(tab))
            tab.goto(f"{server.url}/ui")
            tab.wait_for_function(ready)
            box = tab.locator("#chart-latency").bounding_box()
            assert box is not None and 300 <= box["width"] <= 420
        finally:
            browser.close()
    assert not problems, problems
