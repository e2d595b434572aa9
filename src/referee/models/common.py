"""What every part of the contract shares: JSON objects, strict request bodies, the error body."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

JSONObject = dict[str, Any]


def _json_number(cls: type, value: Any) -> Any:
    """A number as JSON says it: pydantic's lax mode would read `true` as 1 and "3" as 3,
    which the document (type integer/number) does not allow and a client never means."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON number")
    return value


def json_numbers(*fields: str) -> Any:
    """A class attribute that makes the named int/float fields of a request body take JSON
    numbers only (an integral float such as 3.0 is still an integer, as JSON Schema says). A
    validator of the model, not of the type: an annotated type would lose its bounds
    (`minimum`, `exclusiveMinimum`) from the OpenAPI document once it is made optional."""
    return field_validator(*fields, mode="before")(_json_number)


class StrictModel(BaseModel):
    """A request body: unknown fields are a client bug worth reporting (a typo in "refrence"
    would otherwise silently score against a null reference)."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """Every 4xx/5xx body. `detail` names the offending fields for validation errors."""

    error: str
    message: str
    detail: Any = None
