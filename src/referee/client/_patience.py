"""How the clients outlast a service that is restarting, unreachable or busy.

A trainer scores thousands of batches over days; the service may restart under it (a deploy,
a crash, a node move). Scoring requests have no side effect, so a request that could not be
answered is sent again, with exponential backoff and jitter, for up to `patience_s` in total
per request, and only then fails. What is waited out:

- the service cannot be reached or dropped the connection: refused, reset, closed before any
  answer (`RESEND_EXCEPTIONS`);
- a gateway or the service says it cannot answer for now: 502, 503 (any), 504, and 429;
- a 503 `overloaded` or a 429 with `Retry-After` (the service asking for patience) is retried
  after that time (never sooner), whatever `retries` says.

Not waited out: a read timeout. The service received the request and is still working on it
(a request is not cancelled when its client leaves), so sending it again would double the
work of a service that is already slow, and the copy would most likely time out as well; the
caller's `timeout` is the bound it chose for one answer. A service killed while it holds a
request closes the connection (a reset or an early close), which *is* waited out.

One outage is logged once per client, however many requests wait it out together: a warning
when it starts, an info line when the service answers again. Back-pressure (a 503 `overloaded`
or a 429 with `Retry-After`) is no outage: a loaded service says so many times a minute, and a
warning each time would bury the real ones; it is logged at debug level (stdlib `logging`, logger
`referee.client`, so a trainer's own logging configuration applies).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from dataclasses import dataclass

import httpx

from referee.client._common import RefereeUnavailable, error_code, raise_for_error

log = logging.getLogger("referee.client")

# A day-long run should live through a restart, a redeploy or a node move; an overloaded lane
# also asks for patience. One bound for all of them (the former `overload_patience_s`).
DEFAULT_PATIENCE_S = 900.0
MAX_RETRY_AFTER_S = 60.0

# Transport failures where the service gave no answer: the connection was refused, reset, or
# closed before a response; the request could not be (completely) sent; our own pool was busy.
RESEND_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.NetworkError,  # ConnectError, ReadError, WriteError, CloseError
    httpx.RemoteProtocolError,  # "Server disconnected without sending a response"
    httpx.ConnectTimeout,
    httpx.WriteTimeout,
    httpx.PoolTimeout,
)
RESEND_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """`patience_s`: how long one request may wait for the service in total before it fails.
    `retries`: at most this many resends after a failure of the service (None: patience alone
    decides; a command line tool sets a small number to fail fast). A 503 `overloaded` or a
    429 with `Retry-After` is governed by patience only: the service asked to come back."""

    patience_s: float = DEFAULT_PATIENCE_S
    retries: int | None = None
    backoff_s: float = 0.25
    max_backoff_s: float = 8.0

    @classmethod
    def of(
        cls,
        patience_s: float | None = None,
        retries: int | None = None,
        backoff_s: float = 0.25,
        overload_patience_s: float | None = None,
    ) -> RetryPolicy:
        """The clients' keywords; `overload_patience_s` is the former name of `patience_s`."""
        chosen = patience_s if patience_s is not None else overload_patience_s
        patience = DEFAULT_PATIENCE_S if chosen is None else float(chosen)
        if patience < 0 or math.isnan(patience):
            raise ValueError(f"patience_s must be >= 0, not {patience}")
        if retries is not None and retries < 0:
            raise ValueError(f"retries must be >= 0 or None, not {retries}")
        return cls(patience_s=patience, retries=retries, backoff_s=backoff_s)

    def backoff(self, resends: int) -> float:
        # Exponential, with jitter over the upper half: many trainer ranks that lost the service
        # together must not come back in lockstep, and none should hammer it at once.
        cap = min(self.max_backoff_s, self.backoff_s * 2 ** min(resends, 30))
        return random.uniform(cap / 2, cap)


