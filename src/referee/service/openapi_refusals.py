"""What a request valid against the OpenAPI document may still be refused for (issue 32).

JSON Schema cannot compare two lists' lengths, run a registration's examples, or know the
schemas of a type registered after the document was built. Each operation with such checks
lists them in `x-referee-checked-beyond-schema` (and in its description, in words): the error,
the field or detail type it names, and why no schema can say it. A request valid against the
document gets those 422s and no other (tests/service/test_schemathesis.py checks each one that
answers a fuzzer's valid request against this list).
"""

from __future__ import annotations

from typing import Any

from referee.service.routes_environments import ENVIRONMENT_REFUSALS

# The extension: on an operation, the list below; on a field's schema, `true` where the named
# verifier checks that field beyond the schema the document gives it.
BEYOND_SCHEMA = "x-referee-checked-beyond-schema"
JSON = dict[str, Any]

_FIELD_REFUSAL = {
    "error": "validation_error",
    "fields": ["reference", "options", "response_options"],
    "where": "beyond_schema",
    "why": (
        "A field of a request whose verifier is a registered type (its registration's schemas "
        "decide), a list of components (the reference must fit each one's), or an installed "
        "verifier whose schema here marks the field `x-referee-checked-beyond-schema`."
    ),
}
_LIMITS_REFUSAL = {
    "error": "validation_error",
    "types": ["too_many", "too_long"],
    "why": "A group over the configured limits (REFEREE_MAX_GROUP_SIZE, _MAX_COMPONENTS, _MAX_RESPONSE_CHARS).",
}
# What a request valid against the document may still be refused for, per operation: each
# entry names the error (and the field or detail type) and says why JSON Schema cannot state it.
REFUSALS: dict[tuple[str, str], list[JSON]] = {
    ("/v1/score", "post"): [_FIELD_REFUSAL],
    ("/v1/groups", "post"): [
        _FIELD_REFUSAL,
        _LIMITS_REFUSAL,
        {
            "error": "validation_error",
            "types": ["length_mismatch"],
            "lists": ["response_options", "responses"],
            "why": "response_options must have as many entries as responses (JSON Schema cannot compare lengths).",
        },
    ],
    ("/v1/openrlhf/reward", "post"): [
        {
            "error": "validation_error",
            "types": ["length_mismatch"],
            "lists": ["prompts", "query", "labels"],
            "why": "prompts and labels must have as many entries as query (JSON Schema cannot compare lengths).",
        },
        {
            "error": "validation_error",
            "types": ["invalid_sample"],
            "fields": ["labels"],
            "why": (
                "With on_error=fail, a batch whose samples without a verdict were all sent wrong: "
                "a label is judged by the verifier `?verifier=` names or a JSON label object "
                "string names, which the body's schema cannot depend on."
            ),
        },
    ],
    ("/v1/verifiers", "post"): [
        {
            "error": "activation_failed",
            "why": "An example does not reproduce its expected_score: only running the type can tell.",
        },
        {
            "error": "validation_error",
            "fields": ["examples"],
            "why": "An example's reference or options this type cannot take (its spec and reference_schema decide).",
        },
        {"error": "probes_failed", "why": "A probe of the battery asked for earned a reward."},
        {
            "error": "probes_invalid",
            "why": "The battery's probes cannot be scored by this type (its spec decides what a reference is).",
        },
        {
            "error": "invalid_spec",
            "why": "The spec is not valid for its kind (compiled or parsed when registered).",
        },
        {"error": "host_not_allowed", "why": "A webhook's host is not in REFEREE_WEBHOOK_ALLOWED_HOSTS."},
        {
            "error": "quota_exceeded",
            "why": "The configured number of registered types or versions is reached.",
        },
    ],
}
# The environments' own, kept beside their routes.
REFUSALS.update(ENVIRONMENT_REFUSALS)


def document_refusals(paths: JSON) -> None:
    for (path, method), refusals in REFUSALS.items():
        operation = paths.get(path, {}).get(method)
        if operation is None:
            continue
        operation[BEYOND_SCHEMA] = refusals
        lines = "\n".join(
            f"- `{r['error']}`" + (f" ({', '.join(r['types'])})" if "types" in r else "") + f": {r['why']}"
            for r in refusals
        )
        operation["description"] = (
            f"{operation.get('description', '')}\n\nChecked beyond this document (a request valid "
            f"against it may still get these 422s, and no other):\n{lines}"
        ).strip()
