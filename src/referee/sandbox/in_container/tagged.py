"""Decoding the harness's type-tagged values (candidate-controlled data) into plain Python.

The harness encodes each value with `type()` and the built-in types' own methods, so a class
that fakes __class__ or __eq__ comes back as `Opaque` (with the truth value of a built-in
type's instance, `re.Match` say, which no program can redefine). Everything here must survive a forged
payload: any exception means "malformed", and sets/dicts are checked for hash flooding (many
distinct values sharing one hash make building a set quadratic).

Used on both sides of the boundary: in the image (script_tester.py decodes the program
process's values with it) and on the host (the `function`/`assert` judges decode
call_harness.py's results with it), so it is stdlib only like every file of this folder.
"""

from __future__ import annotations

import base64
from collections import Counter
from typing import Any

MAX_SAME_HASH = 64
HASH_CHECK_FROM = 256


class OpaqueValue(Exception):
    pass


class Opaque:
    """A value the sandbox could not express as plain data. It equals nothing. Its truth value
    is known only when the harness could take it without running any of the program's code
    (an instance of a built-in type such as `re.Match`, see call_harness.opaque_truth); otherwise
    (an instance of a class of the program) a test that depends on it fails."""

    def __init__(self, type_name: str, truth: bool | None = None) -> None:
        self.type_name = type_name
        self.truth = truth

    def __bool__(self) -> bool:
        # Also what all()/any() of a list holding it ask: never Python's default "true".
        if self.truth is None:
            raise OpaqueValue(f"{self!r} is not plain data: its truth value is not trusted")
        return self.truth

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


class Iterated:
    """A generator/iterator the harness materialised: iterable once more on the host (list(),
    sorted(), sum() ... work), equal only to itself, like the iterator it stands for."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def __iter__(self) -> Any:
        return iter(self._items)

    def __repr__(self) -> str:
        return "<iterator>"


def check_hashes(items: list[Any]) -> list[Any]:
    if len(items) >= HASH_CHECK_FROM:
        counts = Counter(hash(x) for x in items)
        if counts and max(counts.values()) > MAX_SAME_HASH:
            raise ValueError("too many values with the same hash")
    return items


def decode_tagged(obj: Any, opaque: Any = None, iterated: Any = None) -> Any:
    """Plain Python from a tagged value. `opaque(type_name, truth)` and `iterated(items)` build
    what is not plain data (default: Opaque, Iterated); the in-sandbox tester passes its own."""
    opaque = opaque or Opaque
    iterated = iterated or Iterated
    kind = obj.get("t")
    if kind == "none":
        return None
    if kind == "bool":
        return bool(obj["v"])
    if kind == "int":
        return int(obj["v"], 16)
    if kind == "float":
        return float.fromhex(obj["v"])
    if kind == "complex":
        return complex(float.fromhex(obj["re"]), float.fromhex(obj["im"]))
    if kind == "str":
        return str(obj["v"])
    if kind in ("bytes", "bytearray"):
        data = base64.b64decode(obj["v"])
        return data if kind == "bytes" else bytearray(data)
    if kind in ("list", "tuple"):
        items = [decode_tagged(x, opaque, iterated) for x in obj["v"]]
        return items if kind == "list" else tuple(items)
    if kind in ("set", "frozenset"):
        items = check_hashes([decode_tagged(x, opaque, iterated) for x in obj["v"]])
        return set(items) if kind == "set" else frozenset(items)
    if kind == "dict":
        pairs = [
            (decode_tagged(k, opaque, iterated), decode_tagged(v, opaque, iterated)) for k, v in obj["v"]
        ]
        check_hashes([k for k, _ in pairs])
        return dict(pairs)
    if kind == "range":
        return range(int(obj["start"]), int(obj["stop"]), int(obj["step"]))
    if kind == "iter":
        return iterated([decode_tagged(x, opaque, iterated) for x in obj["v"]])
    truth = obj.get("truth")
    return opaque(str(obj.get("type", "?"))[:100], truth if isinstance(truth, bool) else None)
