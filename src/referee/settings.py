"""Configuration: one `Settings`, read once, in sections; every component gets its section.

Sections: `service` (HTTP, auth), `limits` (request sizes), `workers` (verifier processes and
admission), `registry` (which verifiers exist: extras, plugins, registered types and their
store, webhooks), `stats`, `audits`, `judges` (model endpoints of judge verifiers), `sandbox`,
`sessions` (stateful code sessions) and `ray`.

Each setting has one flat name, the environment variable without its `REFEREE_` prefix:
`REFEREE_WORKERS` is `workers.count`, `REFEREE_SANDBOX_POOL_SIZE` is `sandbox.pool_size`,
`REFEREE_STATS=false` is `stats.enabled`. A section says how its names are made (`flat_prefix`,
plus `flat_names` where a field's name differs). Keyword arguments take the same flat names
(`Settings(workers=1, sandbox=False)`) or whole sections (`Settings(sandbox={"pool_size": 2})`);
precedence is arguments, then the environment, then a `.env` file, then the defaults.

This module is the only place that reads the process environment (tests/test_no_environ.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

ENV_PREFIX = "REFEREE_"


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


# A list given as one comma-separated string (the environment's form) or as a list.
CommaList = Annotated[list[str], BeforeValidator(_split_csv)]


def _cpu_count() -> int:
    return max(1, os.cpu_count() or 1)


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path("~/.local/share").expanduser())


def _default_db_path() -> Path:
    # Absolute, so the service finds the same registered types whatever directory it starts in.
    return _data_home() / "referee" / "referee.db"


class Section(BaseModel):
    """A part of the settings. Its fields' flat names are `flat_prefix` + the field's name,
    except those listed in `flat_names` (the first name is the field's own, others are aliases)."""

    model_config = ConfigDict(extra="forbid")

    flat_prefix: ClassVar[str] = ""
    flat_names: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    @classmethod
    def names_of(cls, field: str) -> tuple[str, ...]:
        return cls.flat_names.get(field, (cls.flat_prefix + field,))


class ServiceSettings(Section):
    """The HTTP service: where it listens, its log, who may call it."""

    host: str = Field(default="127.0.0.1", description="Bind address; loopback unless you mean it.")
    port: int = Field(default=8000, ge=0, le=65535)
    log_level: str = "info"
    log_json: bool = False
    # Auth: `Authorization: Bearer KEY`. Admin keys register and delete types (and may score);
    # API keys score. No key configured at all = open (local use; logged at start-up).
    # Secrets are kept out of repr, which is also what keeps them from being forwarded.
    admin_keys: CommaList = Field(default_factory=list, repr=False)
    api_keys: CommaList = Field(default_factory=list, repr=False)
    # Fairness between callers: requests one key may have in flight on /v1/ (scoring, catalog,
    # registration) before more are answered 429 + Retry-After. Applies when keys are
    # configured (an open service has no callers to tell apart); 0 = no limit.
    max_concurrent_requests_per_key: int = Field(default=32, ge=0)
    # The dashboard's login (/ui/login): a server-side session per browser, ended after this
    # long unused (an open overview polls every 10 s, so it stays alive) or this long after its
    # login, whichever comes first.
    ui_session_idle_s: float = Field(default=3600.0, gt=0.0)
    ui_session_max_s: float = Field(default=12 * 3600.0, gt=0.0)
    # Failed logins, i.e. wrong keys at /ui/login or on any /v1/ route: a client (IP) with this
    # many in the window gets 429 + Retry-After, whatever key it sends; past the all-clients
    # bound, every client with a recent failure does (clean ones still log in).
    ui_login_max_failures: int = Field(default=10, ge=1)
    ui_login_window_s: float = Field(default=60.0, gt=0.0)
    ui_login_max_failures_all_clients: int = Field(default=100, ge=1)
    # Connections (`referee serve`, service/connections.py): a request head must arrive within
    # header_timeout_s of its first byte, its body within body_timeout_s of the head (else 408),
    # an idle keep-alive connection is closed after keep_alive_s. One client address holds at
    # most max_connections_per_client connections (0 = no limit: behind a proxy, whose address
    # every connection has); past max_connections connections and requests together, 503.
    header_timeout_s: float = Field(default=10.0, gt=0.0, le=600.0)
    body_timeout_s: float = Field(default=60.0, gt=0.0, le=3600.0)
    keep_alive_s: float = Field(default=5.0, gt=0.0, le=600.0)
    max_connections_per_client: int = Field(default=256, ge=0)
    max_connections: int = Field(default=4096, ge=0, description="0 = no limit.")


class RequestLimits(Section):
    """Request sizes (clear 4xx errors beyond them)."""

    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    max_items: int = Field(default=1024, ge=1, description="Items per /v1/score batch.")
    max_groups: int = Field(default=256, ge=1, description="Groups per /v1/groups request.")
    max_group_size: int = Field(default=512, ge=1, description="Responses per group.")
    max_response_chars: int = Field(default=4_000_000, ge=1)
    max_components: int = Field(default=8, ge=1, description="Weighted verifiers per group.")


class WorkerSettings(Section):
    """The verifier worker processes and the admission of work to them."""

    flat_names: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "count": ("workers",),
        "memory_mb": ("worker_memory_mb",),
    }

    count: int = Field(default_factory=_cpu_count, ge=1, le=256, description="Verifier processes.")
    # Time: the CPU-time budget of one verdict (a verifier may set its own). A check that uses
    # it gets score 0 with a reason; a busy node only makes it take longer (scoring/worker.py).
    verdict_timeout_s: float = Field(default=2.0, gt=0.0, le=600.0)
    # The wall clock is only a backstop, at this many times the most CPU time a check can use
    # (its budget + 2 s, see scoring/pool.py): a check still running then got less than 1/this
    # of a CPU (a worker does no I/O), so it gets no verdict, is run once more, and is masked
    # if starved again.
    verdict_wall_factor: float = Field(default=4.0, ge=1.0, le=100.0)
    # Memory cap (address space) of each verifier worker; a check that exceeds it gets score 0.
    memory_mb: int = Field(default=2048, ge=128)
    # Back-pressure: verdicts queued or running before new requests get 503 + Retry-After.
    max_pending_verdicts: int = Field(default=20000, ge=1)
    # Admission per execution lane (cpu / sandbox / io, see scoring/admission.py): a request
    # whose expected queueing delay in a lane exceeds this is answered 503 + Retry-After.
    max_queue_wait_s: float = Field(default=15.0, gt=0.0, le=3600.0)


class RegistrySettings(Section):
    """Which verifiers exist: installed extras and plugins, and the types registered through the
    API (their store, quotas and the webhook policy)."""

    flat_names: ClassVar[Mapping[str, tuple[str, ...]]] = {"busy_timeout_s": ("registry_busy_timeout_s",)}

    # "module:Class" verifier classes to register besides built-ins and entry-point plugins.
    extra_verifiers: CommaList = Field(default_factory=list)
    load_plugins: bool = True
    # Verifier types registered through the API (SQLite; created on the first registration).
    db_path: Path = Field(
        default_factory=_default_db_path, description="Default: $XDG_DATA_HOME/referee/referee.db."
    )
    # A server registry shared by several services (replicas): `postgresql://user@host/db`
    # (the `postgres` extra). Unset: the embedded SQLite file at db_path. Usually carries a
    # password, hence kept out of repr (and never forwarded).
    db_url: str | None = Field(default=None, pattern=r"^postgres(?:ql)?://", repr=False)
    # Seconds within which a type registered through one service is served by the others
    # (each re-reads the registry's change counter at most this often).
    db_refresh_s: float = Field(default=1.0, gt=0, le=60)
    # A registration waits this long for another writer's lock on the SQLite file, then gets
    # 503 + Retry-After (scoring never waits on it: reads go on under WAL).
    busy_timeout_s: float = Field(default=10.0, gt=0, le=600)
    max_registered_types: int = Field(default=100, ge=0, description="Active registered type names.")
    max_registered_source_bytes: int = Field(default=64 * 1024, ge=256, description="Spec or source size.")
    max_registered_examples: int = Field(default=32, ge=1)
    # Webhook verifiers: hosts they may call ("host", "host:port" or "*.domain"); empty = none.
    webhook_allowed_hosts: CommaList = Field(default_factory=list)
    webhook_timeout_s: float = Field(default=5.0, gt=0.0, le=60.0, description="Per attempt.")
    webhook_retries: int = Field(default=2, ge=0, le=5)
    webhook_max_concurrency: int = Field(default=32, ge=1, description="Calls in flight per type.")
    webhook_breaker_failures: int = Field(default=5, ge=1, description="Consecutive failures to open.")
    webhook_breaker_reset_s: float = Field(default=30.0, gt=0.0, description="Open state before a trial.")
    # Webhook hosts are resolved at each call and the connection pinned to the address checked;
    # addresses that are not public (private, loopback, link-local, ...) are refused unless in
    # one of these networks (CIDR, e.g. "10.0.0.0/8,127.0.0.1/32").
    webhook_allowed_networks: CommaList = Field(default_factory=list)
    # Fernet keys encrypting webhook secrets at rest; the first encrypts, all decrypt (rotation).
    # Without one, webhook types cannot be registered.
    secret_keys: CommaList = Field(default_factory=list, repr=False)


class StatsSettings(Section):
    """Statistics (GET /v1/stats/...): per-prompt records of the groups that carry a prompt_id
    and per-verifier minutes (verdicts, errors, passes, latency), kept in memory and flushed to
    SQLite every `flush_s` (so they survive a restart). With a shared registry (`db_url`), each
    replica also publishes its verifier and HTTP minutes there on each flush, under
    `replica_id`, and the verifier and health pages sum every replica's; prompt records stay
    per replica."""

    flat_prefix: ClassVar[str] = "stats_"
    flat_names: ClassVar[Mapping[str, tuple[str, ...]]] = {"enabled": ("stats",)}

    enabled: bool = True
    db_path: Path | None = Field(default=None, description="Default: referee-stats.db beside the registry's.")
    # Prompt records (≈ 0.5 KB each). Per caller: its own least recently seen go, never
    # another's. Over all callers (the memory bound): the caller holding the most loses its
    # least recently seen, so one caller's flood cannot wipe another's records.
    max_prompts_per_key: int = Field(default=100_000, ge=1, le=10_000_000)
    max_prompts: int = Field(default=200_000, ge=1, le=10_000_000)
    window_minutes: int = Field(default=1440, ge=1, le=7 * 1440, description="Verifier minutes kept.")
    max_verifiers: int = Field(default=1000, ge=1, description="Verifier names tracked.")
    flush_s: float = Field(default=5.0, gt=0.0, le=3600.0)
    # A sample passes when its reward is at least this (so 1.0: fully right).
    pass_threshold: float = 1.0
    # This replica's name in the shared store: unique among the replicas, the same across its
    # restarts. None: the sandbox's instance id when it has one, else the host name and a hash
    # of the statistics file's path (stats.shared.default_replica_id).
    replica_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$")


class AuditSettings(Section):
    """Audits run by the service (POST /v1/audits): how many, how large, and the share of the
    code sandbox they may hold, so that scoring always has capacity."""

    flat_prefix: ClassVar[str] = "audit_"

    max_running: int = Field(default=2, ge=1, le=64, description="Audits running at once, all keys.")
    max_running_per_key: int = Field(default=1, ge=1, le=64, description="Audits one key may run at once.")
    max_rows: int = Field(default=20_000, ge=1, le=20_000, description="Rows of one audit.")
    # Rows over one key's running audits (probes not counted).
    max_rows_per_key: int = Field(default=20_000, ge=1)
    # Sandbox run slots (REFEREE_SANDBOX_MAX_PARALLEL) audits may hold at once, over all
    # audits: ⌊slots × share⌋, at least one; and none while a scoring program waits for one.
    sandbox_share: float = Field(default=0.25, gt=0.0, le=1.0)


class JudgeEndpoint(BaseModel):
    """One OpenAI-compatible chat-completions server (vLLM, SGLang, TGI, `transformers serve`,
    OpenAI) that judge verifiers may call, by its name in `JudgeSettings.endpoints`."""

    # hide_input_in_errors: a validation error must not print the endpoint (its key) back.
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    url: str = Field(max_length=2000, description="The OpenAI base URL, e.g. http://gpu-node:8000/v1.")
    model: str = Field(min_length=1, max_length=500, description="The model name sent by default.")
    # The key, sent as `Authorization: Bearer`; or the name of an environment variable that
    # holds it (read when the service starts), so the key need not sit in REFEREE_JUDGE_ENDPOINTS.
    api_key: SecretStr | None = Field(default=None, repr=False)
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # Or a file holding it, as secret stores mount them (Docker and Kubernetes secrets, Vault
    # agents): read when the clients are built and again when it may have changed (see
    # referee.judges.client), so a rotated key is picked up without a restart.
    api_key_file: str | None = Field(default=None, min_length=1, max_length=4096)
    # Requests in flight (servers like vLLM batch concurrent requests; match --max-num-seqs).
    max_concurrency: int = Field(default=16, ge=1, le=4096)
    timeout_s: float = Field(default=60.0, gt=0.0, le=3600.0, description="Per attempt.")
    retries: int = Field(default=2, ge=0, le=10, description="Attempts after the first.")
    breaker_failures: int = Field(default=5, ge=1, description="Consecutive failed calls to open.")
    breaker_reset_s: float = Field(default=30.0, gt=0.0, description="Open state before a trial.")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            url = urlsplit(value)
            url.port  # noqa: B018 (raises on an invalid port)
        except ValueError:
            raise ValueError("invalid URL") from None
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError("the URL must be http(s)://host[:port]/...")
        if "@" in url.netloc or url.query or url.fragment:
            # Credentials in the URL would be logged with it: give them as api_key(_env).
            raise ValueError("the URL may not carry credentials, a query or a fragment (use api_key)")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _one_key(self) -> JudgeEndpoint:
        given = [self.api_key, self.api_key_env, self.api_key_file]
        if sum(source is not None for source in given) > 1:
            raise ValueError("give one of api_key, api_key_env, api_key_file")
        return self

    def key(self) -> str | None:
        """The API key: given, read from `api_key_env` now (None when that is unset), or read
        from `api_key_file` now, stripped. An unreadable or empty key file raises OSError whose
        message names the file and why, never its content."""
        if self.api_key is not None:
            return self.api_key.get_secret_value() or None
        if self.api_key_env is not None:
            return os.environ.get(self.api_key_env) or None
        if self.api_key_file is not None:
            path = self.api_key_file
            try:
                key = Path(path).read_bytes().decode("utf-8").strip()
            except UnicodeDecodeError:
                raise OSError(f"api_key_file {path}: not UTF-8 text") from None
            except OSError as exc:
                raise OSError(f"api_key_file {path}: {exc.strerror or type(exc).__name__}") from None
            if not key:
                raise OSError(f"api_key_file {path}: empty")
            return key
        return None


def _json_object(value: object) -> object:
    """REFEREE_JUDGE_ENDPOINTS is a JSON object (the environment's form) or a mapping."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            # The message, not the text: the text may hold a key.
            raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    return value


EndpointName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")]


class JudgeSettings(Section):
    """Model endpoints of judge verifiers (`referee.judges`): named OpenAI-compatible servers,
    and the verdict cache. A request names an endpoint, never a URL. No endpoint configured: no
    judge calls (judge verdicts are errors saying so)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    flat_prefix: ClassVar[str] = "judge_"

    # name -> endpoint, as JSON in REFEREE_JUDGE_ENDPOINTS. Kept out of repr (keys), hence not
    # forwarded to Ray replicas either: set the variable on every node, like every secret.
    endpoints: Annotated[dict[EndpointName, JudgeEndpoint], BeforeValidator(_json_object)] = Field(
        default_factory=dict, repr=False
    )
    # Parsed judge outcomes kept in memory (LRU), keyed by model, template version, response,
    # reference and criterion: repeated samples and re-scoring cost no call.
    cache_entries: int = Field(default=100_000, ge=0, le=10_000_000)


