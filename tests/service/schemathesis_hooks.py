"""Schemathesis checks for this service (loaded by `SCHEMATHESIS_HOOKS`), replacing two
built-in ones with stricter or more exact versions of the same promise:

- `server_errors_are_documented_503s` instead of `not_a_server_error`: a 5xx is a failure
  unless it is a 503 that the operation documents, in the error body (the service answers
  503 + Retry-After when overloaded, and OpenRLHF batches without a verdict).
- `schema_valid_requests_are_accepted` instead of `positive_data_acceptance`: a schema-valid
  request must be accepted, except a 422 that names only what the OpenAPI document says is
  checked beyond the schema (documented in every 422 response): a reference or options that
  do not fit the verifier named, a spec that is not valid for its kind, examples that do not
  reproduce, a label the verifier cannot use, and the configured size limits. Any other 422
  for a schema-valid request is a lie of the document and fails.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis import Case, CheckContext, Response

# Fields whose validity depends on what the request names (a verifier, a kind), not on the schema.
SEMANTIC_FIELDS = {"reference", "options", "response_options", "spec", "examples", "labels"}
# Configured size limits, labels a verifier cannot use, and lists that must be as long as
# another (said in the fields' descriptions; JSON Schema cannot express it).
SEMANTIC_TYPES = {"too_many", "too_long", "invalid_sample", "length_mismatch", "options_with_components"}
REGISTRATION_CODES = {
    "invalid_spec",
    "activation_failed",
    "host_not_allowed",
    "quota_exceeded",
    "probes_failed",
    "probes_invalid",
}
ACCEPTED = {401, 403, 404, 409, 429, 503}


def _body(response: Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


@schemathesis.check
def server_errors_are_documented_503s(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    status = response.status_code
    if status < 500:
        return None
    documented = str(status) in case.operation.definition.raw.get("responses", {})
    body = _body(response)
    if status == 503 and documented and isinstance(body, dict) and {"error", "message"} <= set(body):
        return None
    raise AssertionError(
        f"server error {status} (only a documented 503 may be answered): {response.text[:500]}"
    )


def _semantic_refusal(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if body.get("error") in REGISTRATION_CODES:
        return True
    detail = body.get("detail")
    if body.get("error") != "validation_error" or not isinstance(detail, list) or not detail:
        return False
    return all(
        isinstance(d, dict)
        and (d.get("type") in SEMANTIC_TYPES or SEMANTIC_FIELDS & {str(p) for p in d.get("loc", [])})
        for d in detail
    )


@schemathesis.check
def schema_valid_requests_are_accepted(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    status = response.status_code
    if status < 400 or status in ACCEPTED:
        return None
    if status == 422 and _semantic_refusal(_body(response)):
        return None
    body = _body(response)
    detail = body.get("detail") if isinstance(body, dict) else None
    summary = (
        [(d.get("loc"), d.get("type")) for d in detail if isinstance(d, dict)]
        if isinstance(detail, list)
        else body
    )
    raise AssertionError(f"schema-valid request refused with {status}: {summary}"[:2000])
