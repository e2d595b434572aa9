"""Code that runs inside verifier worker processes.

Each worker is handed the service's verifier index (built once by its runtime: built-ins,
configured extras, plugins) by its initializer, so tasks carry only names and JSON. Parsed
references are cached per worker: a group of N responses spread over W workers parses its
reference at most W times, and a gold that recurs across steps (datasets repeat prompts every
epoch) is not parsed again at all.

A check is limited in CPU time, not wall-clock time, so that a busy node cannot turn a right
answer into a 0 (a check that needs 0.1 s of CPU may take seconds of wall clock at load 36 on 2
cores). Two limits, armed for each task and disarmed after it:

- a CPU-time interval timer (ITIMER_PROF) whose handler raises `CpuBudgetExceeded` at the next
  bytecode: the check ends as a `timeout` verdict (score 0) and the worker lives on;
- for a check stuck in one long C call (a huge big-int power), where no Python handler can run,
  the soft RLIMIT_CPU a second or more past the budget: the kernel's SIGXCPU (left at its
  default action) kills the worker, and the pool reads that death as the same verdict.
"""

from __future__ import annotations

import contextlib
import json
import math
import resource
import signal
import time
from collections.abc import Iterator
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
    # SIGXCPU's default action dumps core: a worker killed at its CPU limit must not write a
    # core file of up to `memory_mb` (or feed the host's crash reporter) each time.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
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


class CpuBudgetExceeded(BaseException):
    """Raised inside a check by SIGPROF once the check has used its CPU time. A BaseException,
    so that a verifier's own `except Exception` (parsers catch broadly) cannot swallow it."""


# Whether a CPU budget is armed: a SIGPROF that arrives after the check (the timer fired just
# as it was being disarmed) must not raise in pebble's own code.
_cpu_armed = False


def _on_cpu_budget_spent(signum: int, frame: object) -> None:
    if _cpu_armed:
        raise CpuBudgetExceeded


@contextlib.contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    """Limit the enclosed code to `seconds` of this process's CPU time (see the module docs):
    CpuBudgetExceeded at the budget; SIGXCPU from the kernel a second or more past it if the
    code is stuck where the exception cannot be raised. Main thread only (signal handlers)."""
    global _cpu_armed
    previous_handler = signal.signal(signal.SIGPROF, _on_cpu_budget_spent)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    # RLIMIT_CPU counts the process's whole life in whole seconds: the budget goes on top of
    # what the worker has used so far, rounded up, plus a second for the timer to act first.
    kill_at = math.ceil(time.process_time() + seconds) + 1
    if hard != resource.RLIM_INFINITY:
        kill_at = min(kill_at, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (kill_at, hard))
    _cpu_armed = True
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        _cpu_armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        signal.signal(signal.SIGPROF, previous_handler)


# A task result travels back as a plain tuple: (kind, score, reason, details, elapsed_ms).
# kind is "ok" (a Check), "memory" (the check ran out of memory: score 0), "timeout" (the check
# used its CPU budget: score 0) or "error" (the verifier raised: no verdict).
WorkerOutcomeKind = Literal["ok", "memory", "timeout", "error"]
TaskResult = tuple[WorkerOutcomeKind, float | None, str | None, dict[str, Any], float]


def cpu_timeout_reason(budget_s: float) -> str:
    return f"check used its {budget_s:g} s of CPU time"


def run_check(
    ref: WorkerRef, reference_json: str, options_json: str, response: str, cpu_budget_s: float | None = None
) -> TaskResult:
    """One check; with `cpu_budget_s` (in a worker process), limited to that much CPU time.
    Without it (in-process callers: tests, benchmarks) nothing is armed."""
    if cpu_budget_s is None:
        return _check(ref, reference_json, options_json, response)
    start = time.perf_counter()
    try:
        with cpu_budget(cpu_budget_s):
            return _check(ref, reference_json, options_json, response)
    except CpuBudgetExceeded:
        return ("timeout", 0.0, cpu_timeout_reason(cpu_budget_s), {"timed_out": True}, _ms(start))


def _check(ref: WorkerRef, reference_json: str, options_json: str, response: str) -> TaskResult:
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