class SandboxSettings(Section):
    """The Docker sandbox of the `code` verifier and registered python graders.

    Limits default to the judging policy (2 s per test, 256 MB for the process tree, 64
    processes, 1 MB of stdout, 64 KB of stderr kept, 10 s to compile). Times are CPU time with
    the node's run-queue waits given back; the wall clock is only a backstop (supervisor.py).
    """

    flat_prefix: ClassVar[str] = "sandbox_"
    # REFEREE_SANDBOX is the switch; REFEREE_SANDBOX_ENABLED, an older name, still works.
    flat_names: ClassVar[Mapping[str, tuple[str, ...]]] = {"enabled": ("sandbox", "sandbox_enabled")}

    enabled: bool = True
    # The image is named here and pinned by content: with `image_tag` unset the tag is the hash
    # of the recipe this code builds (packages + supervisor + harness), so a code change never
    # runs a stale image and nothing is ever pulled at request time.
    image_repository: str = "referee-sandbox"
    image_tag: str | None = None
    # Docker endpoint; unset: the SDK's default (DOCKER_HOST, else the local socket).
    docker_host: str | None = None
    docker_timeout_s: float = 30.0
    # Label value that marks this service's containers (its strays are removed at start-up).
    # None: a value claimed in `state_dir`, unique among running services and stable across
    # this one's restarts (see sandbox/instance.py).
    instance: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    state_dir: Path = Field(default_factory=lambda: _data_home() / "referee" / "sandbox")

    # One warm container per program of a typical GRPO group (16): a group never waits for a
    # container start (~160 ms each, ~7/s on 2 cores), and the pool refills while the trainer
    # generates the next batch. Idle containers cost only their supervisor (~10 MB each).
    pool_size: int = Field(default=16, ge=0, le=256, description="Warm containers kept started.")
    # One running submission per core: more would not finish sooner, only wait for CPUs (the
    # waits are given back to a program, but a run past its backstop is masked and retried).
    max_parallel: int = Field(default_factory=_cpu_count, ge=1, le=256)
    max_starting: int = Field(default=2, ge=1, le=64, description="Container starts in flight.")
    # Code sessions (issue 30) each hold a container of their own for their whole life, beside
    # the pool: an idle one costs its supervisor and kernel (~20 MB), never a run slot.
    max_sessions: int = Field(default=64, ge=0, le=1024, description="Code sessions open at once.")
    # A container serves up to this many programs (each under a uid of its own, the container
    # scrubbed in between) and is retired after `max_container_age_s`: reuse takes container
    # starts (~7/s on 2 cores, serialised by dockerd) off the path of sustained scoring.
    max_runs_per_container: int = Field(default=64, ge=1, le=10_000)
    max_container_age_s: float = Field(default=600.0, gt=0.0)
    scrub_timeout_s: float = Field(default=15.0, gt=0.0, description="Wait for a scrubbed container.")
    start_timeout_s: float = 30.0
    acquire_timeout_s: float = 60.0
    retry_interval_s: float = 5.0
    # Submissions waiting for a run slot; beyond this, new ones fail at once ("sandbox
    # overloaded", status error) instead of piling up in memory.
    max_queued: int = Field(default=1024, ge=1)
    # A program the node kept from a CPU past its backstop (`starved`) has no verdict: it is run
    # again this many times (after a pause) before the response is answered status=error.
    starved_retries: int = Field(default=1, ge=0, le=5)

    time_limit_s: float = 2.0
    memory_limit_mb: int = 256
    max_processes: int = 64
    stdout_limit_bytes: int = 1 << 20
    result_limit_bytes: int = Field(default=16 << 20, ge=1 << 16, le=256 << 20)
    stderr_keep_bytes: int = 64 << 10
    compile_timeout_s: float = 10.0
    # The supervisor (a small Python process) shares the container's memory cgroup with the
    # candidate; the container limit is the policy's limit plus this.
    supervisor_memory_mb: int = 24
    cpus: float = 1.0
    workdir_size_mb: int = 64
    tmp_size_mb: int = 64
    file_size_limit_mb: int = 64
    open_files: int = 256
    max_source_bytes: int = 1 << 20
    # Compiled programs (artifacts, compile errors) kept on the host, least recently used out
    # first: the same program submitted again is not compiled again (sandbox/compile_cache.py).
    # 256 MB holds thousands of C++ binaries or jars; 0 turns the cache off.
    compile_cache_bytes: int = Field(default=256 << 20, ge=0, le=64 << 30)

    # Image build (`referee sandbox build`).
    cache_dir: Path = Field(default_factory=lambda: Path("~/.cache/referee/sandbox").expanduser())
    debian_suite: str = "bookworm"
    debian_mirror: str = "http://deb.debian.org/debian"
    dockerfile_base: str = "debian:bookworm-slim"

    def container_memory_mb(self, memory_limit_mb: int | None = None) -> int:
        return (memory_limit_mb or self.memory_limit_mb) + self.supervisor_memory_mb


