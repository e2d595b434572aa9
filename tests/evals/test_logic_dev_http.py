"""The logic development set through the HTTP API: correctness and the R1 format label."""

from __future__ import annotations

import httpx

from referee.service.background import BackgroundServer
from tests.data import devset


def test_logic_dev_set_full_agreement(server: BackgroundServer) -> None:
    rows = devset("logic").rows
    groups = [
        {
            "verifier": [
                {"name": f"logic.{row['task']}", "weight": 1.0},
                {"name": "format.think_answer", "weight": 0.0},
            ],
            "reference": row["answer_spec"],
            "responses": [row["response"]],
        }
        for row in rows
    ]
    response = httpx.post(f"{server.url}/v1/groups", json={"groups": groups}, timeout=300)
    assert response.status_code == 200, response.text
    wrong, wrong_format = [], []
    for row, result in zip(rows, response.json()["groups"], strict=True):
        (verdict,) = result["verdicts"]
        correctness, fmt = verdict["details"]["components"]
        assert correctness["status"] == "ok" and fmt["status"] == "ok", verdict
        if correctness["score"] != row["expected_score"]:
            wrong.append((row["id"], row["expected_score"], correctness["score"], correctness["reason"]))
        if (fmt["score"] == 1.0) != row["format_ok"]:
            wrong_format.append((row["id"], row["format_ok"], fmt["score"]))
    assert not wrong, wrong
    assert not wrong_format, wrong_format
