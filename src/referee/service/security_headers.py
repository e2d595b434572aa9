"""The security headers of everything the service renders for a browser: the dashboard's pages
(`ui.py`) and the audit reports, served by the dashboard and by `GET /v1/audits/{id}`.

One module both import at the top: the dashboard's modules import `routes_audits`, so the
headers cannot live in `ui.py` without a circular import.
"""

from __future__ import annotations

# Scripts only from the service's own files; styles likewise; no frames, no plugins.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
# An audit's HTML report: its own inline style and data: plots, nothing else, in a sandbox.
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # Not "no-referrer": under it a browser sends `Origin: null` with the pages' own forms,
    # which the same-origin check must refuse (any site can make its forms send it).
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# An audit report (HTML or Markdown): the dashboard's headers under the report's policy.
REPORT_HEADERS = {**HEADERS, "Content-Security-Policy": REPORT_CSP}
