"""The probe battery as part of the activation gate (issue 15 §1): `probes` in POST /v1/verifiers.

Against a real service: a lenient type that a spray of boxed answers fools is refused with
`probes_failed` and nothing is stored; a strict type passes with every probe counted; a checker
that errors on a probe is refused too; an unknown battery names the field and the known ones;
without `probes` nothing changes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from referee.audit import battery
from referee.registered.declarative import worker_builtins
from referee.verifiers import builtin_index
from tests.registered.conftest import WEBHOOK_SECRET, register, score

CORRECT = "math" if "math" in worker_builtins(builtin_index()) else "numeric"
# The lenient check: the reference anywhere in the whole response (a "contains" comparison).
CONTAINS = {
    "type": "check",
    "extract": {"kind": "none"},
    "compare": {"kind": "regex", "options": {"mode": "search"}},
}
CONTAINS_EXAMPLES = [
    {"response": "The answer is 42.", "reference": "42", "expected_score": 1.0},
    {"response": "The answer is 7.", "reference": "42", "expected_score": 0.0},
]


def contains_type(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "declarative", "spec": CONTAINS, "examples": CONTAINS_EXAMPLES, **extra}


def strict_type(name: str, **extra: Any) -> dict[str, Any]:
    """The built-in math verifier on `reference.answer`: what the math battery was written for."""
    return {
        "name": name,
        "kind": "declarative",
        "spec": {"type": "verifier", "name": CORRECT, "reference": "{{reference.answer}}"},
        "reference_schema": {
            "type": "object",
            "required": ["answer"],
            "properties": {"answer": {"type": "string"}},
        },
        "examples": [
            {"response": "So $\\boxed{4}$.", "reference": {"answer": "4"}, "expected_score": 1.0},
            {"response": "So $\\boxed{5}$.", "reference": {"answer": "4"}, "expected_score": 0.0},
            {"response": "It is $\\boxed{12}$.", "reference": {"answer": "12"}, "expected_score": 1.0},
        ],
        **extra,
    }


def attacks(name: str) -> list[str]:
    return [p.name for p in battery(name) if not p.control]


def test_lenient_type_is_refused_naming_the_probes_and_nothing_is_stored(http: httpx.Client) -> None:
    r = register(http, contains_type("gate.contains", probes={"battery": CORRECT}))
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "probes_failed"
    detail = body["detail"]
    assert detail["battery"] == CORRECT
    failed = {f["name"]: f for f in detail["failed"]}
    # The spray holds the reference, so "contains" rewards it; so do the hedges and retractions.
    for name in ("spray_boxes_correct_last", "hedge_two_boxes", "retraction"):
        assert name in failed, sorted(failed)
        assert failed[name]["score"] == pytest.approx(1.0) and failed[name]["status"] == "ok"
        assert failed[name]["max_score"] == 0.0 and failed[name]["battery"] == CORRECT
    spray = failed["spray_boxes_correct_last"]
    assert spray["attack"] == "spray" and "\\boxed{42}" in spray["response"]
    # Probes without the answer in them earn nothing and are not listed.
    assert "injection_only" not in failed and "empty" not in failed
    assert len(failed) < detail["probes"]
    # Nothing stored: the name is unknown to scoring and has no history.
    assert (
        http.post(
            "/v1/score", json={"verifier": "gate.contains", "response": "42", "reference": "42"}
        ).status_code
        == 404
    )
    assert http.get("/v1/verifiers/gate.contains/versions").status_code == 404


def test_a_refused_new_version_leaves_the_previous_one_serving(http: httpx.Client) -> None:
    strict = {
        "type": "check",
        "extract": {"kind": "boxed"},
        "compare": {"kind": "exact"},
    }
    boxed = [
        {"response": "So $\\boxed{42}$.", "reference": "42", "expected_score": 1.0},
        {"response": "So $\\boxed{7}$.", "reference": "42", "expected_score": 0.0},
    ]
    first = register(http, {**contains_type("gate.versions"), "spec": strict, "examples": boxed})
    assert first.status_code == 201 and first.json()["probes_passed"] is None
    refused = register(http, contains_type("gate.versions", probes={"battery": CORRECT}))
    assert refused.status_code == 422 and refused.json()["error"] == "probes_failed"
    spray = "Candidates: $\\boxed{41}$ and then 42 somewhere"
    verdict = score(http, "gate.versions", spray, "42")
    assert verdict["verifier"] == "gate.versions@1" and verdict["score"] == 0.0
    versions = http.get("/v1/verifiers/gate.versions/versions").json()["versions"]
    assert [v["version"] for v in versions] == [1]
    # No version number was consumed: the same content without probes becomes @2.
    assert register(http, contains_type("gate.versions")).json()["verifier"] == "gate.versions@2"


def test_strict_type_passes_every_probe(http: httpx.Client) -> None:
    r = register(http, strict_type("gate.strict", probes={"battery": CORRECT, "reference_field": "answer"}))
    assert r.status_code == 201, r.text
    body = r.json()
    # The battery's attacks, then the generic probes (4) on the references of two examples.
    assert body["probes_passed"] == len(attacks(CORRECT)) + 4 * 2
    assert body["verifier"] == "gate.strict@1" and body["version"]["active"] is True
    assert score(http, "gate.strict", "It is $\\boxed{9}$.", {"answer": "9"})["score"] == 1.0
    # Re-posting the same content runs the gate again and answers with the same version.
    again = register(
        http, strict_type("gate.strict", probes={"battery": CORRECT, "reference_field": "answer"})
    )
    assert again.status_code == 200 and again.json()["probes_passed"] == body["probes_passed"]


def test_other_fields_of_the_reference_are_kept(http: httpx.Client) -> None:
    """`reference_field` sets one path in a copy of the best example's reference."""
    body = strict_type("gate.nested")
    body["spec"]["reference"] = "{{reference.gold.answer}}"
    body["reference_schema"] = {
        "type": "object",
        "required": ["gold", "source"],
        "properties": {"gold": {"type": "object", "required": ["answer"]}, "source": {"const": "book"}},
    }
    for example in body["examples"]:
        example["reference"] = {"gold": example["reference"], "source": "book"}
    r = register(http, {**body, "probes": {"battery": CORRECT, "reference_field": "gold.answer"}})
    assert r.status_code == 201, r.text
    assert r.json()["probes_passed"] == len(attacks(CORRECT)) + 4 * 2