class Outage:
    """A client's view of the service's availability, shared by its concurrent requests
    (threads of the sync client, tasks of the async one), so that one outage is logged once."""

    def __init__(self, url: str, patience_s: float) -> None:
        self.url = url
        self.patience_s = patience_s
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._back_at = -math.inf

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, reason: str, sent_at: float) -> None:
        """A request sent at `sent_at` (monotonic) got no answer, for `reason`."""
        with self._lock:
            # A request sent before the service came back belongs to the outage already reported.
            if self._down_since is not None or sent_at < self._back_at:
                return
            self._down_since = time.monotonic()
        log.warning(
            "Referee service at %s unavailable (%s): waiting up to %.0f s (patience_s) for it",
            self.url,
            reason,
            self.patience_s,
        )

    def answered(self) -> None:
        if self._down_since is None:  # the usual case, without the lock
            return
        with self._lock:
            since, self._down_since = self._down_since, None
            self._back_at = time.monotonic()
        if since is not None:
            log.info("Referee service at %s answers again after %.1f s", self.url, self._back_at - since)


class Attempts:
    """One request's resends: how long to wait before the next, or the error that ends it."""

    def __init__(self, policy: RetryPolicy, outage: Outage, what: str) -> None:
        self.policy = policy
        self.outage = outage
        self.what = what
        self.resends = 0
        self._first_failure: float | None = None

    def _waited(self) -> float:
        now = time.monotonic()
        if self._first_failure is None:
            self._first_failure = now
        return now - self._first_failure

    def _capped(self) -> bool:
        return self.policy.retries is not None and self.resends >= self.policy.retries

    def _give_up_note(self, waited: float) -> str:
        if self._capped():
            return f"gave up after {self.resends} resend(s) (retries={self.policy.retries}), {waited:.1f} s"
        return f"gave up after waiting {waited:.0f} s (patience_s={self.policy.patience_s:g})"

    def after_error(self, exc: BaseException, sent_at: float) -> float:
        """Seconds to wait before sending again after `exc` (one of `RESEND_EXCEPTIONS`), or
        raise `RefereeUnavailable` once patience (or `retries`) is spent."""
        waited = self._waited()
        self.outage.failed(f"{type(exc).__name__}: {exc}", sent_at)
        remaining = self.policy.patience_s - waited
        if self._capped() or remaining <= 0:
            raise RefereeUnavailable(
                f"{self.what}: the service at {self.outage.url} did not answer; "
                f"{self._give_up_note(waited)}; last error: {exc!r}"
            ) from exc
        self.resends += 1
        return min(self.policy.backoff(self.resends - 1), remaining)

    def after_response(self, response: httpx.Response, sent_at: float) -> float | None:
        """Seconds to wait before sending again, or None when `response` is the answer to return
        (or to raise as `RefereeHTTPError`, which names the wait when patience ran out)."""
        if response.status_code not in RESEND_STATUSES:
            self.outage.answered()
            return None
        code = error_code(response)
        waited = self._waited()
        remaining = self.policy.patience_s - waited
        told = _retry_after(response)
        asked_for_patience = told is not None and (response.status_code == 429 or code == "overloaded")
        if asked_for_patience:
            # Back-pressure, the service's everyday answer under load: not an outage to warn of.
            log.debug("Referee service at %s asks to retry in %.1f s (%s)", self.outage.url, told, code)
        else:
            self.outage.failed(f"{response.status_code} {code or response.reason_phrase}", sent_at)
        if told is not None:
            # Never sooner than told; a little later, so that many clients told alike spread out.
            wait = max(told, 0.05) * random.uniform(1.0, 1.25)
            if wait > remaining or (self._capped() and not asked_for_patience):
                raise_for_error(response, note=self._give_up_note(waited))
        else:
            if remaining <= 0 or self._capped():
                raise_for_error(response, note=self._give_up_note(waited))
            wait = min(self.policy.backoff(self.resends), remaining)
        self.resends += 1
        return wait


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(raw)))
    except ValueError:  # an HTTP date: not sent by Referee, read as "soon"
        return 1.0
