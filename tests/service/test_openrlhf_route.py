"""OpenRLHF's remote reward URL protocol, served by the service."""

from __future__ import annotations

import json

import httpx

from referee.service.background import BackgroundServer


def test_openrlhf_remote_rm_protocol(server: BackgroundServer) -> None:
    prompts = ["2+2=", "2+2=", "Capital of France? "]
    queries = [p + r for p, r in zip(prompts, ["4", "5", "Paris"], strict=True)]
    labels = [
        "4",
        "4",
        json.dumps({"verifier": "exact", "reference": "paris", "options": {"case_sensitive": False}}),
    ]
    r = httpx.post(
        f"{server.url}/v1/openrlhf/reward", json={"query": queries, "prompts": prompts, "labels": labels}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["rewards"] == [1.0, 0.0, 1.0]
    assert body["scores"] == body["rewards"]
    assert body["extra_logs"]["referee_error"] == [0.0, 0.0, 0.0]


def test_openrlhf_refuses_fake_rewards_unless_asked(server: BackgroundServer) -> None:
    payload = {
        "query": ["fine", "boom"],
        "prompts": ["", ""],
        "labels": [json.dumps({"verifier": "test.raising", "reference": None})] * 2,
    }
    r = httpx.post(f"{server.url}/v1/openrlhf/reward", json=payload)
    assert r.status_code == 503 and r.json()["error"] == "no_verdict"
    assert r.json()["detail"]["samples"] == [1]
    r = httpx.post(f"{server.url}/v1/openrlhf/reward", params={"on_error": "zero"}, json=payload)
    assert r.status_code == 200
    assert r.json()["rewards"] == [1.0, 0.0] and r.json()["extra_logs"]["referee_error"] == [0.0, 1.0]