class SessionSettings(Section):
    """Stateful code sessions (`/v1/sessions`, `referee.sessions`): a container of the sandbox
    pinned to one rollout, a Python kernel kept alive in it between calls. How long one may
    live, how many one key may hold, and the caps on what a request may ask for. How many the
    whole service may hold is the sandbox's (`REFEREE_SANDBOX_MAX_SESSIONS`)."""

    flat_prefix: ClassVar[str] = "sessions_"
    flat_names: ClassVar[Mapping[str, tuple[str, ...]]] = {"enabled": ("sessions",)}

    enabled: bool = True
    # A session unused this long is closed (its container scrubbed back to the pool); a request
    # may ask for a shorter or longer one, lowered to max_idle_ttl_s. Whatever its use, a session
    # ends max_lifetime_s after it opened: a forgotten one never pins a container for good.
    idle_ttl_s: float = Field(default=300.0, gt=0.0, le=86_400.0)
    max_idle_ttl_s: float = Field(default=1800.0, gt=0.0, le=86_400.0)
    max_lifetime_s: float = Field(default=3600.0, gt=0.0, le=7 * 86_400.0)
    # Sessions one key may hold open (429 beyond); an open service has no keys to tell apart
    # and only the sandbox's bound applies.
    max_per_key: int = Field(default=16, ge=1, le=4096)
    max_code_bytes: int = Field(default=256 << 10, ge=1024, le=16 << 20, description="Code of one call.")
    # Caps on the limits a session may ask for (a request beyond one gets the cap, and is told
    # so); a request that names none gets the sandbox's session defaults (10 s a call, 600 CPU
    # s, 512 MB, 64 KB, 32 MB files, 256 open files), each at most its cap.
    max_call_time_s: float = Field(default=60.0, gt=0.0, le=3600.0)
    max_session_cpu_s: float = Field(default=3600.0, gt=0.0, le=86_400.0)
    max_memory_mb: int = Field(default=2048, ge=64, le=65_536)
    max_output_bytes: int = Field(default=1 << 20, ge=1024, le=64 << 20)
    # Files the kernel may write (the size of one) and hold open; the container's own ulimits
    # (REFEREE_SANDBOX_FILE_SIZE_LIMIT_MB, REFEREE_SANDBOX_OPEN_FILES) bound these too.
    max_file_size_mb: int = Field(default=64, ge=1, le=65_536)
    max_open_files: int = Field(default=256, ge=32, le=65_536)

    @model_validator(mode="after")
    def _ttl_within_its_cap(self) -> SessionSettings:
        if self.idle_ttl_s > self.max_idle_ttl_s:
            raise ValueError("sessions_idle_ttl_s is over sessions_max_idle_ttl_s")
        return self


