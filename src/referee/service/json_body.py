"""Strict JSON request bodies: what the service accepts as JSON, said once for every route.

Python's `json` module accepts more than JSON: the constants `NaN`, `Infinity` and
`-Infinity`, numbers that overflow to infinity (`1e400`), integers of any length, lone UTF-16
surrogates (`"\\ud800"`, which no UTF-8 text can carry and which the service could not send
back), nesting as deep as the interpreter's recursion limit, and an object that names one key
twice (`{"reference": "1", "reference": "2"}`: the last one would win without a word, so
what a trainer meant is not what is judged). Such a body is a client
mistake: each is refused here as a 422 `validation_error` whose `detail` says what is wrong
(`type: json_invalid`), like any other malformed JSON, and the same for a body that is not
UTF-8. A key named twice is located: its error's `loc` is the path of the object that names
it, as for any field (`DuplicateKey`, which the error handler reads). So no verifier ever
sees a non-finite number or a string it cannot encode.

Routes opt in through `StrictJSONRoute` (`APIRouter(route_class=StrictJSONRoute)`): FastAPI
turns the `json.JSONDecodeError` raised here into its request-validation error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

# Containers (objects and arrays) nested deeper than this are refused: every reference,
# options object and registered spec in use is a few levels deep.
MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Refused(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number; numbers must be finite")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"{text[:40]} is out of the range of a finite double")
    return value


class DuplicateKey(json.JSONDecodeError):
    """An object named `key` twice; `path` is where that object is in the body (the error's
    `loc`, as for any other field: the service's error handler puts it there)."""

    def __init__(self, key: str, path: tuple[str | int, ...]) -> None:
        where = f" (at {'.'.join(map(str, path))})" if path else ""
        super().__init__(f"the key {key[:80]!r} appears twice in one object{where}", "", 0)
        self.key, self.path = key, path


class _Twice(dict[str, Any]):
    """An object that named `key` twice: kept (last value wins) until the whole body is parsed,
    since `object_pairs_hook` does not know where in the body the object is."""

    key = ""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    twice = _Twice(value)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            twice.key = key
            break
        seen.add(key)
    return twice


def _path_to_twice(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Where the first object that names a key twice is, and the key (only on that error)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Twice):
            return path, item.key
        if isinstance(item, dict):
            stack.extend((child, (*path, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(item))))
    return None


def _check_values(value: Any, max_depth: int) -> bool:
    """Iteratively (a deep value must not exhaust the stack here either): depth and strings.
    Whether an object names a key twice."""
    twice = False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise _Refused("a string holds a lone UTF-16 surrogate (not Unicode text)")
        elif isinstance(item, dict | list):
            if depth > max_depth:
                raise _Refused(f"nested deeper than {max_depth} levels")
            twice = twice or isinstance(item, _Twice)
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return twice


def parse_json(body: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `body`, or `json.JSONDecodeError` saying why it is not one we accept."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(f"the body is not UTF-8 (byte {exc.start})", "", 0) from None
    try:
        value = json.loads(
            text, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
        )
        twice = _path_to_twice(value) if _check_values(value, max_depth) else None
        if twice is not None:
            raise DuplicateKey(twice[1], twice[0])
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", "", 0) from None
    except ValueError as exc:  # _Refused, or an integer beyond Python's digit limit
        raise json.JSONDecodeError(str(exc)[:200], "", 0) from None
    return value


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An `APIRoute` whose JSON body is parsed by `parse_json`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict
