"""The code development set through the HTTP API, with the real Docker sandbox."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.data import devset

pytestmark = pytest.mark.docker


def _start_with_env(name: str, value: str) -> BackgroundServer:
    """Start a server whose sandbox settings (read from the environment at start-up) see
    `name=value`; the process environment is restored afterwards."""
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        return BackgroundServer(make_settings(sandbox=True)).start()
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


@pytest.fixture(scope="module")
def code_server() -> Iterator[BackgroundServer]:
    # Its own label instance: starting a pool removes stray containers of the same instance,
    # which must never be another live pool's.
    running = _start_with_env("REFEREE_SANDBOX_INSTANCE", "pytest-evals-http")
    try:
        yield running
    finally:
        running.stop()


def test_code_dev_set_verdicts_and_fractions(code_server: BackgroundServer) -> None:
    rows = devset("code").rows
    ready = httpx.get(f"{code_server.url}/readyz").json()
    assert ready["checks"]["sandbox"]["ok"], ready
    groups = [
        {
            "verifier": "code",
            "reference": {"language": r["language"], "test_format": r["test_format"], "tests": r["tests"]},
            # The labels are pass fractions (the dev policy scores passed/total); the default
            # reward is all-tests-pass.
            "options": {"reward": "fraction"},
            "responses": [r["candidate"]],
        }
        for r in rows
    ]
    response = httpx.post(f"{code_server.url}/v1/groups", json={"groups": groups}, timeout=900)
    assert response.status_code == 200, response.text
    wrong = []
    for row, result in zip(rows, response.json()["groups"], strict=True):
        (verdict,) = result["verdicts"]
        assert verdict["status"] == "ok", (row["id"], verdict["reason"])
        details = verdict["details"]
        fraction = details["passed"] / details["total"]
        if (
            details["verdict"] != row["expected_verdict"]
            or abs(fraction - row["expected_pass_fraction"]) > 5e-5  # labels have 4 decimals
        ):
            wrong.append(
                (
                    row["id"],
                    row["expected_verdict"],
                    details["verdict"],
                    row["expected_pass_fraction"],
                    fraction,
                )
            )
        assert verdict["score"] == pytest.approx(fraction)
    assert not wrong, wrong


def test_code_example_reproduces_its_score(code_server: BackgroundServer) -> None:
    example = httpx.get(f"{code_server.url}/v1/verifiers/code").json()["example"]
    payload = {"verifier": "code", **{k: example[k] for k in ("response", "reference", "options")}}
    verdict = httpx.post(f"{code_server.url}/v1/score", json=payload, timeout=120).json()
    assert verdict["status"] == "ok" and verdict["score"] == pytest.approx(example["expected_score"])


def test_other_verifiers_work_when_docker_is_unreachable() -> None:
    server = _start_with_env("REFEREE_SANDBOX_DOCKER_HOST", "unix:///nonexistent/docker.sock")
    try:
        ready = httpx.get(f"{server.url}/readyz").json()
        assert ready["ready"] is True and ready["checks"]["sandbox"]["ok"] is False
        assert ready["checks"]["sandbox"]["reason"]
        reference = {"language": "python", "test_format": "stdio", "tests": [{"input": "", "output": "1"}]}
        verdict = httpx.post(
            f"{server.url}/v1/score",
            json={"verifier": "code", "response": "print(1)", "reference": reference},
        ).json()
        assert verdict["status"] == "error" and verdict["score"] is None and verdict["reason"]
        other = httpx.post(
            f"{server.url}/v1/score", json={"verifier": "exact", "response": "a", "reference": "a"}
        )
        assert other.json()["score"] == 1.0
    finally:
        server.stop()


def test_verl_code_datasets_end_to_end(code_server: BackgroundServer) -> None:
    """verl's code data sources route to `code`, their {"inputs", "outputs", "fn_name"?} JSON
    ground truth is a reference, and the programs run in the real sandbox."""
    from referee.trainer_adapter import verl

    stdio = json.dumps({"inputs": ["1 2\n", "20 22\n"], "outputs": ["3\n", "42\n"]})
    calls = json.dumps({"inputs": [[1, 2], [20, 22]], "outputs": [[3], [42]], "fn_name": "add"})
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    wrong = "```python\nprint(0)\n```"
    function = "```python\ndef add(a, b):\n    return a + b\n```"
    scores = verl.compute_score_batch(
        ["codecontests", "apps", "taco", "primeintellect"],
        [right, wrong, function, function],
        [stdio, stdio, calls, calls],
        [{}, {}, {}, {}],
        url=code_server.url,
    )
    assert scores == [1.0, 0.0, 1.0, 1.0]
