"""A registered type's `reference_schema` (JSON Schema) as a pydantic-compatible type.

The service validates every request's reference against it before any work is scheduled,
so a reference of the wrong shape is a 422 naming the field, exactly as for built-ins. The
schema itself is published unchanged in /v1/verifiers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import jsonschema
from pydantic import AfterValidator, WithJsonSchema


def check_schema(schema: dict[str, Any]) -> None:
    """Raise ValueError when `schema` is not a valid JSON Schema."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"reference_schema is not a valid JSON Schema: {exc.message[:300]}") from None


def reference_type_for(schema: dict[str, Any] | None, extra: Callable[[Any], Any] | None = None) -> Any:
    validator = None
    if schema is not None:
        check_schema(schema)
        validator = jsonschema.validators.validator_for(schema)(schema)

    def reference_schema(value: Any) -> Any:
        if validator is not None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                where = "/".join(map(str, error.absolute_path)) or "(root)"
                raise ValueError(f"does not match reference_schema at {where}: {error.message[:300]}")
        return extra(value) if extra is not None else value

    return Annotated[Any, AfterValidator(reference_schema), WithJsonSchema(schema or {})]
