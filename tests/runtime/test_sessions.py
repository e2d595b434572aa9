"""Dashboard sessions and the failed-login throttle, on a clock the test moves."""

from __future__ import annotations

import hashlib

import pytest

from referee.runtime import DashboardLogins, SessionIdentity, client_of
from referee.runtime.sessions import DashboardSessions, LoginThrottle
from referee.settings import ServiceSettings

WHO = SessionIdentity("client", hashlib.sha256(b"key").digest())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_ends_when_idle_or_at_its_maximum_age() -> None:
    clock = Clock()
    sessions = DashboardSessions(idle_s=60, max_age_s=300, clock=clock)
    idle = sessions.open(WHO)
    busy = sessions.open(WHO)
    for _ in range(5):  # `busy` is used every 50 s: never idle for 60
        clock.now += 50
        assert sessions.find(busy) == WHO
    assert sessions.find(idle) is None  # unused for 250 s
    clock.now += 49  # 299 s after login
    assert sessions.find(busy) == WHO
    clock.now += 1  # 300 s: however busy, it ends
    assert sessions.find(busy) is None and len(sessions) == 0


def test_revoked_unknown_and_empty_ids_find_nothing() -> None:
    sessions = DashboardSessions(idle_s=60, max_age_s=300, clock=Clock())
    session_id = sessions.open(WHO)
    assert sessions.revoke(session_id) and not sessions.revoke(session_id)
    for candidate in (session_id, "", None, "x" * 43):
        assert sessions.find(candidate) is None


def test_only_digests_of_ids_are_held_and_their_number_is_bounded() -> None:
    sessions = DashboardSessions(idle_s=60, max_age_s=300, max_sessions=3, clock=Clock())
    ids = [sessions.open(WHO) for _ in range(5)]
    assert len(set(ids)) == 5 and all(len(i) >= 43 for i in ids)  # 32 random bytes each
    assert set(sessions._sessions) == {hashlib.sha256(i.encode()).digest() for i in ids[2:]}
    assert [sessions.find(i) for i in ids] == [None, None, WHO, WHO, WHO]  # the oldest went first


def test_one_key_logging_in_again_and_again_cannot_push_out_another_keys_sessions() -> None:
    other = SessionIdentity("client", hashlib.sha256(b"other key").digest())
    sessions = DashboardSessions(idle_s=60, max_age_s=300, max_sessions=10, max_per_key=3, clock=Clock())
    kept = sessions.open(other)
    ids = [sessions.open(WHO) for _ in range(50)]
    assert sessions.find(kept) == other
    assert [sessions.find(i) for i in ids[-4:]] == [None, WHO, WHO, WHO]  # its own oldest went
    assert len(sessions) == 4


def test_a_client_is_refused_after_its_failures_until_they_leave_the_window() -> None:
    clock = Clock()
    throttle = LoginThrottle(max_failures=3, window_s=60, max_failures_all=100, clock=clock)
    reached = []
    for _ in range(3):
        assert throttle.retry_after("a") is None
        reached.append(throttle.failed("a"))
        clock.now += 10
    assert reached == [False, False, True]  # the one to log: the client is refused from now on
    # Failures at 1000, 1010, 1020; now 1030: the first leaves the window at 1060.
    assert throttle.retry_after("a") == pytest.approx(30)
    assert throttle.retry_after("b") is None
    clock.now += 30
    assert throttle.retry_after("a") is None  # a sliding window: one failure has left it
    throttle.failed("a")
    assert throttle.retry_after("a") == pytest.approx(10)  # until the one at 1010 leaves


def test_past_the_all_clients_bound_only_clients_with_failures_are_refused() -> None:
    clock = Clock()
    throttle = LoginThrottle(max_failures=10, window_s=60, max_failures_all=5, clock=clock)
    for n in range(5):
        throttle.failed(f"c{n}")
        clock.now += 1
    assert throttle.retry_after("c0") == pytest.approx(55)
    assert throttle.retry_after("fresh") is None
    clock.now += 56
    assert throttle.retry_after("c0") is None


def test_the_clients_remembered_are_bounded() -> None:
    throttle = LoginThrottle(
        max_failures=1, window_s=60, max_failures_all=10**6, max_clients=4, clock=Clock()
    )
    for n in range(10):
        throttle.failed(f"c{n}")
    assert len(throttle._by_client) == 4
    assert throttle.retry_after("c9") is not None  # the latest are the ones kept


@pytest.mark.parametrize(
    ("address", "client"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        (None, "unknown"),
        ("testclient", "testclient"),
    ],
)
def test_clients_are_addresses_and_ipv6_networks(address: str | None, client: str) -> None:
    assert client_of(address) == client


def test_the_settings_shape_both() -> None:
    service = ServiceSettings(
        ui_session_idle_s=5, ui_login_max_failures=2, ui_login_max_failures_all_clients=7
    )
    logins = DashboardLogins(service)
    assert (logins.sessions.idle_s, logins.sessions.max_age_s) == (5, 12 * 3600)
    assert (logins.throttle.max_failures, logins.throttle.window_s, logins.throttle.max_failures_all) == (
        2,
        60,
        7,
    )