class EnvironmentSettings(Section):
    """Multi-turn environments (`/v1/environments`, `referee.environments`): how long an
    episode may sit unstepped, and how many may be open. An episode's code session (a `python`
    episode's tool calls) counts in the key's session quota besides (`REFEREE_SESSIONS_*`)."""

    flat_prefix: ClassVar[str] = "environments_"

    # An episode not stepped this long is closed by the reaper, its code session with it.
    idle_ttl_s: float = Field(default=300.0, gt=0.0, le=86_400.0)
    # Open episodes in the whole service (503 above) and per key (429 above): an episode holds
    # only memory until its first tool call, but a trainer that never finishes its episodes
    # must not grow the table for good.
    max_episodes: int = Field(default=4096, ge=1, le=1_000_000)
    max_per_key: int = Field(default=512, ge=1, le=1_000_000)


class RaySettings(Section):
    """The shape of the Ray Serve deployment (`referee serve --ray`); only the process that
    deploys reads it, and it is not forwarded to the replicas."""

    flat_prefix: ClassVar[str] = "ray_"

    app_name: str = Field(default="referee", description="Serve application name.")
    route_prefix: str = Field(default="/", description="HTTP route prefix of the application.")
    replicas: int = Field(default=1, ge=1, description="Fixed number of replicas (no autoscaling).")
    max_replicas: int | None = Field(
        default=None, ge=1, description="Set to autoscale between min_replicas and this on ongoing requests."
    )
    min_replicas: int = Field(default=1, ge=0)
    target_ongoing_requests: float = Field(
        default=4.0, gt=0, description="Autoscaling target of in-flight requests per replica."
    )
    max_ongoing_requests: int = Field(
        default=64, ge=1, description="Requests one replica accepts at once (its admission queues them)."
    )
    num_cpus: float = Field(
        default=1.0,
        ge=0,
        description="CPUs Ray reserves per replica; give it REFEREE_WORKERS so replicas do not share cores.",
    )
    node_resource: str | None = Field(
        default=None,
        description="A custom resource (e.g. `docker`) that places replicas only on nodes started with it.",
    )
    address: str | None = Field(
        default=None,
        description="Ray cluster to join (`auto`, `ray://…`); none: RAY_ADDRESS, else a local cluster.",
    )
    http_host: str | None = Field(default=None, description="Proxy bind address (default REFEREE_HOST).")
    http_port: int | None = Field(default=None, description="Proxy port (default REFEREE_PORT).")
    # The local cluster `referee serve --ray` starts when it joins none: its node address and the
    # dashboard's. Loopback keeps Ray's own ports (GCS, raylet, agents, dashboard) off the network.
    node_ip_address: str = Field(
        default="127.0.0.1", description="Node address of a local cluster started here."
    )
    dashboard_host: str = Field(default="127.0.0.1", description="Dashboard bind address of that cluster.")
    teardown_grace_s: float = Field(
        default=10.0, ge=0, description="Seconds that cluster's processes get to exit before SIGKILL."
    )


SECTIONS: dict[str, type[Section]] = {
    "service": ServiceSettings,
    "limits": RequestLimits,
    "workers": WorkerSettings,
    "registry": RegistrySettings,
    "stats": StatsSettings,
    "audits": AuditSettings,
    "judges": JudgeSettings,
    "sandbox": SandboxSettings,
    "sessions": SessionSettings,
    "environments": EnvironmentSettings,
    "ray": RaySettings,
}


def _flat_names() -> dict[str, tuple[str, str]]:
    """flat name -> (section, field), for every field of every section."""
    table: dict[str, tuple[str, str]] = {}
    for section, model in SECTIONS.items():
        for field in model.model_fields:
            for name in model.names_of(field):
                if name in table:
                    raise AssertionError(f"flat setting name {name!r} is used twice")
                table[name] = (section, field)
    return table


FLAT_NAMES = _flat_names()


