"""Cross-site form posts are refused: a state-changing request must come from a page of this
service.

A browser names the page a request comes from in `Origin` (every POST) or, failing that,
`Referer`. The request is same-origin when that scheme, host and port are the request's own:
the scheme uvicorn saw (X-Forwarded-Proto from a trusted proxy) and the `Host` header. A
request naming no page at all, or an opaque one (`Origin: null`, which any page can make its
browser send), is refused too: forms are for browsers, and scripts send their key as
`Authorization: Bearer`, which no other site can make a browser attach.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from fastapi import Request

from referee.errors import DomainError, ErrorKind

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443}


class CrossOriginRefused(DomainError):
    def __init__(self, message: str, seen: str | None) -> None:
        super().__init__(ErrorKind.forbidden, "cross_origin", message, {"origin": seen})


def _origin(url: SplitResult) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) with the scheme's default port filled in; None when unreadable."""
    try:
        port = url.port
    except ValueError:
        return None
    scheme = url.scheme.lower()
    if scheme not in DEFAULT_PORTS or not url.hostname:
        return None
    return scheme, url.hostname.lower(), port or DEFAULT_PORTS[scheme]


def require_same_origin(request: Request) -> None:
    """Raises `CrossOriginRefused` (403) for a state-changing request from another origin."""
    if request.method in SAFE_METHODS:
        return
    claimed = request.headers.get("origin")
    if claimed is None:
        claimed = request.headers.get("referer")
    if not claimed:
        raise CrossOriginRefused(
            "form posts must come from this service's pages: the request has neither an Origin "
            "nor a Referer header",
            None,
        )
    own = _origin(urlsplit(f"{request.url.scheme}://{request.url.netloc}"))
    theirs = _origin(urlsplit(claimed))
    if theirs is None or theirs != own:
        raise CrossOriginRefused(
            f"cross-origin form post refused: it comes from {claimed[:200]!r}, not from this service's pages",
            claimed[:200],
        )
