"""Code problems as datasets store them, turned into the `code` verifier's reference.

`canonical(row)` recognises a stored row and returns the canonical reference dict
(`{"language", "test_format", "tests", ...}`); anything it does not recognise comes back
unchanged for CodeReference to validate. Pure functions: no I/O, nothing run. A row that needs
what the verifier cannot do yet -- an interactor, file input -- raises ValueError with the
reason (a 422 through the service), never silently judged by exact comparison, which would mark
valid answers wrong.

The formats, each matched against its upstream loader:

- HumanEval / MBPP rows as published (assert tests).
- The form verl's code-RL data sources hold: `{"inputs", "outputs", "fn_name"?}`.
- TACO / APPS rows: the same object as JSON text in the row's `input_output` field.
- CodeContests (deepmind/code_contests): `public_tests` / `private_tests` / `generated_tests`.
- LiveCodeBench (livecodebench/code_generation_lite): `public_test_cases` /
  `private_test_cases` (JSON text, or base64(zlib(pickle(JSON text))): decoded by an unpickler
  that refuses every global, so the data can only ever be data) and `metadata.func_name`.
- Codeforces as open-r1/codeforces stores it: `official_tests`, `generated_checker`,
  `interaction_format`, `input_mode`.

Rows may add the verifier's own keys: `language` (default Python), `output_limit_bytes`, and for
CodeContests/LiveCodeBench `test_sets` (which stored test sets to use; all by default). The
rows' time and memory limits are not used: the verifier's limits come from the options and the
service, not from a reference.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import re
import zlib
from typing import Any

# What every Python call-based harness of these datasets runs before the program (lcb_runner's
# `import_string`, evaluation/testing_util.py; APPS/TACO's testing_util prepends much the same):
# LeetCode-style programs use `List`, `defaultdict`, `heappush`... without importing them.
CALL_PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\nfrom functools import *\n"
    "from operator import *\nfrom io import *\nfrom sys import *\nfrom json import *\n"
    "from builtins import *\nfrom typing import *\nimport string\nimport re\nimport datetime\n"
    "import collections\nimport heapq\nimport bisect\nimport copy\nimport math\nimport random\n"
    "import statistics\nimport itertools\nimport functools\nimport operator\nimport io\nimport sys\n"
    "import json\nsys.setrecursionlimit(50000)\n"
)
# LiveCodeBench's private tests, decompressed: the largest stored problems are a few MiB; the
# cap keeps a zlib bomb (a few KiB inflating to GiB) from taking the service's memory.
MAX_DECODED_BYTES = 64 << 20
REFEREE_KEYS = ("language", "output_limit_bytes")
CONTEST_SETS = ("public", "private", "generated")
LCB_SETS = ("public", "private")
_FUTURE = re.compile(r"^from\s+__future__\s+import[^\n]*$", re.MULTILINE)


def canonical(data: Any) -> Any:
    """The reference dict for a stored row of a known dataset; anything else unchanged."""
    if not isinstance(data, dict) or "tests" in data:
        return data
    if "language" not in data and {"test", "entry_point"} <= data.keys():
        return humaneval(data)
    if "language" not in data and isinstance(data.get("test_list"), list):
        return mbpp(data)
    if "official_tests" in data:  # before CodeContests: its `generated_tests` is a count
        return codeforces(data)
    if any(isinstance(data.get(f"{name}_tests"), dict) for name in CONTEST_SETS):
        return code_contests(data)
    if "public_test_cases" in data:
        return livecodebench(data)
    if "input_output" in data:
        return taco_apps(data)
    if {"inputs", "outputs"} <= data.keys():
        return dataset_form(data)
    return data


def _kept(row: dict[str, Any]) -> dict[str, Any]:
    """The verifier's own keys a row may carry; the dataset's other fields are dropped."""
    kept = {k: row[k] for k in REFEREE_KEYS if row.get(k) is not None}
    kept.setdefault("language", "python")
    return kept


def _text(value: Any) -> Any:
    """A stdio input or output as datasets store it: a string, or a list of lines."""
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value) + ("\n" if value else "")
    return value


def _json_field(row: dict[str, Any], name: str) -> Any:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        return value or None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        raise ValueError(f"{name} is not valid JSON text") from None


def humaneval(row: dict[str, Any]) -> dict[str, Any]:
    """HumanEval's `{"prompt", "test", "entry_point", ...}`: the prompt (its imports and helpers)
    is the setup; `check(candidate)` is called with the entry point."""
    return {
        "language": "python",
        "test_format": "assert",
        "tests": row["test"],
        "entry_point": row["entry_point"],
        "setup": row.get("prompt") or None,
    }


def mbpp(row: dict[str, Any]) -> dict[str, Any]:
    """MBPP's `{"test_list", "test_imports"? | "test_setup_code"?, ...}`."""
    imports = row.get("test_imports") or []
    lines = [*imports, *row["test_list"]] if isinstance(imports, list) else row["test_list"]
    return {
        "language": "python",
        "test_format": "assert",
        "tests": "\n".join(str(line) for line in lines),
        "setup": row.get("test_setup_code") or None,
    }


