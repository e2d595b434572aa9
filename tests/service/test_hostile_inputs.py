"""Inputs from a careless or hostile client (issue 14, defects 1 and 3): every one is answered
422 (or 413) in the documented `{"error", "message", "detail"}` body, never a 5xx, and never
a score computed from a number that is not a number."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from referee.service.background import BackgroundServer
from referee.service.json_body import MAX_DEPTH, DuplicateKey, parse_json


def _post(server: BackgroundServer, path: str, raw: bytes, **params: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}{path}",
        content=raw,
        params=params,
        headers={"content-type": "application/json"},
        timeout=60,
    )


def _assert_client_error(r: httpx.Response, status: int = 422) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert set(body) == {"error", "message", "detail"}
    return body


def _json_invalid(r: httpx.Response, says: str) -> None:
    body = _assert_client_error(r)
    assert body["error"] == "validation_error"
    assert body["detail"][0]["type"] == "json_invalid"
    assert says in body["detail"][0]["msg"]


# Raw bodies, written as text: Python's json module would refuse to write most of them.
LONE_SURROGATE = b'{"verifier": "math", "response": "the answer is \\ud800", "reference": "1"}'


@pytest.mark.parametrize("verifier", ["math", "exact", "multiple_choice", "numeric"])
def test_a_lone_surrogate_is_refused_not_a_500(server: BackgroundServer, verifier: str) -> None:
    raw = LONE_SURROGATE.replace(b'"math"', json.dumps(verifier).encode())
    _json_invalid(_post(server, "/v1/score", raw), "surrogate")
    # In a reference, an option key, a group response, an OpenRLHF query: the same.
    for path, body in [
        ("/v1/score", b'{"verifier": "exact", "response": "a", "reference": "\\udfff"}'),
        ("/v1/score", b'{"verifier": "exact", "response": "a", "options": {"\\ud800": 1}}'),
        ("/v1/groups", b'{"groups": [{"verifier": "math", "reference": "1", "responses": ["\\ud800"]}]}'),
        ("/v1/openrlhf/reward", b'{"query": ["\\ud800"], "labels": ["1"]}'),
    ]:
        _json_invalid(_post(server, path, body), "surrogate")


def test_a_surrogate_pair_is_text_and_is_scored(server: BackgroundServer) -> None:
    raw = b'{"verifier": "exact", "response": "\\ud83d\\ude00", "reference": "\\ud83d\\ude00"}'
    r = _post(server, "/v1/score", raw)
    assert r.status_code == 200 and r.json()["score"] == 1.0


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999"])
def test_non_finite_numbers_are_refused(server: BackgroundServer, constant: bytes) -> None:
    # As a reference (scored 0 before), as an option (a masked error before), in a group.
    _json_invalid(
        _post(server, "/v1/score", b'{"verifier": "numeric", "response": "1", "reference": %s}' % constant),
        "finite",
    )
    _json_invalid(
        _post(
            server,
            "/v1/score",
            b'{"verifier": "multiple_choice", "response": "(A)", "reference": "A", "options": {"x": %s}}'
            % constant,
        ),
        "finite",
    )
    _json_invalid(
        _post(
            server,
            "/v1/groups",
            b'{"groups": [{"verifier": "math", "reference": %s, "responses": ["1"]}]}' % constant,
        ),
        "finite",
    )


def test_deeply_nested_json_is_a_422(server: BackgroundServer) -> None:
    # Deeper than the interpreter's recursion limit (a 400 without the error body before) ...
    _json_invalid(_post(server, "/v1/score", b"[" * 100_000 + b"]" * 100_000), "nested")
    # ... and within it but over the service's bound.
    deep = json.dumps(
        {"verifier": "exact", "response": "x", "reference": json.loads("[" * 200 + "]" * 200)}
    ).encode()
    _json_invalid(_post(server, "/v1/score", deep), "nested")
    # A reference at the bound is still JSON like any other (refused by the verifier's schema).
    at_bound = json.dumps(
        {
            "verifier": "exact",
            "response": "x",
            "reference": json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)),
        }
    ).encode()
    body = _assert_client_error(_post(server, "/v1/score", at_bound))
    assert body["detail"][0]["loc"] == ["reference"]


def test_invalid_utf8_and_broken_json_are_422(server: BackgroundServer) -> None:
    _json_invalid(_post(server, "/v1/score", b'{"verifier": "exact", "response": "\xff\xfe"}'), "UTF-8")
    _json_invalid(_post(server, "/v1/verifiers", b"m\xc3\x15"), "UTF-8")
    _json_invalid(_post(server, "/v1/score", b'{"verifier": "exact", "response": '), "JSON decode error")
    _json_invalid(
        _post(
            server, "/v1/score", b'{"verifier": "exact", "response": "1", "reference": ' + b"9" * 5000 + b"}"
        ),
        "",
    )


def test_undeclared_methods_are_405_with_allow(server: BackgroundServer) -> None:
    for method, path, allow in [
        ("TRACE", "/v1/score", "POST"),
        ("PUT", "/v1/groups", "POST"),
        ("TRACE", "/livez", "GET"),
        ("PATCH", "/v1/verifiers", "GET, POST"),
    ]:
        r = httpx.request(method, f"{server.url}{path}", timeout=30)
        assert r.status_code == 405, (method, path)
        assert set(r.headers["allow"].replace(" ", "").split(",")) == set(allow.replace(" ", "").split(","))
        assert r.json()["error"] == "method_not_allowed"


@pytest.mark.parametrize(
    "label",
    [
        {"verifier": [{"name": 1}]},
        {"verifier": "exact", "options": [1]},
        json.dumps({"verifier": [1]}),
        {"verifier": [], "reference": "x"},
        {"verifier": ""},
        {"verifier": 5},
        {"verifier": [{"name": "exact"}], "options": {"a": 1}},
        # Fields the encoding does not have, or of the wrong type, are never dropped silently.
        {"verifier": "exact", "reference": "4", "weight": "x"},
        json.dumps({"verifier": "exact", "refrence": "4"}),
        {"verifier": [{"name": "exact", "weight": "x"}], "reference": "4"},
        {"verifier": [{"name": "exact", "wieght": 2.0}], "reference": "4"},
        '{"verifier": "exact", "reference": "4", "reference": "5"}',
        '{"verifier": "numeric", "reference": NaN}',
    ],
)
def test_openrlhf_unusable_labels_are_422_or_masked(server: BackgroundServer, label: Any) -> None:
    payload = {"query": ["4", "4"], "labels": [label, "4"]}
    body = _assert_client_error(httpx.post(f"{server.url}/v1/openrlhf/reward", json=payload, timeout=60))
    assert body["detail"][0]["loc"] == ["body", "labels", 0] and len(body["detail"]) == 1
    # With on_error=zero the batch is answered, the bad sample flagged, the good one scored.
    r = httpx.post(f"{server.url}/v1/openrlhf/reward", params={"on_error": "zero"}, json=payload, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == [0.0, 1.0] and r.json()["extra_logs"]["referee_error"] == [1.0, 0.0]


@pytest.mark.parametrize(
    ("label", "says"),
    [
        ({"verifier": "exact", "reference": "4", "weight": "x"}, "unknown field 'weight'"),
        ({"verifier": [{"name": "exact", "weight": "x"}]}, "component 0 (weight)"),
        ('{"verifier": "exact", "reference": "4", "reference": "5"}', "'reference' appears twice"),
    ],
)
def test_openrlhf_label_errors_name_the_field(server: BackgroundServer, label: Any, says: str) -> None:
    payload = {"query": ["4"], "labels": [label]}
    body = _assert_client_error(httpx.post(f"{server.url}/v1/openrlhf/reward", json=payload, timeout=60))
    assert says in body["detail"][0]["msg"], body


def test_openrlhf_odd_query_parameters(server: BackgroundServer) -> None:
    payload = {"query": ["4"], "labels": ["4"]}
    url = f"{server.url}/v1/openrlhf/reward"
    # An unknown default verifier is the client's mistake: 422 naming the samples, not a 503.
    body = _assert_client_error(httpx.post(url, params={"verifier": "no.such"}, json=payload, timeout=60))
    assert (
        body["detail"][0]["loc"] == ["body", "labels", 0] and "unknown verifier" in body["detail"][0]["msg"]
    )
    for params in ({"verifier": ""}, {"turns": "x"}, {"on_error": "maybe"}, {"strip_eos": "perhaps"}):
        _assert_client_error(httpx.post(url, params=params, json=payload, timeout=60))
    for turns in ("0", "-0", "9999", "-9999", "all"):
        assert httpx.post(url, params={"turns": turns}, json=payload, timeout=60).status_code == 200


def test_a_transient_failure_among_invalid_samples_is_still_a_503(server: BackgroundServer) -> None:
    payload = {
        "query": ["boom", "x"],
        "labels": [json.dumps({"verifier": "test.raising", "reference": None}), {"verifier": 5}],
    }
    r = httpx.post(f"{server.url}/v1/openrlhf/reward", json=payload, timeout=60)
    assert r.status_code == 503 and r.json()["error"] == "no_verdict" and "retry-after" in r.headers


def test_a_key_named_twice_is_a_422_everywhere(server: BackgroundServer) -> None:
    """Last-wins would judge something else than the trainer sent: refused, naming the key and,
    as `loc`, the path of the object that names it."""
    for path, body, loc in [
        ("/v1/score", b'{"verifier": "exact", "response": "2", "reference": "1", "reference": "2"}', []),
        (
            "/v1/score",
            b'{"verifier": "exact", "response": "a", "reference": "a", "options": {"x": 1, "x": 2}}',
            ["options"],
        ),
        (
            "/v1/groups",
            b'{"groups": [{"verifier": "exact", "verifier": "math", "reference": "1", "responses": ["1"]}]}',
            ["groups", 0],
        ),
        (
            "/v1/groups",
            b'{"groups": [{"verifier": "exact", "reference": "1", "responses": ["1"]},'
            b' {"verifier": "math", "reference": {"answer": "1", "answer": "2"}, "responses": ["1"]}]}',
            ["groups", 1, "reference"],
        ),
        ("/v1/openrlhf/reward", b'{"query": ["1"], "labels": ["1"], "labels": ["2"]}', []),
        ("/v1/verifiers", b'{"name": "t.dup", "name": "t.dup2", "kind": "declarative"}', []),
        ("/v1/audits", b'{"verifier": "exact", "verifier": "math", "rows": []}', []),
    ]:
        r = _post(server, path, body)
        _json_invalid(r, "appears twice in one object")
        assert r.json()["detail"][0]["loc"] == ["body", *loc], r.text
    # The same key in two different objects is no duplicate.
    r = _post(server, "/v1/score", b'{"verifier": "exact", "response": "a", "reference": "a", "options": {}}')
    assert r.status_code == 200 and r.json()["score"] == 1.0, r.text


def test_parse_json_locates_a_key_named_twice() -> None:
    with pytest.raises(DuplicateKey) as raised:
        parse_json(b'{"a": [{"b": 1, "b2": 1}, {"c": {"d": 1, "e": 0, "d": 2}}], "z": {"y": 1, "y": 1}}')
    assert raised.value.path == ("a", 1, "c") and raised.value.key == "d"  # the first in the text
    assert raised.value.msg == "the key 'd' appears twice in one object (at a.1.c)"
    assert parse_json(b'{"a": {"b": 1}, "b": {"a": 1}}') == {"a": {"b": 1}, "b": {"a": 1}}


def test_parse_json_accepts_plain_json() -> None:
    value = {"a": [1, 2.5, -3e10, True, None, "é😀"], "b": {"c": []}}
    assert parse_json(json.dumps(value, ensure_ascii=False).encode()) == value
    assert parse_json(json.dumps(value).encode()) == value
