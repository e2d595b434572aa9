"""Which traffic a verdict belongs to: training (the default), an audit, a registration.

The verdict observer (`Runtime._observe`) only sees a verdict and its verifier's name, and the
scorer is the same for all three, so the kind travels in a context variable: the audit job and
the registration route set it around their scoring (`counted_as`), and every task they start
inherits it (asyncio copies the context into new tasks). Statistics then keep the service's
own checks apart from the training figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from referee.models import Traffic

# The kind's value (a str: read on every verdict, where an enum's `.value` costs a lookup).
_current: ContextVar[str] = ContextVar("referee_stats_traffic", default=Traffic.training.value)


def current_traffic() -> str:
    """The traffic kind of the verdicts given now (a `Traffic` value)."""
    return _current.get()


@contextmanager
def counted_as(traffic: Traffic) -> Iterator[None]:
    """Verdicts given inside (and in tasks started inside) count as `traffic`."""
    token = _current.set(traffic.value)
    try:
        yield
    finally:
        _current.reset(token)
