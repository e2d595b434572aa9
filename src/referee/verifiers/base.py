"""What a verifier is.

A verifier turns (response, reference, options) into a `Check`. The split between `prepare`
and `check` exists because group scoring is the hot path of RL training: the reference (a
LaTeX gold, a puzzle, a test spec) is parsed once and reused for every response of the group.

Two execution models:
- `Verifier` (the default) is CPU-bound and synchronous. The service runs `check` in a pool of
  worker processes with a CPU-time limit (and a wall-clock backstop), so it may be slow or even
  hang without harming the service. It must never do I/O or keep global state other than caches.
- `AsyncVerifier` is I/O-bound (a Docker sandbox, a webhook). It runs in the service's event loop
  and receives the service's long-lived resources (e.g. the sandbox pool) explicitly.

This module never imports FastAPI: verifiers are plain Python and usable without the service.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, PydanticUserError, TypeAdapter, ValidationError

if TYPE_CHECKING:
    from referee.judges.contract import Judges
    from referee.sandbox.protocol import Job, RunResult
    from referee.sandbox.settings import SandboxSettings


@dataclass(frozen=True, slots=True)
class Check:
    """The outcome of judging one response. `score` is in the verifier's declared range."""

    score: float
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


Lane = Literal["cpu", "sandbox", "io"]


