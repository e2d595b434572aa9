"""Stateful code sessions: the table of a service's open sessions (`CodeSessions`), each a
container of the sandbox pinned to one rollout, with its owner, lifetimes and quotas.

The routes (`/v1/sessions`) and the environments call it; the `Runtime` owns one. Other
packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.sessions.inputs import LIMIT_CAPS
from referee.sessions.records import Opener, SessionCounters, SessionHandle, SessionInfo
from referee.sessions.table import MAX_WAITING_CALLS, CodeSessions

__all__ = [
    "LIMIT_CAPS",
    "MAX_WAITING_CALLS",
    "CodeSessions",
    "Opener",
    "SessionCounters",
    "SessionHandle",
    "SessionInfo",
]
