"""A webhook grader that flaps (fails, recovers, fails) or hangs, under scoring load (issue 14).

Every affected verdict is masked (`status: error`, score null), never a fake score; an answered
call is scored right; a hanging grader costs each verdict at most its timeout and retries; the
built-in verifiers are served throughout; when the grader is back, so are its verdicts.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.registered.conftest import WEBHOOK_TIMEOUT_S, Webhook, register
from tests.registered.test_webhook import REF, hook_type
from tests.support.load import ThreadedLoad
from tests.timing import wait_until, within


class Load(ThreadedLoad):
    """Clients scoring the webhook type (right answer: 0.5) and `exact` until stopped."""

    def __init__(self, url: str) -> None:
        super().__init__(url, clients=4, timeout_s=60)
        self.hook: list[tuple[float, str, Any, float]] = []  # (time, status, score, seconds)
        self.exact: list[tuple[int, Any]] = []

    def step(self, http: httpx.Client, i: int) -> None:
        if i % 2:
            r = http.post("/v1/score", json={"verifier": "exact", "response": "4", "reference": "4"})
            self.exact.append((r.status_code, r.json().get("score")))
            return
        start = time.monotonic()
        r = http.post("/v1/score", json={"verifier": "hook.flap", "response": "red blue", "reference": REF})
        body = r.json()
        self.hook.append((time.monotonic(), body.get("status"), body.get("score"), time.monotonic() - start))

    def count(self, status: str, since: float) -> int:
        return sum(1 for t, s, _, _ in self.hook if t >= since and s == status)


@pytest.mark.slow
def test_a_flapping_and_hanging_webhook_under_load(http: httpx.Client, webhook: Webhook) -> None:
    assert register(http, hook_type("hook.flap", webhook.url("/switch"))).status_code == 201
    webhook.down = webhook.hanging = False
    try:
        with Load(str(http.base_url)) as load:
            for _ in range(3):  # flap: down, up, down, up, ...
                start = time.monotonic()
                wait_until(lambda s=start: load.count("ok", s) >= 3, within(30), what="verdicts while up")
                webhook.down = True
                start = time.monotonic()
                wait_until(lambda s=start: load.count("error", s) >= 3, within(30), what="masked while down")
                webhook.down = False
                # The breaker may hold calls back for its cool-down after the failures.
            start = time.monotonic()
            wait_until(lambda: load.count("ok", start) >= 3, within(30), what="verdicts after flapping")
            webhook.hanging = True
            start = time.monotonic()
            wait_until(lambda: load.count("error", start) >= 3, within(60), what="masked while hanging")
            webhook.hanging = False
            start = time.monotonic()
            wait_until(lambda: load.count("ok", start) >= 3, within(60), what="verdicts after the hang")
    finally:
        webhook.down = webhook.hanging = False
    for _, status, score, _ in load.hook:
        assert (status, score) in (("ok", 0.5), ("error", None)), (status, score)
    # A call is bounded by its attempts' timeouts (2 attempts) plus the request's own overhead.
    assert max(seconds for *_, seconds in load.hook) < within(2 * WEBHOOK_TIMEOUT_S + 2.0)
    assert load.exact and all(r == (200, 1.0) for r in load.exact)