class VerifierError(Exception):
    """No verdict can be reached for reasons outside the response (status `error`, score null).

    `details` (JSON-safe) become the error verdict's details: what was asked of a backend and
    what came back (a judge's endpoint and model, the tokens of a reply it could not read), so
    an audit can count what an error cost and say why it happened without parsing the reason."""

    def __init__(self, *args: object, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(*args)
        self.details: dict[str, Any] = dict(details or {})


class CodeSandbox(Protocol):
    """What code-running verifiers need of a sandbox; `referee.sandbox.SandboxPool` is one."""

    settings: SandboxSettings

    def health(self) -> tuple[bool, str]: ...

    async def run(self, job: Job) -> RunResult: ...


@dataclass(frozen=True, slots=True)
class Resources:
    """The service's long-lived objects that async verifiers use, handed to them explicitly
    (never looked up globally, so a test can give a verifier its own)."""

    sandbox: CodeSandbox | None = None
    # The service's model endpoints (judge verifiers); None when none is configured.
    judges: Judges | None = None


def _integral(value: Any) -> Any:
    """`value` with every integral float an int: JSON Schema's `integer` takes 512.0 (a YAML
    config's or a JSON encoder's spelling of 512), which strict validation would refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_integral(item) for item in value]
    return value


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Verifier:
    """Base class of CPU-bound verifiers. Subclasses set the class attributes and `check`."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    # The type of `reference` (any pydantic-compatible type). Validated in the service before a
    # request is accepted, so a malformed reference is a 422 naming the field, not a verdict.
    reference_type: ClassVar[Any] = Any
    options_model: ClassVar[type[BaseModel]] = NoOptions
    # One worked example, published in /v1/verifiers and checked by the test suite.
    example: ClassVar[dict[str, Any]] = {}
    # Verifiers whose score is not a [0, 1] correctness (length shaping) declare their range.
    score_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    # Per-verdict budget in seconds; None means the service default. CPU time for checks in
    # worker processes (the wall clock is only a backstop, scoring/pool.py); wall-clock for
    # async verifiers, whose overrun is no verdict.
    time_budget_s: ClassVar[float | None] = None
    runs_in: ClassVar[str] = "worker"
    # The execution class whose queue this verifier's work waits in (see scoring/admission):
    # worker processes ("cpu"), code containers ("sandbox") or calls out ("io"). Each class
    # has its own admission, so a burst of one never delays the others.
    lane: ClassVar[Lane] = "cpu"

    _reference_adapter: ClassVar[TypeAdapter[Any] | None] = None

    @classmethod
    def reference_adapter(cls) -> TypeAdapter[Any]:
        # Cached per class: building a TypeAdapter costs more than validating with it.
        adapter = cls.__dict__.get("_reference_adapter")
        if adapter is None:
            try:
                # Trainers store answers as numbers (72, 0.5; numpy scalars arrive as those):
                # where a verifier reads a string, a number is its decimal text, never a 422.
                adapter = TypeAdapter(cls.reference_type, config=ConfigDict(coerce_numbers_to_str=True))
            except PydanticUserError:  # a model or dataclass type carries its own config
                adapter = TypeAdapter(cls.reference_type)
            cls._reference_adapter = adapter
        return adapter

    @classmethod
    def validate_reference(cls, reference: Any) -> Any:
        adapter = cls.reference_adapter()
        try:
            return adapter.validate_python(reference)
        except ValidationError as error:
            # verl and OpenRLHF datasets keep structured references (a puzzle's answer spec,
            # a problem's tests) as JSON text: decoded where the verifier wants the structure.
            if not (isinstance(reference, str) and reference.lstrip()[:1] in ("{", "[")):
                raise
            try:
                decoded = json.loads(reference)
            except ValueError:
                raise error from None  # not JSON after all: the validation error stands
            return adapter.validate_python(decoded)

    @classmethod
    def validate_options(cls, options: Mapping[str, Any] | None) -> BaseModel:
        # Strictly, as JSON: options are what `options_schema` says, nothing coerced into them
        # (`"strip": "yes"` or `0` would otherwise pass as a boolean, which the API's document
        # does not allow; issue 32). Values JSON cannot hold (a caller in process) read laxly.
        try:
            text = json.dumps(_integral(dict(options or {})), allow_nan=False)
        except (TypeError, ValueError):
            return cls.options_model.model_validate(dict(options or {}))
        return cls.options_model.model_validate_json(text, strict=True)

    @classmethod
    def validate_inputs(cls, reference: Any, options: Any, resources: Resources | None = None) -> None:
        """Checks that need the validated reference and options together (a code problem whose
        expected output exceeds the output cap it would run under), with the service's
        `resources` when it has them (the sandbox's settings say that cap). Raise ValueError to
        refuse the request as an invalid reference is (422). The default checks nothing."""

    @classmethod
    def qualified_name(cls) -> str:
        return f"{cls.name}@{cls.version}"

    def worker_ref(self) -> str | tuple[str, str]:
        """How a worker process finds this verifier: an installed verifier's name, or for
        verifiers built at run time (types registered through the API) a ("module:factory",
        spec_json) pair; the worker calls factory(spec_json, its verifier index) once and caches
        the instance."""
        return self.name

    def prepare(self, reference: Any, options: Any) -> Any:
        """Parse the (validated) reference once per group. The default keeps it as is."""
        return reference

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        raise NotImplementedError

    def score(self, response: str, reference: Any, options: Mapping[str, Any] | None = None) -> Check:
        """Convenience for direct, in-process use (tests, notebooks, benchmarks)."""
        opts = self.validate_options(options)
        ref = self.validate_reference(reference)
        self.validate_inputs(ref, opts)
        return self.check(response, self.prepare(ref, opts), opts)


class AsyncVerifier(Verifier):
    """Base class of I/O-bound verifiers that run in the service process."""

    runs_in: ClassVar[str] = "service"
    lane: ClassVar[Lane] = "io"
    # True when every await of check_group has its own deadline (the sandbox's per-test
    # limits): the engine then sets no overall budget, so queueing never costs a verdict.
    bounds_itself: ClassVar[bool] = False

    async def check_group(
        self,
        responses: Sequence[str],
        prepared: Any,
        options: Any,
        resources: Resources,
    ) -> Sequence[Check | VerifierError]:
        """One result per response; a VerifierError item masks that response only."""
        raise NotImplementedError

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        raise VerifierError(f"{self.name} runs in the service; use check_group")
