"""`/v1/stats/prompts` and `/v1/stats/verifiers` on a real service: groups with a prompt_id are
visits of that prompt, per key; OpenRLHF batches count per prompt; filters; statistics
survive a restart; switched off they answer 404 with a body that says so."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.grouping import prompt_fingerprint
from referee.service.background import BackgroundServer
from tests.conftest import make_settings

KEY_A, KEY_B, KEY_C = "stats-key-a", "stats-key-b", "stats-key-c"


def groups(*specs: tuple[str, int, int]) -> dict[str, Any]:
    return {
        "groups": [
            {
                "verifier": "exact",
                "reference": "42",
                "responses": ["42"] * right + ["41"] * wrong,
                "prompt_id": pid,
            }
            for pid, right, wrong in specs
        ]
    }


def client(server: BackgroundServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {key}"})


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    settings = make_settings(
        workers=1, api_keys=[KEY_A, KEY_B, KEY_C], db_path=tmp_path_factory.mktemp("s") / "r.db"
    )
    with BackgroundServer(settings) as server:
        yield server


def test_prompt_visits_per_key_and_filters(keyed: BackgroundServer) -> None:
    with client(keyed, KEY_A) as a, client(keyed, KEY_B) as b:
        for _ in range(3):
            assert (
                a.post("/v1/groups", json=groups(("easy", 4, 0), ("hard", 0, 4), ("mid", 2, 2))).status_code
                == 200
            )
        assert b.post("/v1/groups", json=groups(("easy", 0, 2))).status_code == 200
        page = a.get("/v1/stats/prompts").json()
        solved = a.get("/v1/stats/prompts", params={"filter": "always_solved", "last": 3}).json()
        unsolved = a.get("/v1/stats/prompts", params={"filter": "never_solved", "last": 3}).json()
        flat = a.get("/v1/stats/prompts", params={"filter": "zero_variance", "last": 4}).json()
        other = b.get("/v1/stats/prompts").json()
    by_id = {p["prompt_id"]: p for p in page["prompts"]}
    assert set(by_id) == {"easy", "hard", "mid"} and page["tracked"] == 3
    assert (by_id["easy"]["visits"], by_id["easy"]["attempts"], by_id["easy"]["passes"]) == (3, 12, 12)
    assert by_id["mid"]["pass_rate"] == 0.5 and by_id["mid"]["zero_variance_visits"] == 0
    assert page["zero_variance_share"] == pytest.approx(6 / 9)
    assert [p["prompt_id"] for p in solved["prompts"]] == ["easy"] and solved["matched"] == 1
    assert [p["prompt_id"] for p in unsolved["prompts"]] == ["hard"]
    assert flat["prompts"] == [] and flat["matched"] == 0
    # Key B's prompt "easy" is its own record.
    assert [(p["prompt_id"], p["visits"], p["passes"]) for p in other["prompts"]] == [("easy", 1, 0)]


def test_verifier_statistics_count_every_verdict(keyed: BackgroundServer) -> None:
    with client(keyed, KEY_A) as a:
        before = {v["verifier"]: v for v in a.get("/v1/stats/verifiers").json()["verifiers"]}
        r = a.post(
            "/v1/groups",
            json={
                "groups": [{"verifier": "test.raising", "reference": None, "responses": ["boom", "boom"]}],
                "on_invalid": "error_verdict",
            },
        )
        assert r.status_code == 200
        assert a.post("/v1/groups", json=groups(("v", 3, 1))).status_code == 200
        after = {
            v["verifier"]: v for v in a.get("/v1/stats/verifiers", params={"minutes": 5}).json()["verifiers"]
        }
    seen = before.get("exact", {}).get("verdicts", 0)
    assert after["exact"]["verdicts"] == seen + 4
    assert after["test.raising"]["errors"] >= 2 and after["test.raising"]["error_rate"] == 1.0
    assert after["exact"]["p50_ms"] is not None and after["exact"]["series"][-1]["verdicts"] >= 4


def test_zero_variance_share_is_the_groups_responses_share(keyed: BackgroundServer) -> None:
    """Issue 28: one definition. A group whose every sample is an error verdict is
    zero-variance in the /v1/groups response, so it is in the statistics too."""
    body = groups(("zv-mixed", 2, 2), ("zv-solved", 3, 0))["groups"] + [
        {
            "verifier": "test.raising",
            "reference": None,
            "responses": ["boom", "boom"],
            "prompt_id": "zv-raising",
        },
        {"verifier": "no.such.type", "reference": "42", "responses": ["42", "41"], "prompt_id": "zv-invalid"},
    ]
    with client(keyed, KEY_C) as c:
        answered = c.post("/v1/groups", json={"groups": body, "on_invalid": "error_verdict"})
        assert answered.status_code == 200, answered.text
        page = c.get("/v1/stats/prompts").json()
        raising = c.get("/v1/stats/prompts/zv-raising").json()
        mixed = c.get("/v1/stats/prompts/zv-mixed").json()
        verifiers = {v["verifier"]: v for v in c.get("/v1/stats/verifiers").json()["verifiers"]}
        other = client(keyed, KEY_A).get("/v1/stats/prompts/zv-mixed")
    flags = [g["zero_variance"] for g in answered.json()["groups"]]
    assert flags == [False, True, True, True]
    assert page["zero_variance_share"] == pytest.approx(sum(flags) / len(flags)) == 0.75
    # The per-prompt view: the record, its recent visits and its verdicts' reasons.
    assert raising["zero_variance_visits"] == 1 and raising["errors"] == 2
    assert raising["recent_visits"][0]["pass_rate"] is None
    assert raising["recent_reasons"] and all(r["reward"] is None for r in raising["recent_reasons"])
    assert "checker bug" in raising["recent_reasons"][0]["reason"]
    assert [v["pass_rate"] for v in mixed["recent_visits"]] == [0.5]
    assert other.status_code == 404 and other.json()["error"] == "unknown_prompt"
    # Groups per verifier, with the same flag.
    assert verifiers["test.raising"]["zero_variance_groups"] >= 1
    assert verifiers["no.such.type"]["groups"] == verifiers["no.such.type"]["zero_variance_groups"] == 1
    assert verifiers["no.such.type"]["verdicts"] == 0


def test_steps_versions_and_the_health_panel(keyed: BackgroundServer) -> None:
    with client(keyed, KEY_A) as a:
        assert a.post("/v1/groups", json=groups(("h", 1, 1))).status_code == 200
        assert a.get("/v1/stats/prompts", params={"last": 0}).status_code == 422
        day = a.get("/v1/stats/verifiers", params={"minutes": 1440, "step": 15}).json()
        minute = a.get("/v1/stats/verifiers", params={"minutes": 1440}).json()
        audits = a.get("/v1/stats/verifiers", params={"traffic": "audit"}).json()
        health = a.get("/v1/stats/health", params={"minutes": 15, "step": 5})
        spec = a.get("/openapi.json").json()
    assert (day["minutes"], day["step_minutes"], day["traffic"]) == (1440, 15, "training")
    exact_day = next(v for v in day["verifiers"] if v["verifier"] == "exact")
    exact_minute = next(v for v in minute["verifiers"] if v["verifier"] == "exact")
    assert exact_day["verdicts"] == exact_minute["verdicts"]
    assert all(s["minute"] % 900 == 0 for s in exact_day["series"])
    assert sum(s["verdicts"] for s in exact_day["series"]) == exact_day["verdicts"]
    assert [v["version"] for v in exact_day["versions"]] == ["exact@1"]
    assert exact_day["p99_ms"] <= exact_day["max_ms"]
    assert audits["verifiers"] == [] and audits["traffic"] == "audit"
    assert health.status_code == 200, health.text
    page = health.json()
    assert page["workers"]["ok"] and page["workers"]["size"] == 1
    assert set(page["lanes"]) >= {"cpu"} and "refused" in page["lanes"]["cpu"]
    assert page["http"]["requests"] >= 3 and page["http"]["client_errors"] >= 1
    assert all(s["minute"] % 300 == 0 for s in page["http"]["series"])
    assert "warm" in page["sandbox"] and "discarded" in page["sandbox"]
    schemas = spec["components"]["schemas"]
    assert {"groups", "zero_variance_share", "versions"} <= set(schemas["VerifierStat"]["properties"])
    assert "/v1/stats/health" in spec["paths"] and "/v1/stats/prompts/{prompt_id}" in spec["paths"]


def test_bad_queries_are_422_with_the_field(keyed: BackgroundServer) -> None:
    with client(keyed, KEY_A) as a:
        r = a.get("/v1/stats/prompts", params={"filter": "sometimes"})
        assert r.status_code == 422 and "filter" in json.dumps(r.json()["detail"])
        r = a.get("/v1/stats/prompts", params={"last": 0})
        assert r.status_code == 422 and "last" in json.dumps(r.json()["detail"])
        assert a.post("/v1/groups", json=groups(("x" * 201, 1, 0))).status_code == 422
    assert httpx.get(f"{keyed.url}/v1/stats/prompts").status_code == 401


def test_openrlhf_batches_are_visits_of_their_prompts(server: BackgroundServer) -> None:
    # The session's server is shared: prompts of this test only.
    tag = uuid.uuid4().hex
    prompts = [f"[{tag}] What is 6*7? "] * 4 + [f"[{tag}] Capital of France? "] * 2
    answers = ["42", "42", "41", "42", "Paris", "Paris"]
    labels = ["42"] * 4 + ["Paris"] * 2
    r = httpx.post(
        f"{server.url}/v1/openrlhf/reward",
        json={
            "query": [p + a for p, a in zip(prompts, answers, strict=True)],
            "prompts": prompts,
            "labels": labels,
        },
    )
    assert r.status_code == 200, r.text
    page = httpx.get(f"{server.url}/v1/stats/prompts", params={"limit": 10_000}).json()
    by_id = {p["prompt_id"]: p for p in page["prompts"]}
    six, paris = by_id[prompt_fingerprint(prompts[0])], by_id[prompt_fingerprint(prompts[-1])]
    assert (six["visits"], six["attempts"], six["passes"]) == (1, 4, 3)
    assert (paris["visits"], paris["passes"], paris["zero_variance_visits"]) == (1, 2, 1)


def test_statistics_survive_a_restart(tmp_path: Path) -> None:
    settings = make_settings(workers=1, db_path=tmp_path / "referee.db", stats_flush_s=0.2)
    with BackgroundServer(settings) as server:
        assert httpx.post(f"{server.url}/v1/groups", json=groups(("kept", 2, 1))).status_code == 200
        verdicts = {
            v["verifier"]: v["verdicts"]
            for v in httpx.get(f"{server.url}/v1/stats/verifiers").json()["verifiers"]
        }
    assert (tmp_path / "referee-stats.db").exists()
    with BackgroundServer(settings) as server:
        (kept,) = httpx.get(f"{server.url}/v1/stats/prompts").json()["prompts"]
        again = {
            v["verifier"]: v["verdicts"]
            for v in httpx.get(f"{server.url}/v1/stats/verifiers").json()["verifiers"]
        }
    assert (kept["prompt_id"], kept["visits"], kept["passes"]) == ("kept", 1, 2)
    assert again == verdicts


def _verdicts(server: BackgroundServer) -> dict[str, int]:
    return {
        v["verifier"]: v["verdicts"]
        for v in httpx.get(f"{server.url}/v1/stats/verifiers").json()["verifiers"]
    }


def test_two_services_in_one_directory_keep_their_statistics_apart(tmp_path: Path) -> None:
    """Registries side by side (a.db, b.db) get statistics side by side (a-stats.db,
    b-stats.db); two services on one registry file do not flush into one statistics file (each
    would overwrite the other's records): the second takes a file of its own, by its port. Each
    reads back exactly its own figures after a restart."""
    a = make_settings(workers=1, db_path=tmp_path / "a.db", stats_flush_s=0.2)
    b = make_settings(workers=1, db_path=tmp_path / "b.db", stats_flush_s=0.2)
    with BackgroundServer(a) as first, BackgroundServer(b) as second:
        assert httpx.post(f"{first.url}/v1/groups", json=groups(("only-a", 2, 1))).status_code == 200
        assert httpx.post(f"{second.url}/v1/groups", json=groups(("only-b", 3, 0))).status_code == 200
    assert (tmp_path / "a-stats.db").exists() and (tmp_path / "b-stats.db").exists()
    with BackgroundServer(a) as first, BackgroundServer(b) as second:
        for server, prompt in ((first, "only-a"), (second, "only-b")):
            (kept,) = httpx.get(f"{server.url}/v1/stats/prompts").json()["prompts"]
            assert kept["prompt_id"] == prompt

    shared = make_settings(workers=1, db_path=tmp_path / "shared.db", stats_flush_s=0.2)
    with BackgroundServer(shared) as first, BackgroundServer(shared) as second:
        assert httpx.post(f"{first.url}/v1/groups", json=groups(("first", 2, 2))).status_code == 200
        assert httpx.post(f"{second.url}/v1/groups", json=groups(("second", 2, 0))).status_code == 200
        first_port, second_port = first.settings.service.port, second.settings.service.port
    assert (tmp_path / "shared-stats.db").exists()
    assert (tmp_path / f"shared-stats-{second_port}.db").exists()
    assert not (tmp_path / f"shared-stats-{first_port}.db").exists()
    # The first file holds the first service's records only, whoever flushed last.
    with BackgroundServer(shared) as again:
        (kept,) = httpx.get(f"{again.url}/v1/stats/prompts").json()["prompts"]
        assert (kept["prompt_id"], kept["attempts"], kept["passes"]) == ("first", 4, 2)
        assert _verdicts(again) == {"exact": 4}


def test_statistics_switched_off(tmp_path: Path) -> None:
    settings = make_settings(workers=1, db_path=tmp_path / "referee.db", stats=False)
    with BackgroundServer(settings) as server:
        assert httpx.post(f"{server.url}/v1/groups", json=groups(("p", 1, 0))).status_code == 200
        r = httpx.get(f"{server.url}/v1/stats/prompts")
    assert r.status_code == 404 and r.json()["error"] == "statistics_disabled"
    assert "REFEREE_STATS" in r.json()["message"]
    assert not (tmp_path / "referee-stats.db").exists()
