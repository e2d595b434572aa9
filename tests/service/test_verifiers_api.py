"""/v1/verifiers: discovery, schemas, and every published example reproduces its score."""

from __future__ import annotations

from typing import get_args

import httpx
import pytest

from referee.models.verifiers import RegisteredKind
from referee.service.background import BackgroundServer
from referee.verifiers.installed import load_installed

BUILTINS = [v.name for v in load_installed(plugins=False)]
# `code` needs the Docker sandbox, which this server runs without; its example is checked by
# tests/evals/test_code_dev_http.py against a server with the sandbox. The `judge_*` verifiers
# need a model endpoint, which it has none of either: their examples are checked by
# tests/verifiers/judge/test_verifiers.py, and their verdict here is an error (below).
JUDGES = [name for name in BUILTINS if name.startswith("judge_")]
WITHOUT_SANDBOX = [name for name in BUILTINS if name != "code" and name not in JUDGES]


@pytest.fixture()
def http(server: BackgroundServer) -> httpx.Client:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def test_list_has_schemas_and_examples(http: httpx.Client) -> None:
    body = http.get("/v1/verifiers").json()
    by_name = {v["name"]: v for v in body["verifiers"]}
    assert set(BUILTINS) <= set(by_name)
    for name in BUILTINS:
        info = by_name[name]
        assert info["version"] and info["description"]
        assert isinstance(info["reference_schema"], dict) and isinstance(info["options_schema"], dict)
        assert info["example"]["response"] is not None
        low, high = info["score_range"]
        assert low <= high


def test_get_one_and_unknown(http: httpx.Client) -> None:
    assert http.get("/v1/verifiers/exact").json()["name"] == "exact"
    r = http.get("/v1/verifiers/definitely-not")
    assert r.status_code == 404 and "exact" in r.json()["detail"]["known"]


@pytest.mark.parametrize("name", WITHOUT_SANDBOX)
def test_published_example_reproduces_its_expected_score(http: httpx.Client, name: str) -> None:
    example = http.get(f"/v1/verifiers/{name}").json()["example"]
    payload = {
        "verifier": name,
        "response": example["response"],
        "reference": example["reference"],
        "options": example["options"],
    }
    verdict = http.post("/v1/score", json=payload).json()
    assert verdict["status"] == "ok", verdict
    assert verdict["score"] == pytest.approx(example["expected_score"])


@pytest.mark.parametrize("name", JUDGES)
def test_a_judge_without_endpoints_is_an_error_never_a_score(http: httpx.Client, name: str) -> None:
    example = http.get(f"/v1/verifiers/{name}").json()["example"]
    payload = {k: example[k] for k in ("response", "reference", "options")}
    verdict = http.post("/v1/score", json={"verifier": name, **payload}).json()
    assert verdict["status"] == "error" and verdict["score"] is None
    assert "REFEREE_JUDGE_ENDPOINTS" in verdict["reason"]
    assert verdict["details"]["judge_error"] == "no_endpoint"  # the error verdict says why


def test_openapi_and_docs_are_served(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    assert "/v1/score" in spec["paths"] and "/v1/groups" in spec["paths"]
    assert http.get("/docs").status_code == 200


def test_the_list_route_documents_every_registered_kind(http: httpx.Client) -> None:
    """GET /v1/verifiers lists registered types of every kind; its description names them all."""
    described = http.get("/openapi.json").json()["paths"]["/v1/verifiers"]["get"]["description"]
    for kind in get_args(RegisteredKind):
        assert kind in described, kind


def test_open_mode_documents_only_the_quotas_that_hold_without_keys(http: httpx.Client) -> None:
    """Without keys there is no per-key request quota (no 429 on /v1/score), but every caller
    shares the anonymous audit quota, which answers 429: the document must say both."""
    spec = http.get("/openapi.json").json()
    assert "429" not in spec["paths"]["/v1/score"]["post"]["responses"]
    assert "401" not in spec["paths"]["/v1/audits"]["post"]["responses"]
    assert "429" in spec["paths"]["/v1/audits"]["post"]["responses"]
    assert all(
        key != "x-referee-quota-without-keys"
        for ops in spec["paths"].values()
        for op in ops.values()
        for key in op
    )
