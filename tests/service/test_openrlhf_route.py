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


def test_openrlhf_end_of_sequence_text_is_stripped(server: BackgroundServer) -> None:
    """OpenRLHF sends responses as decoded with their special tokens: a correct answer followed
    by `<|im_end|>` (or padding) must score as the answer it is."""
    tails = [
        "<|im_end|>",
        "<|endoftext|>",
        "</s>",
        "<eos>",
        "<|eot_id|>",
        "<|im_end|>\n<|endoftext|><|endoftext|>",
    ]
    prompt = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
    queries = [prompt + "The answer is \\boxed{42}" + tail for tail in tails]
    payload = {"query": queries, "prompts": [prompt] * len(queries), "labels": ["42"] * len(queries)}
    url = f"{server.url}/v1/openrlhf/reward"
    r = httpx.post(url, params={"verifier": "math"}, json=payload)
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == [1.0] * len(tails)
    # exact matching shows what is stripped: the marker, never the answer.
    exact = {**payload, "query": [prompt + "42" + tail for tail in tails]}
    assert httpx.post(url, json=exact).json()["rewards"] == [1.0] * len(tails)
    kept = httpx.post(url, params={"strip_eos": "false"}, json=exact).json()["rewards"]
    # <|im_end|> closes the ChatML turn the prompt opened, so it is never part of the turn's
    # text (nor what follows it); the other markers stay unless stripped.
    assert kept == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_strip_trailing_eos_only_strips_markers_at_the_end() -> None:
    from referee.service.openrlhf import strip_trailing_eos

    assert strip_trailing_eos("a</s> b") == "a</s> b"
    assert strip_trailing_eos("x\n<|im_end|>\n") == "x\n"
    assert strip_trailing_eos("  ") == "  "
    assert strip_trailing_eos("y" + "<pad>" * 100_000) == "y"  # one linear pass


def test_a_sample_without_a_label_is_judged_without_a_reference(server: BackgroundServer) -> None:
    """`labels` is optional: without it (or with the "" OpenRLHF sends when --data.label_key is
    not set) a reference-free verifier judges the sample; one that needs a reference refuses it
    saying which label is missing, never a silent 0 against an empty reference."""
    url = f"{server.url}/v1/openrlhf/reward"
    formatted = {"query": ["Q:<think>a</think><answer>42</answer>", "Q:42"], "prompts": ["Q:", "Q:"]}
    r = httpx.post(url, params={"verifier": "format.think_answer"}, json=formatted)
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == [1.0, 0.0]
    no_labels = {"query": ["Q:42"], "prompts": ["Q:"]}
    for body in (no_labels, {**no_labels, "labels": [""]}, {**no_labels, "labels": [None]}):
        r = httpx.post(url, json=body)
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["loc"] == ["body", "labels", 0]
        assert "no label" in r.json()["message"] and "--data.label_key" in r.json()["message"]
        zero = httpx.post(url, params={"on_error": "zero"}, json=body).json()
        assert zero["rewards"] == [0.0] and zero["extra_logs"]["referee_error"] == [1.0]
