"""What every part of the contract shares: JSON objects, strict request bodies, the error body."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

JSONObject = dict[str, Any]


class StrictModel(BaseModel):
    """A request body: unknown fields are a client bug worth reporting (a typo in "refrence"
    would otherwise silently score against a null reference)."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """Every 4xx/5xx body. `detail` names the offending fields for validation errors."""

    error: str
    message: str
    detail: Any = None
