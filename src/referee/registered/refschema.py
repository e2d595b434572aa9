"""A registered type's `reference_schema` (JSON Schema) as a pydantic-compatible type.

The service validates every request's reference against it before any work is scheduled,
so a reference of the wrong shape is a 422 naming the field, exactly as for built-ins. The
schema itself is published unchanged in /v1/verifiers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import jsonschema
from pydantic import AfterValidator, WithJsonSchema

T = TypeVar("T")


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


def registered_class(
    base: type[T],
    label: str,
    *,
    name: str,
    version: str,
    description: str,
    reference_type: Any,
    example: dict[str, Any] | None,
    score_range: tuple[float, float],
    **extra: Any,
) -> type[T]:
    """The verifier class of one stored version: `base` with the version's identity and
    reference type, plus kind-specific attributes. `_reference_adapter` is reset so the class
    builds its own adapter instead of inheriting the base's cached one."""
    attrs = {
        "name": name,
        "version": version,
        "description": description,
        "reference_type": reference_type,
        "example": example or {},
        "score_range": score_range,
        "_reference_adapter": None,
        **extra,
    }
    return type(f"{label}[{name}@{version}]", (base,), attrs)
