"""Comparators of declarative types that are not built-in verifiers: json_schema, set, multiset.

A comparator judges an already-extracted answer (a string, or a JSON value from a json_path
extractor) against the rendered reference. All work is bounded: JSON answers are capped in
size and parsed with the standard library (no evaluation), item lists are capped in length.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from typing import Any, ClassVar, Literal, Protocol

import jsonschema
from pydantic import BaseModel, ConfigDict

from referee.verifiers.base import Check

MAX_JSON_CHARS = 1_000_000
MAX_ITEMS = 10_000


class Comparator(Protocol):
    def validate_reference(self, reference: Any) -> Any: ...
    def prepare(self, reference: Any) -> Any: ...
    def compare(self, value: Any, prepared: Any) -> Check: ...


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _as_json(value: Any) -> tuple[bool, Any]:
    if not isinstance(value, str):
        return True, value
    if len(value) > MAX_JSON_CHARS:
        return False, None
    try:
        return True, json.loads(value)
    except (ValueError, RecursionError):
        return False, None


class JsonSchemaComparator:
    """Score 1 when the answer (JSON text or value) validates against the reference schema.

    Schema `pattern`s use Python's `re`: the worker's hard time limit bounds a pathological
    one. Remote `$ref`s are never fetched (the referencing library has no retriever here)."""

    class Options(_Options):
        pass

    def __init__(self, options: dict[str, Any], *, multiset: bool = False) -> None:
        self.Options.model_validate(options)

    def validate_reference(self, reference: Any) -> Any:
        if not isinstance(reference, dict | bool):
            raise ValueError("a json_schema reference is a JSON Schema object")
        try:
            jsonschema.validators.validator_for(reference).check_schema(reference)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message[:300]}") from None
        return reference

    def prepare(self, reference: Any) -> Any:
        self.validate_reference(reference)
        return jsonschema.validators.validator_for(reference)(reference)

    def compare(self, value: Any, prepared: Any) -> Check:
        ok, document = _as_json(value)
        if not ok:
            return Check(0.0, reason="answer is not valid JSON")
        try:
            error = jsonschema.exceptions.best_match(prepared.iter_errors(document))
        except jsonschema.exceptions.JsonSchemaException as exc:
            raise ValueError(f"schema could not be applied: {exc}") from None
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "(root)"
            return Check(0.0, reason=f"schema violation at {where}: {error.message[:200]}")
        return Check(1.0)


class SetOptions(_Options):
    separator: str = ","
    case_sensitive: bool = False
    # equal: 1 only for the same items; f1: partial credit (harmonic mean of precision/recall).
    score: Literal["equal", "f1"] = "equal"


class SetComparator:
    """Set (or multiset) equality of the answer's items with the reference's items.

    Items come from a JSON list, or from a string split on `separator` (a string that is a
    JSON list is parsed as one). Items are NFC-normalised, whitespace-collapsed and, unless
    case_sensitive, case-folded; non-string items compare by their JSON text."""

    Options: ClassVar[type[SetOptions]] = SetOptions

    def __init__(self, options: dict[str, Any], *, multiset: bool = False) -> None:
        self.options = SetOptions.model_validate(options)
        self.multiset = multiset

    def _items(self, value: Any) -> list[str] | None:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                ok, parsed = _as_json(text)
                if ok and isinstance(parsed, list):
                    value = parsed
            if isinstance(value, str):
                if len(value) > MAX_JSON_CHARS:
                    return None
                value = value.split(self.options.separator) if self.options.separator else [value]
        if not isinstance(value, list) or len(value) > MAX_ITEMS:
            return None
        items = []
        for item in value:
            text = item if isinstance(item, str) else json.dumps(item, sort_keys=True, ensure_ascii=False)
            text = " ".join(unicodedata.normalize("NFC", text).split())
            if not self.options.case_sensitive:
                text = text.casefold()
            if text:
                items.append(text)
        return items

    def validate_reference(self, reference: Any) -> Any:
        if self._items(reference) is None:
            raise ValueError("a set reference is a list or a separated string")
        return reference

    def prepare(self, reference: Any) -> Counter[str]:
        items = self._items(reference) or []
        return Counter(items) if self.multiset else Counter(set(items))

    def compare(self, value: Any, prepared: Counter[str]) -> Check:
        items = self._items(value)
        if items is None:
            return Check(0.0, reason=f"answer is not a list (or has more than {MAX_ITEMS} items)")
        got = Counter(items) if self.multiset else Counter(set(items))
        common = sum((got & prepared).values())
        details = {
            "missing": sorted((prepared - got).elements())[:20],
            "extra": sorted((got - prepared).elements())[:20],
        }
        if got == prepared:
            return Check(1.0, details=details)
        reason = "items differ from the reference"
        if self.options.score == "equal" or common == 0:
            return Check(0.0, reason=reason, details=details)
        precision, recall = common / sum(got.values()), common / sum(prepared.values())
        return Check(2 * precision * recall / (precision + recall), reason=reason, details=details)


COMPARATORS: dict[str, Any] = {
    "json_schema": JsonSchemaComparator,
    "set": SetComparator,
    "multiset": SetComparator,
}
