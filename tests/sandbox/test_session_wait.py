"""The host's wait for a session call covers the supervisor's longest honest run of it."""

from __future__ import annotations

from referee.sandbox import call_wait_s
from referee.sandbox.in_container import session_host
from referee.sandbox.in_container.supervisor import BACKSTOP_FACTOR, REAP_GRACE_S
from referee.sandbox.session import CALL_BACKSTOP_FACTOR


def test_the_host_waits_past_the_backstop_a_kill_and_a_fresh_kernel() -> None:
    # A call of t seconds may run to the supervisor's backstop (the node's load given back);
    # the call after a lost kernel first reaps everything and starts a new kernel.
    assert CALL_BACKSTOP_FACTOR == BACKSTOP_FACTOR
    for time_s in (0.5, 10.0, 60.0):
        longest = BACKSTOP_FACTOR * time_s + REAP_GRACE_S + session_host.KERNEL_START_TIMEOUT_S
        assert call_wait_s(time_s) > longest
