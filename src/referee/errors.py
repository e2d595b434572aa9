"""Domain errors: every refusal the service can give, said once, without HTTP.

A `DomainError` says *what kind* of problem it is (`ErrorKind`), a stable machine-readable
`code` (the `error` field of the JSON body clients see), a message and optional detail. The
packages that raise them (scoring, registered types, the installed verifiers, auth) know nothing of
status codes; `referee.service.errors` maps each kind to one, in one table.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["DomainError", "ErrorKind", "InputError"]


class ErrorKind(StrEnum):
    invalid = "invalid"  # the request is well-formed but cannot be served as sent
    not_found = "not_found"  # it names something that does not exist
    conflict = "conflict"  # it would change something that may not change
    unauthenticated = "unauthenticated"  # no valid key
    forbidden = "forbidden"  # a valid key without the right
    overloaded = "overloaded"  # come back later; nothing is wrong with the request
    throttled = "throttled"  # this caller has too much in flight; come back later
    unavailable = "unavailable"  # no answer can be given now (e.g. samples without a verdict)


class DomainError(Exception):
    """A refusal with a kind; `retry_after_s` is set where retrying is the right reaction."""

    def __init__(
        self,
        kind: ErrorKind,
        code: str,
        message: str,
        detail: Any = None,
        *,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.code, self.message, self.detail = kind, code, message, detail
        self.retry_after_s = retry_after_s


class InputError(DomainError):
    """The request is valid JSON of the right shape but cannot be scored; `errors` name the
    fields in the same `{"loc", "msg", "type"}` form as request validation errors."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
        super().__init__(ErrorKind.invalid, "validation_error", message, errors)
        self.errors = errors
