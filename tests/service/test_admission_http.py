"""Admission per execution lane over HTTP: bounded queueing, 503 + Retry-After beyond it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from referee.service.background import BackgroundServer
from tests.conftest import make_settings
from tests.timing import wait_until


@pytest.mark.slow
def test_a_request_that_would_queue_too_long_is_503_with_retry_after() -> None:
    """Admission per lane: beyond `max_queue_wait_s` of expected queueing, a clear 503 that
    tells the client when to come back, while a request for another lane is still served."""
    settings = make_settings(max_queue_wait_s=0.001, verdict_timeout_s=5.0)
    with BackgroundServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        slow = {"groups": [{"verifier": "test.sleepy", "reference": None, "responses": ["1.5"] * 10}]}
        with ThreadPoolExecutor(1) as executor:
            first = executor.submit(http.post, "/v1/groups", json=slow)
            wait_until(
                lambda: http.get("/readyz").json()["lanes"]["cpu"]["in_flight"] == 10, 10, what="admitted"
            )
            refused = http.post("/v1/groups", json=slow)
            assert refused.status_code == 503
            assert int(refused.headers["Retry-After"]) >= 1
            body = refused.json()
            assert body["error"] == "overloaded" and "cpu lane" in body["message"]
            assert body["detail"]["lane"] == "cpu" and body["detail"]["max_queue_wait_s"] == 0.001
            lanes = http.get("/readyz").json()["lanes"]
            assert lanes["cpu"]["refused"] == 1 and lanes["sandbox"]["in_flight"] == 0
            assert first.result().status_code == 200  # the admitted request is served whole
        assert 'referee_lane_refused{lane="cpu"} 1.0' in http.get("/metrics").text
