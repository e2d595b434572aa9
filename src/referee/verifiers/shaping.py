"""Length shaping rewards, meant as weighted components of a group's reward.

Both score outside [0, 1] and declare their range. The service has no tokenizer, so a length
in tokens must be supplied by the caller (`length`, alias `num_tokens`); with `unit="chars"`
and no explicit length, the response's character count is used.

- `length.overlong`: DAPO's soft overlong punishment (Yu et al. 2025, eq. 13):
  0 while L ≤ L_max − L_cache, then (L_max − L_cache − L) / L_cache down to −1 at L_max, and −1
  beyond. Range [−1, 0].
- `length.cosine`: cosine length scaling (Yeo et al. 2025, "Demystifying Long Chain-of-Thought
  Reasoning in LLMs"), parametrised as open-r1's `cosine_scaled_reward`:
  r = lo + ½·(hi − lo)·(1 + cos(π·min(L / L_max, 1))), where a correct answer goes from
  `max_value_correct` at L = 0 down to `min_value_correct` at L_max (shorter is better) and a
  wrong one from `min_value_wrong` at L = 0 up to `max_value_wrong` at L_max (longer is less
  bad). Unlike open-r1, L is clamped at L_max (past it the cosine would turn back); add
  `length.overlong` as a separate component to punish truncation. Range [−1, 1] (every value
  option is constrained to that interval).
  Correctness comes from the `correct` option, or from a named built-in CPU verifier
  (`verifier`, `verifier_options`) applied to this request's reference: correct when its score
  is ≥ `threshold` (default 1.0). The inner verifier is looked up in the index `length.cosine`
  belongs to (`use_index`), or among the built-ins when it is used on its own.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from referee.verifiers.base import Check, Verifier, VerifierError
from referee.verifiers.installed import builtin_index


class _LengthOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    max_length: int = Field(gt=0, description="L_max, in `unit`s")
    unit: Literal["chars", "tokens"] = "chars"
    length: int | None = Field(
        default=None,
        ge=0,
        validation_alias=AliasChoices("length", "num_tokens"),
        description="The completion's length in `unit`s (required for tokens; alias num_tokens)",
    )

    @model_validator(mode="after")
    def _token_length_given(self) -> _LengthOptions:
        if self.unit == "tokens" and self.length is None:
            raise ValueError("unit 'tokens' needs the completion length in `length` (or `num_tokens`)")
        return self

    def measure(self, response: str) -> int:
        return self.length if self.length is not None else len(response)


class OverlongOptions(_LengthOptions):
    cache_length: int = Field(ge=0, description="L_cache: the soft-penalty interval before L_max")

    @model_validator(mode="after")
    def _cache_fits(self) -> OverlongOptions:
        if self.cache_length > self.max_length:
            raise ValueError("cache_length must not exceed max_length")
        return self


def overlong_penalty(length: int, max_length: int, cache_length: int) -> float:
    soft_start = max_length - cache_length
    if length <= soft_start:
        return 0.0
    if length > max_length:
        return -1.0
    return (soft_start - length) / cache_length  # cache_length > 0 here, since soft_start < length ≤ max


class Overlong(Verifier):
    name = "length.overlong"
    description = (
        "DAPO overlong penalty: 0 up to max_length − cache_length, linear down to −1 at "
        "max_length, −1 beyond. Length in chars of the response, or given in options."
    )
    options_model: ClassVar[type[BaseModel]] = OverlongOptions
    score_range: ClassVar[tuple[float, float]] = (-1.0, 0.0)
    example: ClassVar[dict[str, Any]] = {
        "response": "x" * 900,
        "reference": None,
        "options": {"max_length": 1000, "cache_length": 200},
        "expected_score": -0.5,
    }

    def check(self, response: str, prepared: Any, options: OverlongOptions) -> Check:
        if not isinstance(response, str):
            return Check(0.0, reason="response is not a string")
        length = options.measure(response)
        score = overlong_penalty(length, options.max_length, options.cache_length)
        return Check(score, reason=f"length {length} {options.unit}", details={"length": length})


class CosineOptions(_LengthOptions):
    correct: bool | None = Field(default=None, description="Correctness, if judged elsewhere")
    verifier: str | None = Field(default=None, description="Built-in CPU verifier that judges correctness")
    verifier_options: dict[str, Any] = Field(default_factory=dict)
    threshold: float = Field(default=1.0, description="Inner score counted as correct")
    min_value_correct: float = Field(default=0.5, ge=-1.0, le=1.0)
    max_value_correct: float = Field(default=1.0, ge=-1.0, le=1.0)
    min_value_wrong: float = Field(default=-1.0, ge=-1.0, le=1.0)
    max_value_wrong: float = Field(default=-0.5, ge=-1.0, le=1.0)

    @model_validator(mode="after")
    def _one_source(self) -> CosineOptions:
        if (self.correct is None) == (self.verifier is None):
            raise ValueError("give exactly one of `correct` and `verifier`")
        return self


def cosine_reward(length: int, max_length: int, correct: bool, options: CosineOptions) -> float:
    progress = min(length / max_length, 1.0)
    if correct:
        at_zero, at_max = options.max_value_correct, options.min_value_correct
    else:
        at_zero, at_max = options.min_value_wrong, options.max_value_wrong
    return at_max + 0.5 * (at_zero - at_max) * (1.0 + math.cos(progress * math.pi))


class _Index(Protocol):
    """What `length.cosine` needs of a verifier index (`InstalledVerifiers` is one)."""

    def __contains__(self, name: object) -> bool: ...

    def get(self, name: str) -> Verifier: ...

    def kind(self, name: str) -> str: ...


class Cosine(Verifier):
    name = "length.cosine"
    description = (
        "Cosine length scaling (Demystifying Long CoT): correct answers earn more when shorter, "
        "wrong ones are punished less when longer. Correctness from options.correct or from the "
        "named inner verifier on this reference."
    )
    options_model: ClassVar[type[BaseModel]] = CosineOptions
    score_range: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    example: ClassVar[dict[str, Any]] = {
        "response": "x" * 500,
        "reference": None,
        "options": {"max_length": 1000, "correct": True},
        "expected_score": 0.75,
    }

    _index: _Index | None = None

    def use_index(self, index: _Index) -> None:
        """Look inner verifiers up in `index`, the one this verifier is registered in."""
        self._index = index

    def prepare(self, reference: Any, options: CosineOptions) -> Any:
        if options.verifier is None:
            return None
        index = self._index if self._index is not None else builtin_index()
        # Built-ins only (not extras or plugins): the audited verifiers.
        if options.verifier not in index or index.kind(options.verifier) != "builtin":
            raise VerifierError(f"unknown inner verifier {options.verifier!r}")
        inner = index.get(options.verifier)
        if inner.runs_in != "worker" or isinstance(inner, Cosine):
            raise VerifierError(f"{options.verifier} cannot be used as the inner verifier")
        try:
            inner_options = inner.validate_options(options.verifier_options)
            prepared = inner.prepare(inner.validate_reference(reference), inner_options)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise VerifierError(f"reference or options invalid for {inner.name}: {exc}") from exc
        return inner, prepared, inner_options

    def check(self, response: str, prepared: Any, options: CosineOptions) -> Check:
        if not isinstance(response, str):
            return Check(0.0, reason="response is not a string")
        details: dict[str, Any] = {}
        if prepared is None:
            correct = bool(options.correct)
        else:
            inner, inner_prepared, inner_options = prepared
            verdict = inner.check(response, inner_prepared, inner_options)
            correct = verdict.score >= options.threshold
            details["inner"] = {
                "verifier": inner.qualified_name(),
                "score": verdict.score,
                "reason": verdict.reason,
            }
        length = options.measure(response)
        score = cosine_reward(length, options.max_length, correct, options)
        details["length"] = length
        return Check(
            score,
            reason=f"{'correct' if correct else 'wrong'}, length {length} {options.unit}",
            details=details,
        )


VERIFIERS: list[type[Verifier]] = [Overlong, Cosine]
