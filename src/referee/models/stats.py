"""Statistics: `GET /v1/stats/prompts[/{prompt_id}]`, `GET /v1/stats/verifiers`,
`GET /v1/stats/health`. Fields added after the first release carry defaults, so a client of
an older service still parses its answers."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class PromptFilter(StrEnum):
    """Which prompts `GET /v1/stats/prompts` lists; "in a row" counts the last `last` visits."""

    all = "all"
    always_solved = "always_solved"  # every sample passed, `last` visits in a row
    never_solved = "never_solved"  # no sample passed, `last` visits in a row
    zero_variance = "zero_variance"  # every sample scored the same, `last` visits in a row


class Traffic(StrEnum):
    """Whose verdicts a verifier statistic counts: training traffic (scoring and groups), or
    the service's own checks, kept apart so that they never move the training figures."""

    training = "training"  # /v1/score, /v1/groups, the OpenRLHF route
    audit = "audit"  # POST /v1/audits (rows and probes)
    registration = "registration"  # POST /v1/verifiers: its examples and probe gate


class ScopeKind(StrEnum):
    """Whose figures a page sums: every replica's through the shared store, or this one's."""

    all = "all"  # every replica that published in the window (REFEREE_DB_URL set)
    replica = "replica"  # the replica that answers


class ReplicaSeen(BaseModel):
    replica: str = Field(description="Its id (REFEREE_STATS_REPLICA_ID, or one made from its host).")
    last_seen: float = Field(description="Unix time of its latest publish (now, for the one answering).")


class StatsScope(BaseModel):
    """Which replicas a page's figures come from. `kind` is `replica` when `all` was asked for
    but the shared store could not be read: `reason` then says why."""

    kind: ScopeKind
    replica: str = Field(description="The replica that answered.")
    replicas: list[ReplicaSeen] = Field(description="The replicas whose figures are summed, by id.")
    reason: str | None = Field(default=None, description="Why the page is this replica's only, if not asked.")


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
    zero_variance_visits: int = Field(
        description="Visits without reward variance: `zero_variance` of the `/v1/groups` response "
        "(all samples the same reward, or all error verdicts)."
    )
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


class PromptVisit(BaseModel):
    time: float = Field(description="Unix time of the visit.")
    pass_rate: float | None = Field(description="Share of its samples with a verdict that passed.")


class PromptReason(BaseModel):
    time: float = Field(description="Unix time of the visit the response was part of.")
    reward: float | None = Field(description="Its reward (null: an error verdict).")
    reason: str = Field(description="The verdict's reason, cut to 100 characters.")


class PromptDetail(PromptStat):
    """One prompt with its recent history (kept per prompt, bounded)."""

    recent_visits: list[PromptVisit] = Field(
        default_factory=list, description="Its latest visits (at most 8), oldest first."
    )
    recent_reasons: list[PromptReason] = Field(
        default_factory=list,
        description="Verdict reasons of its latest responses that gave one (at most 3), oldest first.",
    )


class VerifierMinute(BaseModel):
    """One step of a verifier's series: a minute, or `step_minutes` of them merged."""

    minute: int = Field(description="Unix time of the step's start.")
    verdicts: int
    errors: int
    pass_rate: float | None = Field(description="Share of `ok` verdicts that passed.")
    mean_score: float | None = Field(description="Mean reward of `ok` verdicts.")
    p50_ms: float | None
    p99_ms: float | None = Field(description="Never above `max_ms`.")
    max_ms: float | None = None
    groups: int = Field(default=0, description="Groups scored (/v1/groups, the OpenRLHF route).")
    zero_variance_groups: int = Field(default=0, description="Of those, groups without learning signal.")
    zero_variance_share: float | None = None


class WindowFigures(BaseModel):
    """A verifier's figures over the window, for one of its versions or one replica."""

    verdicts: int
    errors: int
    pass_rate: float | None
    mean_score: float | None
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None


class VersionStat(WindowFigures):
    """One version of a verifier (`name@version`) over the window."""

    version: str = Field(description="name@version, as in a verdict's `verifier`.")


class ReplicaStat(WindowFigures):
    """One verifier's figures on one replica over the window (where replicas differ)."""

    replica: str = Field(description="The replica's id, as in the page's `scope`.")


