"""The service's lifetimes: `Runtime` builds, starts and stops the worker pool, the verifier
index and catalog, statistics, the sandbox pool, background audit jobs and the dashboard's
login sessions from one `Settings`.
Transport-free: the HTTP app (`referee.service`) and Ray replicas serve a runtime.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.runtime.jobs import BackgroundJobs
from referee.runtime.runtime import AUDITS_KEPT, Observer, Runtime, open_store
from referee.runtime.sessions import DashboardLogins, LoginThrottle, SessionIdentity, client_of

__all__ = [
    "AUDITS_KEPT",
    "BackgroundJobs",
    "DashboardLogins",
    "LoginThrottle",
    "Observer",
    "Runtime",
    "SessionIdentity",
    "client_of",
    "open_store",
]
