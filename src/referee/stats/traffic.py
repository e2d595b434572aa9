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

_current: ContextVar[Traffic] = ContextVar("referee_stats_traffic", default=Traffic.training)


def current_traffic() -> Traffic:
    return _current.get()


@contextmanager
def counted_as(traffic: Traffic) -> Iterator[None]:
    """Verdicts given inside (and in tasks started inside) count as `traffic`."""
    token = _current.set(traffic)
    try:
        yield
    finally:
        _current.reset(token)
