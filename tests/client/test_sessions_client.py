"""The clients' code sessions and environment episodes (issue 30): the contract's requests and
results against a loopback stand-in of the routes (tests/support/fake_rollouts.py), and which
failures each request may be resent after (a call that may have run is never sent twice)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from referee.client import (
    AsyncClient,
    Client,
    RefereeHTTPError,
    RefereeUnavailable,
    message,
    tool_call,
)
from tests.client.test_patience import closed_early, refused, reset
from tests.support.fake_rollouts import FakeRollouts

CREATED = {"id": "s1", "language": "python", "limits": {}, "idle_ttl_s": 300.0, "max_lifetime_s": 3600.0}
RESULT = {"status": "ok", "stdout": "", "stderr": "", "value": "2", "error": None, "duration_s": 0.01}
RESULT |= {"truncated": False, "restarted": False, "call": 1}
VERDICT = {"score": 1.0, "status": "ok", "verifier": "exact@1"}

Step = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeRollouts]:
    with FakeRollouts() as running:
        yield running


def test_a_session_keeps_its_state_between_calls_and_closes(fake: FakeRollouts) -> None:
    with Client(fake.url, api_key="k1") as client:
        with client.open_session(limits={"call_time_s": 5}, idle_ttl_s=60) as py:
            assert py.info.idle_ttl_s == 60 and py.info.limits["call_time_s"] == 5
            assert py.run("import math\nx = 41").value is None
            second = py.run("print('hi')\nmath.floor(x + 1.5)")
            assert (second.status, second.stdout, second.value, second.call) == ("ok", "hi\n", "42", 2)
            failed = py.run("1 / 0")
            assert failed.status == "error" and "ZeroDivisionError" in (failed.error or "")
            assert "ZeroDivisionError" in failed.text() and not failed.ok
            assert py.state().calls == 3
            assert py.id in [s.id for s in client.list_sessions()]
            opened = py.id
        assert py.closed and opened not in fake.open_ids()
        py.close()  # idempotent: no second DELETE
        assert fake.requests.count(("DELETE", f"/v1/sessions/{opened}")) == 1
        assert client.close_session(opened) is False  # already gone: 404 read as False


def test_another_keys_session_is_not_found(fake: FakeRollouts) -> None:
    with Client(fake.url, api_key="k1") as mine, Client(fake.url, api_key="k2") as theirs:
        py = mine.open_session()
        with pytest.raises(RefereeHTTPError) as caught:
            theirs.run(py.id, "1")
        assert caught.value.status_code == 404
        assert py.run("1 + 1").value == "2"
        py.close()


async def test_the_async_session_and_episode(fake: FakeRollouts) -> None:
    async with AsyncClient(fake.url, api_key="k1") as client:
        async with await client.open_session() as py:
            await py.run("y = [1, 2]")
            assert (await py.run("len(y)")).value == "2"
        assert py.id not in fake.open_ids()
        episode = await client.start_episode("python", {"prompt": "2+2?", "reference": "4"})
        step = await client.step("python", episode.episode_id, tool_call("python", {"code": "2 + 2"}))
        assert step.observation == "value: 4" and not step.done
        await client.step("python", episode.episode_id, message("4"))
        assert (await client.verify("python", episode.episode_id)).score == 1.0
        assert await client.end_episode("python", episode.episode_id)


def test_an_episode_from_start_to_verdict(fake: FakeRollouts) -> None:
    with Client(fake.url, api_key="k1") as client:
        (env,) = client.list_environments()
        assert env.name == "python" and env.tools[0]["function"]["name"] == "python"
        episode = client.start_episode("python", {"prompt": "What is 6*7?", "reference": "42"}, seed=3)
        assert (episode.environment, episode.observation, episode.turn) == ("python", "What is 6*7?", 0)
        assert client.step("python", episode.episode_id, tool_call("python", {"code": "z = 6 * 7"})).turn == 1
        seen = client.step("python", episode.episode_id, tool_call("python", {"code": "print(z)"}))
        assert seen.observation == "stdout:\n42\n" and not seen.done
        final = client.step("python", episode.episode_id, message("42"))
        assert final.done
        verdict = client.verify("python", episode.episode_id)
        assert verdict.score == 1.0 and verdict.details == {"turns": 3, "tool_calls": 2}
        assert client.verify("python", episode.episode_id, response="41").score == 0.0
        assert client.end_episode("python", episode.episode_id) is True
        assert client.end_episode("python", episode.episode_id) is False
        with pytest.raises(ValueError):
            client.step("python", "../../sessions", message("x"))


def test_opening_waits_out_a_full_service(fake: FakeRollouts) -> None:
    fake.busy_opens = 1  # 503 + Retry-After: 1 once, as when every slot is taken
    with Client(fake.url, api_key="k1") as client:
        before = fake.requests.count(("POST", "/v1/sessions"))
        with client.open_session() as py:
            assert py.run("3").value == "3"
        assert fake.requests.count(("POST", "/v1/sessions")) == before + 2


# --- what is resent, on httpx's MockTransport -------------------------------------------------


def answer(code: int, body: object = None, retry_after: str | None = None) -> Step:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return lambda request: httpx.Response(code, json=body, headers=headers)


class Script:
    """Plays `steps` in order (the last one repeats), counting the requests."""

    def __init__(self, *steps: Step) -> None:
        self.steps, self.calls = steps, 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        return step(request)


def scripted(*steps: Step) -> tuple[Client, Script]:
    script = Script(*steps)
    return Client("http://referee", transport=httpx.MockTransport(script), backoff_s=0.001), script


@pytest.mark.parametrize("lost", [reset, closed_early], ids=["reset", "closed_early"])
def test_a_run_whose_answer_was_lost_is_not_sent_again(lost: Step) -> None:
    client, script = scripted(lost, answer(200, RESULT))
    with pytest.raises(RefereeUnavailable, match="not resent"):
        client.run("s1", "x += 1")
    assert script.calls == 1


def test_a_run_that_never_reached_the_service_is_sent_again() -> None:
    client, script = scripted(refused, refused, answer(200, RESULT))
    assert client.run("s1", "1 + 1").value == "2"
    assert script.calls == 3


@pytest.mark.parametrize("code", [502, 503, 504])
def test_a_run_answered_with_an_error_status_is_not_sent_again(code: int) -> None:
    client, script = scripted(answer(code, {"error": "sandbox_unavailable", "message": "lost"}, "0"))
    with pytest.raises(RefereeHTTPError) as caught:
        client.run("s1", "1")
    assert caught.value.status_code == code and script.calls == 1


def test_a_step_is_sent_once() -> None:
    client, script = scripted(reset, answer(200, {"observation": "", "done": True, "turn": 1}))
    with pytest.raises(RefereeUnavailable):
        client.step("python", "e1", message("4"))
    assert script.calls == 1


def test_opening_resends_a_refused_quota_or_full_service_but_not_a_lost_answer() -> None:
    client, script = scripted(
        refused,
        answer(429, {"error": "session_quota", "message": "16 open"}, "0"),
        answer(503, {"error": "no_session_slot", "message": "full"}, "0"),
        answer(201, CREATED),
    )
    assert client.open_session().id == "s1"
    assert script.calls == 4
    client, script = scripted(reset, answer(201, CREATED))
    with pytest.raises(RefereeUnavailable):
        client.open_session()
    assert script.calls == 1


def test_verify_resends_only_back_pressure() -> None:
    busy = answer(503, {"error": "overloaded", "message": "queue full"}, "0")
    client, script = scripted(busy, answer(200, VERDICT))
    assert client.verify("python", "e1").score == 1.0
    assert script.calls == 2
    client, script = scripted(answer(503, {"error": "sandbox_unavailable", "message": "down"}))
    with pytest.raises(RefereeHTTPError):
        client.verify("python", "e1")
    assert script.calls == 1


def test_reads_and_deletes_are_resent_as_scoring_is() -> None:
    client, script = scripted(reset, answer(502), lambda request: httpx.Response(204))
    assert client.close_session("s1") is True
    assert script.calls == 3
    client, script = scripted(closed_early, answer(200, [{"name": "python", "future_field": 1}]))
    assert [e.name for e in client.list_environments()] == ["python"]


def test_idle_connections_are_dropped_before_the_service_closes_them() -> None:
    """A `run` sent on a pooled connection the service closes at that moment is lost and not
    resent: the clients drop idle connections well before the service's keep-alive ends."""
    from referee.client._sessions import KEEPALIVE_EXPIRY_S
    from referee.settings import ServiceSettings

    assert ServiceSettings().keep_alive_s / 2 >= KEEPALIVE_EXPIRY_S
    with Client("http://referee") as client:
        assert client._http._transport._pool._keepalive_expiry == KEEPALIVE_EXPIRY_S