class VerifierStat(BaseModel):
    verifier: str
    verdicts: int = Field(description="Verdicts in the window (error verdicts included).")
    errors: int
    error_rate: float
    pass_rate: float | None
    mean_score: float | None
    p50_ms: float | None = Field(
        description="Verdict latency quantiles over the window (histogram estimate, never above max_ms)."
    )
    p99_ms: float | None
    max_ms: float | None
    groups: int = 0
    zero_variance_groups: int = 0
    zero_variance_share: float | None = Field(
        default=None, description="zero_variance_groups / groups (the /v1/groups definition)."
    )
    versions: list[VersionStat] = Field(
        default_factory=list, description="Per version with verdicts in the window, newest version first."
    )
    series: list[VerifierMinute] = Field(description="Steps with verdicts or groups, oldest first.")
    replicas: list[ReplicaStat] = Field(
        default_factory=list,
        description="Per replica with verdicts, by id, when the page sums several replicas (scope `all`).",
    )


class VerifierStatsPage(BaseModel):
    minutes: int = Field(description="The window: this many minutes up to now.")
    step_minutes: int = Field(default=1, description="Minutes merged into one step of each series.")
    traffic: Traffic = Field(default=Traffic.training, description="Whose verdicts are counted.")
    verifiers: list[VerifierStat]
    scope: StatsScope | None = Field(default=None, description="Which replicas the figures come from.")


class HttpMinute(BaseModel):
    minute: int = Field(description="Unix time of the step's start.")
    requests: int
    client_errors: int = Field(description="Answers 4xx.")
    server_errors: int = Field(description="Answers 5xx (503 included).")
    refused: int = Field(description="Answers 503: overloaded or not ready; a client retries them.")


class HttpStat(BaseModel):
    requests: int
    client_errors: int
    server_errors: int
    refused: int
    series: list[HttpMinute] = Field(description="Steps with requests, oldest first.")


class SandboxHealth(BaseModel):
    enabled: bool
    ok: bool
    reason: str | None = None
    warm: int = Field(default=0, description="Containers started and idle.")
    starting: int = 0
    running: int = Field(default=0, description="Containers running a submission or being scrubbed.")
    queued: int = Field(default=0, description="Submissions waiting for a run slot.")
    started: int = Field(default=0, description="Containers started since the service started.")
    discarded: int = Field(default=0, description="Containers removed since (not reused, or found dead).")
    reused: int = 0


class WorkerHealth(BaseModel):
    ok: bool
    size: int
    pending: int = Field(description="Verdicts queued or running in the worker processes.")
    timeouts: int
    crashes: int


class LaneHealth(BaseModel):
    in_flight: float = Field(description="Units admitted and not done (queued or running).")
    rate_per_s: float
    wait_s: float = Field(description="Expected queueing delay of new work.")
    refused: int = Field(description="Requests refused with 503 since the service started.")
    background: float = Field(default=0.0, description="Of in_flight, background work (audits).")


class JudgeEndpointHealth(BaseModel):
    """One judge endpoint now: never its URL or key."""

    name: str
    model: str = Field(description="The model it is configured with.")
    state: str = Field(description="Its circuit breaker: closed (calls go), open, half_open.")
    in_flight: int = Field(description="Calls sent and not answered.")
    calls: dict[str, int] = Field(
        description="Calls sent since the service started, by outcome (ok, timeout...)."
    )
    prompt_tokens: int = Field(description="Tokens the server reported, since the service started.")
    completion_tokens: int


class JudgeHealth(BaseModel):
    """The judge endpoints and their verdict cache (this replica's, since it started). A lookup
    is one judged outcome a verifier needed; a hit costs no call."""

    endpoints: list[JudgeEndpointHealth] = Field(description="By name.")
    calls: dict[str, int] = Field(description="Calls of every endpoint, by outcome.")
    failed_calls: int = Field(description="Calls whose outcome is not ok.")
    cache_hits: int
    cache_misses: int
    cache_hit_rate: float | None = Field(description="Hits over lookups (null before the first).")
    cache_entries: int = Field(description="Outcomes held now.")


class HealthPage(BaseModel):
    """Now (workers, sandbox, lanes: this replica's) and over the window (HTTP answers: every
    replica's through the shared store, else this one's; `scope` says which)."""

    minutes: int
    step_minutes: int
    workers: WorkerHealth
    sandbox: SandboxHealth
    lanes: dict[str, LaneHealth]
    http: HttpStat = Field(description="Answers of the API (the dashboard's own pages left out).")
    scope: StatsScope | None = Field(
        default=None, description="Which replicas `http` sums (workers, sandbox and lanes are this one's)."
    )
    judges: JudgeHealth | None = Field(
        default=None,
        description="This replica's judge endpoints and verdict cache; null when none is configured.",
    )