def dataset_form(data: dict[str, Any]) -> dict[str, Any]:
    """``{"inputs": [...], "outputs": [...], "fn_name"?}`` (APPS, TACO, CodeContests,
    PrimeIntellect as verl's data sources hold them). Without `fn_name` each pair is a stdio test
    (a list of lines is joined with newlines); with it, a call of `fn_name` with `inputs[i]` as its
    arguments, whose expected return value is `outputs[i]`, unwrapped when it is a one-element list
    (those datasets wrap every return value so). Other keys pass through to the reference."""
    inputs, outputs = data["inputs"], data["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ValueError("inputs and outputs must be lists of the same length")
    rest = {k: v for k, v in data.items() if k not in ("inputs", "outputs", "fn_name")}
    rest.setdefault("language", "python")
    fn_name = data.get("fn_name")
    if fn_name:
        tests: list[dict[str, Any]] = [
            {
                "fn_name": fn_name,
                "args": list(args) if isinstance(args, list) else [args],
                "expected": out[0] if isinstance(out, list) and len(out) == 1 else out,
            }
            for args, out in zip(inputs, outputs, strict=True)
        ]
        return {**rest, "test_format": "function", "tests": tests}
    tests = [{"input": _text(i), "output": _text(o)} for i, o in zip(inputs, outputs, strict=True)]
    return {**rest, "test_format": "stdio", "tests": tests}


def taco_apps(row: dict[str, Any]) -> dict[str, Any]:
    """A TACO or APPS row: `input_output` is the dataset form as JSON text (`question`,
    `solutions`, `starter_code`... are dropped). Call-based problems get the prelude their
    harness runs before the program (`setup`)."""
    spec = _json_field(row, "input_output")
    if not spec:
        raise ValueError("this row has no tests: its input_output is empty")
    if not isinstance(spec, dict) or not {"inputs", "outputs"} <= spec.keys():
        raise ValueError('input_output must be {"inputs": [...], "outputs": [...], "fn_name"?}')
    ref = dataset_form({"inputs": spec["inputs"], "outputs": spec["outputs"], "fn_name": spec.get("fn_name")})
    ref.pop("fn_name", None)
    if ref["test_format"] == "function":
        ref["setup"] = CALL_PRELUDE
    return {**ref, **_kept(row)}


def _chosen_sets(row: dict[str, Any], known: tuple[str, ...]) -> tuple[str, ...]:
    chosen = row.get("test_sets")
    if chosen is None:
        return known
    if not isinstance(chosen, list) or not chosen or not set(chosen) <= set(known):
        raise ValueError(f"test_sets must be a non-empty list drawn from {list(known)}")
    return tuple(name for name in known if name in chosen)


def code_contests(row: dict[str, Any]) -> dict[str, Any]:
    """deepmind/code_contests: each of `public_tests`, `private_tests`, `generated_tests` is
    `{"input": [...], "output": [...]}` (parallel lists of whole texts); `solutions`,
    `incorrect_solutions`, `time_limit`, `memory_limit_bytes` and the rest are not used."""
    tests: list[dict[str, Any]] = []
    for name in _chosen_sets(row, CONTEST_SETS):
        group = row.get(f"{name}_tests") or {}
        if not isinstance(group, dict):
            raise ValueError(f'{name}_tests must be {{"input": [...], "output": [...]}}')
        inputs, outputs = group.get("input") or [], group.get("output") or []
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
            raise ValueError(f"{name}_tests: input and output must be lists of the same length")
        tests += [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    if not tests:
        raise ValueError("this CodeContests row has no tests in the chosen test sets")
    return {**_kept(row), "test_format": "stdio", "tests": tests}


class PickleRefused(ValueError):
    """The stored pickle names a global: loading it could run code, so it is not loaded."""


class _DataOnly(pickle.Unpickler):
    """Loads plain data only. Every way a pickle runs code (REDUCE, BUILD, INST, OBJ, NEWOBJ)
    needs a callable, which only find_class can supply (persistent ids are refused by the base
    class; the extension registry is empty): refusing every global leaves str, bytes, numbers,
    lists, tuples, dicts and sets."""

    def find_class(self, module: str, name: str) -> Any:
        raise PickleRefused(
            f"the private tests' pickle names {module}.{name}: refused, loading it would run code"
        )


def decode_private_tests(text: str) -> Any:
    """LiveCodeBench's `private_test_cases`: JSON text, else base64(zlib(pickle(JSON text))) as
    lcb_runner reads it -- decompressed under MAX_DECODED_BYTES and unpickled by _DataOnly,
    never by pickle.loads."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        packed = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise ValueError("private_test_cases is neither JSON text nor base64") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, MAX_DECODED_BYTES)
    except zlib.error:
        raise ValueError("private_test_cases: not zlib data after base64") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"private_test_cases: decompresses to more than {MAX_DECODED_BYTES} bytes: refused")
    if not inflater.eof:
        raise ValueError("private_test_cases: truncated zlib data")
    try:
        value = _DataOnly(io.BytesIO(raw)).load()
    except PickleRefused:
        raise
    except Exception as exc:  # any malformed pickle: the row is refused, nothing else happens
        raise ValueError(f"private_test_cases: not a readable pickle ({type(exc).__name__})") from None
    if not isinstance(value, str):
        raise ValueError(f"private_test_cases: the pickle holds a {type(value).__name__}, not JSON text")
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        raise ValueError("private_test_cases: the unpickled text is not JSON") from None


def livecodebench(row: dict[str, Any]) -> dict[str, Any]:
    """livecodebench/code_generation_lite (lcb_runner/benchmarks/code_generation.py): test cases
    `{"input", "output", "testtype"}`. stdin tests are stdio tests; functional tests call
    `metadata.func_name` (a method of LeetCode's `class Solution`), each input line being one
    JSON argument and the output one JSON value (lcb_runner's grade_call_based), after the
    prelude lcb_runner runs before the program."""
    cases: list[Any] = []
    for name in _chosen_sets(row, LCB_SETS):
        value = row.get(f"{name}_test_cases")
        if isinstance(value, str):
            value = (
                decode_private_tests(value) if name == "private" else _json_field(row, f"{name}_test_cases")
            )
        if value in (None, ""):
            continue
        if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
            raise ValueError(f"{name}_test_cases must be a list of {{input, output, testtype}}")
        cases += value
    if not cases:
        raise ValueError("this LiveCodeBench row has no test cases in the chosen test sets")
    kinds = {c.get("testtype") for c in cases}
    if kinds == {"stdin"}:
        tests = [{"input": c.get("input", ""), "output": c.get("output")} for c in cases]
        return {**_kept(row), "test_format": "stdio", "tests": tests}
    if kinds != {"functional"}:
        raise ValueError(f"test cases must all be 'stdin' or all 'functional', not {sorted(map(str, kinds))}")
    metadata = _json_field(row, "metadata") or {}
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    if not fn_name:
        raise ValueError("functional test cases need metadata.func_name")
    try:
        calls = [
            {
                "fn_name": fn_name,
                "args": [json.loads(line) for line in str(c["input"]).split("\n")],
                "expected": json.loads(c["output"]),
            }
            for c in cases
        ]
    except (KeyError, TypeError, ValueError, RecursionError):
        raise ValueError("functional test cases: each input line and each output must be JSON") from None
    return {**_kept(row), "test_format": "function", "tests": calls, "setup": CALL_PRELUDE}


def codeforces(row: dict[str, Any]) -> dict[str, Any]:
    """open-r1/codeforces (its dataset card; open_r1/utils/competitive_programming/cf_scoring.py
    scores it): `official_tests` `[{"input", "output"}]` are stdio tests, judged by the row's
    `generated_checker` when it has one (several answers are valid: a Python checker in open-r1's
    convention, see referee.sandbox.checker_format). Refused: interactive problems
    (`interaction_format`: the rows hold no interactor program) and `input_mode` "file";
    `examples`, `time_limit`, `memory_limit` and the generated tests (stored apart,
    `generated_tests` is their count) are not used."""
    problem = row.get("id") or "this problem"
    if (row.get("interaction_format") or "").strip():
        raise ValueError(
            f"{problem} is interactive: it needs an interactor program, which open-r1's rows do not "
            "carry (give the reference one as `interactor`)"
        )
    checker = row.get("generated_checker") or ""
    if not isinstance(checker, str):
        raise ValueError("generated_checker must be the checker's Python source")
    if (row.get("input_mode") or "stdio") != "stdio":
        raise ValueError(
            f"{problem} reads and writes files (input_mode {row['input_mode']!r}): only stdio is run"
        )
    tests = row.get("official_tests") or []
    if not isinstance(tests, list) or not all(
        isinstance(t, dict) and {"input", "output"} <= t.keys() for t in tests
    ):
        raise ValueError('official_tests must be a list of {"input", "output"}')
    if not tests:
        raise ValueError(f"{problem} has no official tests")
    reference = {
        **_kept(row),
        "test_format": "stdio",
        "tests": [{"input": t["input"], "output": t["output"]} for t in tests],
    }
    if checker.strip():
        reference["checker"] = {"language": "python", "source": checker, "convention": "open-r1"}
    return reference


def with_setup(setup: str, program: str, fn_names: list[str]) -> str:
    """A Python program of function tests run after the reference's setup, as the datasets'
    call-based harnesses do (`setup + program`). `from __future__` lines move first (they must
    be); a method of a LeetCode `class Solution` named like a test's function is bound to that
    name afterwards, as lcb_runner calls `Solution().<func_name>` whenever the program defines
    the class -- so a name the prelude imported (re's `search`, itertools' `count`) never wins."""
    futures = _FUTURE.findall(program)
    body = _FUTURE.sub("", program) if futures else program
    bind = (
        "\nif isinstance(globals().get('Solution'), type):\n"
        f"    for _referee_name in {sorted(set(fn_names))!r}:\n"
        "        if callable(getattr(Solution, _referee_name, None)):\n"
        "            globals()[_referee_name] = getattr(Solution(), _referee_name)\n"
    )
    return "".join(f"{line}\n" for line in futures) + setup + "\n" + body + "\n" + bind
