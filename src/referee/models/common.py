"""What every part of the contract shares: JSON objects, strict request bodies, the error body."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

JSONObject = dict[str, Any]


def _json_number(value: Any) -> Any:
    """A number as JSON says it: pydantic's lax mode would read `true` as 1 and "3" as 3,
    which the document (type integer/number) does not allow and a client never means."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON number")
    return value


# Integers and numbers of request bodies: a JSON number only (an integral float such as 3.0 is
# an integer, as JSON Schema says), never a boolean or a string.
JSONInt = Annotated[int, BeforeValidator(_json_number)]
JSONFloat = Annotated[float, BeforeValidator(_json_number)]


class StrictModel(BaseModel):
    """A request body: unknown fields are a client bug worth reporting (a typo in "refrence"
    would otherwise silently score against a null reference)."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """Every 4xx/5xx body. `detail` names the offending fields for validation errors."""

    error: str
    message: str
    detail: Any = None
