"""Registration through HTTP: activation gate, versions, pinning, DELETE, built-ins, quotas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from referee.registered.declarative import worker_builtins
from referee.service.background import BackgroundServer
from referee.verifiers import builtin_index
from tests.registered.conftest import register, registered_settings, score

CORRECT = "math" if "math" in worker_builtins(builtin_index()) else "numeric"


def r1_math(name: str, fmt_weight: float = 0.1) -> dict[str, Any]:
    """A declarative `multi`: the math verifier on the answer plus the R1 format reward."""
    return {
        "name": name,
        "kind": "declarative",
        "description": "math answer, R1 format bonus",
        "spec": {
            "type": "multi",
            "components": {
                "correct": {"type": "verifier", "name": CORRECT, "reference": "{{reference.answer}}"},
                "fmt": {"type": "verifier", "name": "format.think_answer", "reference": None},
            },
            "weights": {"correct": 1.0 - fmt_weight, "fmt": fmt_weight},
        },
        "reference_schema": {
            "type": "object",
            "required": ["answer"],
            "properties": {"answer": {"type": "string"}},
        },
        "examples": [
            {
                "response": "<think>2+2</think><answer>\\boxed{4}</answer>",
                "reference": {"answer": "4"},
                "expected_score": 1.0,
            },
            {
                "response": "It is \\boxed{4}.",
                "reference": {"answer": "4"},
                "expected_score": 1.0 - fmt_weight,
            },
            {
                "response": "<think>?</think><answer>\\boxed{5}</answer>",
                "reference": {"answer": "4"},
                "expected_score": fmt_weight,
            },
        ],
    }


def test_register_and_score_like_a_builtin(http: httpx.Client) -> None:
    r = register(http, r1_math("r1.math"))
    assert r.status_code == 201, r.text
    body = r.json()
    assert (
        body["created"] is True and body["verifier"] == "r1.math@1" and len(body["version"]["digest"]) == 64
    )
    verdict = score(
        http, "r1.math", "<think>x</think><answer>\\boxed{\\frac{6}{3}}</answer>", {"answer": "2"}
    )
    assert verdict["status"] == "ok" and verdict["verifier"] == "r1.math@1"
    assert verdict["score"] == pytest.approx(1.0)
    assert set(verdict["details"]["components"]) == {"correct", "fmt"}
    groups = http.post(
        "/v1/groups",
        json={
            "groups": [
                {
                    "verifier": [
                        {"name": "r1.math", "weight": 1.0},
                        {"name": "format.tag_count", "weight": 0.5},
                    ],
                    "reference": {"answer": "3"},
                    "responses": ["<think>a</think><answer>\\boxed{3}</answer>", "\\boxed{3}", "3?"],
                }
            ]
        },
    ).json()["groups"][0]
    assert groups["rewards"] == pytest.approx([1.5, 0.9, 0.0])
    # The reference schema is enforced before any work: a 422 naming the field.
    r = http.post("/v1/score", json={"verifier": "r1.math", "response": "x", "reference": {"answr": "3"}})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["reference"]
    listed = {v["name"]: v for v in http.get("/v1/verifiers").json()["verifiers"]}
    assert listed["r1.math"]["kind"] == "declarative" and listed["r1.math"]["version"] == "1"
    assert listed["r1.math"]["reference_schema"]["required"] == ["answer"]
    assert listed["r1.math"]["example"]["expected_score"] == 1.0


def test_activation_gate_lists_failing_examples(http: httpx.Client) -> None:
    body = r1_math("gate.demo")
    body["examples"][1]["expected_score"] = 0.5
    r = register(http, body)
    assert r.status_code == 422
    failing = r.json()["detail"]["failing"]
    assert [f["index"] for f in failing] == [1] and failing[0]["score"] == pytest.approx(0.9)
    assert http.get("/v1/verifiers/gate.demo").status_code == 404  # nothing was stored
    bad_ref = r1_math("gate.demo")
    bad_ref["examples"][0]["reference"] = {"answer": 4}  # violates reference_schema
    r = register(http, bad_ref)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:3] == ["body", "examples", 0]


def test_invalid_spec_is_422_naming_the_field(http: httpx.Client) -> None:
    body = r1_math("bad.spec")
    body["spec"]["weights"] = None
    body["spec"]["formula"] = "correct ** 2"
    r = register(http, body)
    assert r.status_code == 422 and r.json()["error"] == "invalid_spec"
    assert r.json()["detail"][0]["loc"][:2] == ["body", "spec"]


def test_a_judge_fallback_inside_a_declarative_type_is_422_naming_it(http: httpx.Client) -> None:
    body = r1_math("fallback.inside")
    body["spec"]["components"]["correct"]["options"] = {"fallback": "judge"}
    r = register(http, body)
    assert r.status_code == 422 and r.json()["error"] == "invalid_spec", r.text
    (error,) = r.json()["detail"]
    assert error["loc"][:3] == ["body", "spec", "multi"] and error["loc"][-1] == "options"
    assert "options.fallback" in error["msg"] and "not available inside a declarative type" in error["msg"]


def test_versions_pinning_and_delete_keep_history(http: httpx.Client) -> None:
    assert register(http, r1_math("ver.demo", 0.1)).json()["verifier"] == "ver.demo@1"
    again = register(http, r1_math("ver.demo", 0.1))
    assert again.status_code == 200 and again.json()["created"] is False  # content-addressed
    assert register(http, r1_math("ver.demo", 0.2)).json()["verifier"] == "ver.demo@2"
    plain = "\\boxed{4}"
    assert score(http, "ver.demo", plain, {"answer": "4"})["score"] == pytest.approx(0.8)
    pinned = score(http, "ver.demo@1", plain, {"answer": "4"})
    assert pinned["score"] == pytest.approx(0.9) and pinned["verifier"] == "ver.demo@1"
    assert http.get("/v1/verifiers/ver.demo@1").json()["version"] == "1"
    versions = http.get("/v1/verifiers/ver.demo/versions").json()["versions"]
    assert [(v["version"], v["active"]) for v in versions] == [(1, True), (2, True)]
    assert versions[0]["digest"] != versions[1]["digest"]

    assert http.delete("/v1/verifiers/ver.demo@2").json()["disabled"] == [2]
    assert http.delete("/v1/verifiers/ver.demo@2").json()["disabled"] == []  # idempotent
    assert http.delete("/v1/verifiers/ver.demo@9").status_code == 404  # never existed
    assert score(http, "ver.demo", plain, {"answer": "4"})["verifier"] == "ver.demo@1"
    assert http.delete("/v1/verifiers/ver.demo").json()["disabled"] == [1]
    for name in ("ver.demo", "ver.demo@1", "ver.demo@2"):
        r = http.post("/v1/score", json={"verifier": name, "response": plain, "reference": {"answer": "4"}})
        assert r.status_code == 404, name
    history = http.get("/v1/verifiers/ver.demo/versions").json()["versions"]
    assert [(v["version"], v["active"]) for v in history] == [(1, False), (2, False)]
    assert all(v["disabled_at"] for v in history)
    assert register(http, r1_math("ver.demo", 0.1)).json()["verifier"] == "ver.demo@3"


def test_builtin_names_cannot_be_overwritten_or_deleted(http: httpx.Client) -> None:
    for name in ("exact", "format.think_answer", CORRECT):
        r = register(http, r1_math(name))
        assert r.status_code == 409 and r.json()["error"] == "builtin_verifier"
        assert http.delete(f"/v1/verifiers/{name}").status_code == 409
    assert register(http, r1_math("bad@name")).status_code == 422
    assert http.delete("/v1/verifiers/never.registered").status_code == 404
    assert http.get("/v1/verifiers/never.registered/versions").status_code == 404


def test_quotas(tmp_path: Path) -> None:
    settings = registered_settings(
        tmp_path / "q.db", max_registered_types=1, max_registered_examples=2, max_registered_source_bytes=600
    )
    with BackgroundServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        small = r1_math("q.one")
        small["examples"] = small["examples"][:2]
        assert register(http, small).status_code == 201
        too_many = register(http, r1_math("q.one"))
        assert too_many.status_code == 422 and too_many.json()["error"] == "quota_exceeded"
        second = register(http, {**small, "name": "q.two"})
        assert second.status_code == 422 and "limit 1" in second.json()["message"]
        big = {**small, "name": "q.one", "spec": {**small["spec"], "formula": None}}
        big["spec"]["components"] = {f"c{i}": small["spec"]["components"]["fmt"] for i in range(12)}
        r = register(http, big)
        assert r.status_code == 422 and "bytes" in r.json()["message"]
