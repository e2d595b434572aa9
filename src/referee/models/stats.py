"""Statistics: `GET /v1/stats/prompts` and `GET /v1/stats/verifiers`."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class PromptFilter(StrEnum):
    """Which prompts `GET /v1/stats/prompts` lists; "in a row" counts the last `last` visits."""

    all = "all"
    always_solved = "always_solved"  # every sample passed, `last` visits in a row
    never_solved = "never_solved"  # no sample passed, `last` visits in a row
    zero_variance = "zero_variance"  # every sample scored the same, `last` visits in a row


class PromptStat(BaseModel):
    """One prompt's record. A visit is one scored group; a sample passes when its reward is at
    least the service's pass threshold (`REFEREE_STATS_PASS_THRESHOLD`)."""

    prompt_id: str
    visits: int = Field(description="Groups scored for this prompt.")
    attempts: int = Field(description="Samples scored (error verdicts included).")
    passes: int
    errors: int = Field(description="Samples without a verdict (status error).")
    pass_rate: float | None = Field(description="passes / samples with a verdict (null if none).")
    error_rate: float = Field(description="errors / attempts.")
    zero_variance_visits: int = Field(description="Visits whose samples all had the same reward.")
    solved_streak: int = Field(description="Latest visits in a row in which every sample passed.")
    unsolved_streak: int = Field(description="Latest visits in a row in which no sample passed.")
    zero_variance_streak: int = Field(description="Latest visits in a row without reward variance.")
    last_pass_rate: float | None = Field(description="Pass rate of the latest visit.")
    first_seen: float = Field(description="Unix time of the first visit.")
    last_seen: float = Field(description="Unix time of the latest visit.")


class Histogram(BaseModel):
    """`counts[i]` values fell in [edges[i], edges[i+1]) (the last bin includes its right edge)."""

    edges: list[float]
    counts: list[int]


class PromptStatsPage(BaseModel):
    prompts: list[PromptStat] = Field(description="Most recently seen first.")
    matched: int = Field(description="Prompts matching the filter (prompts lists up to `limit`).")
    tracked: int = Field(description="Prompts with a record for this caller.")
    visits: int = Field(description="Visits over the tracked prompts.")
    zero_variance_share: float | None = Field(description="Share of those visits without reward variance.")
    pass_rate_histogram: Histogram = Field(description="Prompt difficulty: tracked prompts by pass rate.")
    pass_threshold: float
    max_prompts: int = Field(
        description="The bound on records kept over all callers: beyond it the caller holding the "
        "most loses its least recently seen."
    )
    max_prompts_per_key: int | None = Field(
        default=None,
        description="The bound on this caller's records: its least recently seen go first, never "
        "another caller's (absent from services older than this field).",
    )


class VerifierMinute(BaseModel):
    minute: int = Field(description="Unix time of the minute's start.")
    verdicts: int
    errors: int
    pass_rate: float | None = Field(description="Share of `ok` verdicts that passed.")
    mean_score: float | None
    p50_ms: float | None
    p99_ms: float | None


class VerifierStat(BaseModel):
    verifier: str
    verdicts: int = Field(description="Verdicts in the window (error verdicts included).")
    errors: int
    error_rate: float
    pass_rate: float | None
    mean_score: float | None
    p50_ms: float | None = Field(
        description="Verdict latency quantiles over the window (histogram estimate)."
    )
    p99_ms: float | None
    max_ms: float | None
    series: list[VerifierMinute] = Field(description="Minutes with verdicts, oldest first.")


class VerifierStatsPage(BaseModel):
    minutes: int = Field(description="The window: this many minutes up to now.")
    verifiers: list[VerifierStat]