class UnknownSetting(TypeError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown setting {name!r} (flat names: REFEREE_ variables without the prefix)")


def nest(values: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """Flat names and whole sections -> {section: {field: value}}. A section given as a model
    contributes the fields it set, so what it leaves unset still comes from the environment.
    Unknown names raise UnknownSetting when `strict`, else are left out (the environment holds
    REFEREE_ variables of other programs, REFEREE_URL for one)."""
    nested: dict[str, dict[str, Any]] = {}
    for raw_name, value in values.items():
        name = raw_name.lower()
        if name in SECTIONS and isinstance(value, BaseModel | Mapping):
            fields = value.model_dump(exclude_unset=True) if isinstance(value, BaseModel) else dict(value)
            nested.setdefault(name, {}).update(fields)
        elif name in FLAT_NAMES:
            section, field = FLAT_NAMES[name]
            nested.setdefault(section, {})[field] = value
        elif strict:
            raise UnknownSetting(raw_name)
    return dict(nested)


class _FlatEnvironment(PydanticBaseSettingsSource):
    """The REFEREE_* variables that an environment source (the process's, or a .env file's)
    holds, under their flat names, nested into sections."""

    def __init__(self, settings_cls: type[BaseSettings], source: EnvSettingsSource) -> None:
        super().__init__(settings_cls)
        self._source = source

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ reads every variable at once

    def __call__(self) -> dict[str, Any]:
        prefix = ENV_PREFIX.lower()
        flat = {
            name[len(prefix) :]: value
            for name, value in self._source.env_vars.items()
            if name.lower().startswith(prefix) and value is not None
        }
        return nest(flat, strict=False)


def _section(model: type[Section]) -> Any:
    return Field(default_factory=model)


class Settings(BaseSettings):
    # hide_input_in_errors: an invalid setting is named with what is wrong, never echoed (it may
    # hold a key: a judge endpoint's, a database URL's password).
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=".env", extra="forbid", hide_input_in_errors=True
    )

    service: ServiceSettings = _section(ServiceSettings)
    limits: RequestLimits = _section(RequestLimits)
    workers: WorkerSettings = _section(WorkerSettings)
    registry: RegistrySettings = _section(RegistrySettings)
    stats: StatsSettings = _section(StatsSettings)
    audits: AuditSettings = _section(AuditSettings)
    judges: JudgeSettings = _section(JudgeSettings)
    sandbox: SandboxSettings = _section(SandboxSettings)
    sessions: SessionSettings = _section(SessionSettings)
    environments: EnvironmentSettings = _section(EnvironmentSettings)
    ray: RaySettings = _section(RaySettings)

    def __init__(self, **values: Any) -> None:
        # pydantic-settings' own options (`_env_file`, ...) pass through; everything else is
        # a flat name or a section.
        options = {k: v for k, v in values.items() if k.startswith("_")}
        settings = nest({k: v for k, v in values.items() if not k.startswith("_")})
        super().__init__(**options, **settings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        assert isinstance(env_settings, EnvSettingsSource) and isinstance(dotenv_settings, EnvSettingsSource)
        return (
            init_settings,
            _FlatEnvironment(settings_cls, env_settings),
            _FlatEnvironment(settings_cls, dotenv_settings),
        )

    def stats_path(self) -> Path:
        """Where statistics are persisted: stats.db_path, else beside the registry's file and
        named after it (`referee.db` -> `referee-stats.db`): services whose registries share a
        directory keep their statistics apart."""
        registry = self.registry.db_path
        return self.stats.db_path or registry.with_name(f"{registry.stem}-stats.db")

    def stats_paths(self) -> list[Path]:
        """`stats_path()`, then the file of this instance (its port) for when another running
        service holds the first one (two services on one registry file, or one stats path)."""
        first = self.stats_path()
        instance = self.service.port or os.getpid()
        return [first, first.with_name(f"{first.stem}-{instance}{first.suffix}")]

    def shared(self) -> dict[str, Any]:
        """What another process of the same service (a Ray replica) should adopt: the values
        set here explicitly (arguments, environment, .env), as JSON, without secrets (the
        fields kept out of repr: they reach a replica through its own node's environment,
        not through the cluster's stored application arguments) and without the `ray`
        section (the deployment's shape, not the service's)."""
        secrets = {
            name: {field for field, info in model.model_fields.items() if not info.repr}
            for name, model in SECTIONS.items()
        }
        exclude: dict[str, Any] = {name: fields for name, fields in secrets.items() if fields}
        exclude["ray"] = True
        shared: dict[str, Any] = self.model_dump(mode="json", exclude_unset=True, exclude=exclude)
        return shared