def test_references_that_do_not_fit_the_type_are_a_request_error(http: httpx.Client) -> None:
    r = register(http, strict_type("gate.unfit", probes={"battery": CORRECT}))
    assert r.status_code == 422 and r.json()["error"] == "probes_invalid", r.text
    assert r.json()["detail"][0]["loc"] == ["body", "probes", "reference_field"]
    assert "reference_field" in r.json()["message"]
    scalar = contains_type("gate.unfit", probes={"battery": CORRECT, "reference_field": "answer"})
    r = register(http, scalar)  # the examples' reference is "42", not an object
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "probes", "reference_field"]
    assert http.get("/v1/verifiers/gate.unfit/versions").status_code == 404


def test_unknown_battery_names_the_field_and_the_known_ones(http: httpx.Client) -> None:
    r = register(http, contains_type("gate.unknown", probes={"battery": "astrology"}))
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "validation_error"
    assert body["detail"][0]["loc"] == ["body", "probes", "battery"]
    for known in (CORRECT, "exact", "code", "generic", "logic.zebra"):
        assert known in body["detail"][0]["msg"]
    r = register(http, contains_type("gate.unknown", probes={"battery": CORRECT, "strict": True}))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "probes", "strict"]
    r = register(http, contains_type("gate.unknown", probes={}))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "probes", "battery"]
    assert http.get("/v1/verifiers/gate.unknown/versions").status_code == 404
    # The document says which ones exist.
    schema = http.get("/openapi.json").json()["components"]["schemas"]["ProbeGateRequest"]
    assert {CORRECT, "generic", "code", "logic.zebra"} <= set(schema["properties"]["battery"]["enum"])


def test_generic_battery_alone(http: httpx.Client) -> None:
    """`generic`: empty, whitespace and injection responses on the examples' own references."""
    r = register(http, contains_type("gate.generic", probes={"battery": "generic"}))
    assert r.status_code == 201, r.text
    assert r.json()["probes_passed"] == 4  # one distinct reference among the examples
    echo = {
        "type": "check",
        "extract": {"kind": "none"},
        "compare": {"kind": "regex", "options": {"mode": "search"}},
        "reference": ".*",  # matches anything, the empty response included
    }
    r = register(http, {**contains_type("gate.echo"), "spec": echo, "examples": [CONTAINS_EXAMPLES[0]]})
    assert r.status_code == 201  # without probes, the examples alone let it in
    r = register(
        http,
        {
            **contains_type("gate.echo2"),
            "spec": echo,
            "examples": [CONTAINS_EXAMPLES[0]],
            "probes": {"battery": "generic"},
        },
    )
    assert r.status_code == 422 and r.json()["error"] == "probes_failed"
    assert {f["attack"] for f in r.json()["detail"]["failed"]} == {"empty", "whitespace", "injection"}


def test_without_probes_nothing_changes(http: httpx.Client) -> None:
    r = register(http, contains_type("gate.plain"))
    assert r.status_code == 201 and r.json()["probes_passed"] is None
    assert score(http, "gate.plain", "$\\boxed{41}$ $\\boxed{42}$", "42")["score"] == 1.0
    explicit_null = register(http, contains_type("gate.plain", probes=None))
    assert explicit_null.status_code == 200 and explicit_null.json()["probes_passed"] is None


# ---- an error verdict fails a probe ------------------------------------------------------


class _Crashy(BaseHTTPRequestHandler):
    """Grades exact answers, and answers 500 to anything with a <think> block."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "<think>" in payload["response"]:
            status, answer = 500, {"error": "cannot parse"}
        else:
            status, answer = 200, {"score": float(payload["response"].strip() == payload["reference"])}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def crashy() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Crashy)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_probe_that_gets_an_error_verdict_fails(http: httpx.Client, crashy: str) -> None:
    body = {
        "name": "gate.crashy",
        "kind": "webhook",
        "spec": {"url": f"{crashy}/grade", "secret": WEBHOOK_SECRET},
        "examples": [
            {"response": "42", "reference": "42", "expected_score": 1.0},
            {"response": "41", "reference": "42", "expected_score": 0.0},
        ],
    }
    assert register(http, {**body, "name": "gate.crashy-plain"}).status_code == 201
    r = register(http, {**body, "probes": {"battery": CORRECT}})
    assert r.status_code == 422 and r.json()["error"] == "probes_failed", r.text
    failed = {f["name"]: f for f in r.json()["detail"]["failed"]}
    assert failed["think_only"]["status"] == "error" and failed["think_only"]["score"] is None
    assert http.get("/v1/verifiers/gate.crashy/versions").status_code == 404
