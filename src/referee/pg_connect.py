"""How Referee connects to PostgreSQL (the registry's store, the statistics shared by
replicas): what a DSN may be told about in a log, and the options that make a silent peer fail
fast instead of hanging for the kernel's quarter of an hour. psycopg itself stays an optional
import of the modules that use it; this module only shapes their arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# TCP keepalives on an idle connection: a dead peer is noticed in ~25 s.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}


def conninfo(url: str, conninfo_to_dict: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """A DSN's parameters, the password left out (this is what the log may say)."""
    try:
        parts = conninfo_to_dict(url)
    except Exception:  # not parseable: then connecting fails too, and says so
        return {}
    return {k: v for k, v in parts.items() if k != "password"}


def connect_options(given: dict[str, Any], timeout_s: int) -> dict[str, Any]:
    """Connection options for a peer that may stop answering (its host gone, a partition): a
    statement fails within `timeout_s` (unacknowledged data) or ~25 s (keepalives on an idle
    connection). The URL's own settings (`given`) win."""
    options = {"connect_timeout": timeout_s, "tcp_user_timeout": timeout_s * 1000, **KEEPALIVES}
    return {key: value for key, value in options.items() if key not in given}
