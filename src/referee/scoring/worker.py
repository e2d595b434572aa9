"""Code that runs inside verifier worker processes.

Each worker is handed the service's verifier index (built once by its runtime: built-ins,
configured extras, plugins) by its initializer, so tasks carry only names and JSON. Parsed
references are cached per worker: a group of N responses spread over W workers parses its
reference at most W times, and a gold that recurs across steps (datasets repeat prompts every
epoch) is not parsed again at all.
"""

from __future__ import annotations

import json
import resource
import time
from functools import lru_cache
from typing import Any, Literal

from referee.verifiers.base import Check, Verifier
from referee.verifiers.installed import InstalledVerifiers, import_object

_installed: InstalledVerifiers | None = None


def init_worker(installed: InstalledVerifiers, memory_mb: int) -> None:
    """pebble pool initializer: cap memory, keep the service's verifier index."""
    global _installed
    limit = memory_mb * 1024 * 1024
    # RLIMIT_AS turns a runaway allocation into MemoryError instead of the kernel's OOM killer
    # picking some process of the host.
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _installed = installed


def _get_installed() -> InstalledVerifiers:
    if _installed is None:
        raise RuntimeError(
            "no verifier index in this process: the pool's initializer (or use_installed) sets it"
        )
    return _installed


WorkerRef = str | tuple[str, str]


@lru_cache(maxsize=256)
def _from_factory(factory_path: str, spec_json: str) -> Verifier:
    """A verifier built at run time (a registered type): its factory rebuilds it from its spec
    against this worker's verifier index."""
    factory = import_object(factory_path)
    verifier: Verifier = factory(spec_json, _get_installed())
    return verifier


def resolve(ref: WorkerRef) -> Verifier:
    if isinstance(ref, str):
        return _get_installed().get(ref)
    return _from_factory(*ref)


@lru_cache(maxsize=2048)
def _prepared(ref: WorkerRef, reference_json: str, options_json: str) -> tuple[Verifier, Any, Any]:
    verifier = resolve(ref)
    options = verifier.validate_options(json.loads(options_json))
    reference = verifier.validate_reference(json.loads(reference_json))
    return verifier, verifier.prepare(reference, options), options


def use_installed(installed: InstalledVerifiers | None) -> InstalledVerifiers | None:
    """Resolve names in this process against `installed` (None: none), forget every verifier
    and reference prepared against the previous index, and return that index.

    What the pool initializer does inside a worker, for code that calls `run_check` in process
    (the engine's tests against a fake pool, benchmarks) so that it need not patch this
    module's private state; restore with `use_installed(previous)`."""
    global _installed
    previous, _installed = _installed, installed
    _prepared.cache_clear()
    _from_factory.cache_clear()
    return previous


# A task result travels back as a plain tuple: (kind, score, reason, details, elapsed_ms).
# kind is "ok" (a Check), "memory" (the check ran out of memory: score 0) or "error" (the
# verifier raised: no verdict).
WorkerOutcomeKind = Literal["ok", "memory", "error"]
TaskResult = tuple[WorkerOutcomeKind, float | None, str | None, dict[str, Any], float]


def run_check(ref: WorkerRef, reference_json: str, options_json: str, response: str) -> TaskResult:
    start = time.perf_counter()
    try:
        verifier, prepared, options = _prepared(ref, reference_json, options_json)
    except MemoryError:
        # Not the response's fault: the reference (or the cache) is too big. No verdict.
        _prepared.cache_clear()
        return ("error", None, "preparing the reference exceeded the worker's memory", {}, _ms(start))
    except Exception as exc:  # a verifier bug must become a masked verdict, not a dead worker
        return ("error", None, f"verifier raised {type(exc).__name__}: {exc}"[:500], {}, _ms(start))
    try:
        check: Check = verifier.check(response, prepared, options)
        return ("ok", float(check.score), check.reason, dict(check.details), _ms(start))
    except MemoryError:
        _prepared.cache_clear()
        return ("memory", 0.0, "checker exceeded its memory budget", {}, _ms(start))
    except Exception as exc:
        return ("error", None, f"verifier raised {type(exc).__name__}: {exc}"[:500], {}, _ms(start))


def ping() -> int:
    """Warm-up / health probe task."""
    return len(_get_installed())


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
