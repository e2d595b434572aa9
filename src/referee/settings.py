"""Service configuration: environment variables with the `REFEREE_` prefix (or a .env file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def _default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _default_db_path() -> Path:
    # Absolute, so the service finds the same registered types whatever directory it starts in.
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "referee" / "referee.db"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REFEREE_", env_file=".env", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Bind address; loopback unless you mean it.")
    port: int = Field(default=8000, ge=0, le=65535)
    workers: int = Field(default_factory=_default_workers, ge=1, le=256, description="Verifier processes.")
    log_level: str = "info"
    log_json: bool = False

    # Time: the hard wall-clock budget of one verdict. A check that exceeds it gets score 0 with
    # a reason, and its worker process is killed and replaced.
    verdict_timeout_s: float = Field(default=2.0, gt=0.0, le=600.0)
    # Memory cap (address space) of each verifier worker; a check that exceeds it gets score 0.
    worker_memory_mb: int = Field(default=2048, ge=128)
    # Back-pressure: verdicts queued or running before new requests get 503 + Retry-After.
    max_pending_verdicts: int = Field(default=20000, ge=1)
    # Admission per execution lane (cpu / sandbox / io, see scoring/admission.py): a request
    # whose expected queueing delay in a lane exceeds this is answered 503 + Retry-After.
    max_queue_wait_s: float = Field(default=15.0, gt=0.0, le=3600.0)
    # Fairness between callers: requests one key may have in flight on /v1/ (scoring, catalog,
    # registration) before more are answered 429 + Retry-After. Applies when keys are
    # configured (an open service has no callers to tell apart); 0 = no limit.
    max_concurrent_requests_per_key: int = Field(default=32, ge=0)

    # Request limits (clear 4xx errors beyond them).
    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    max_items: int = Field(default=1024, ge=1, description="Items per /v1/score batch.")
    max_groups: int = Field(default=256, ge=1, description="Groups per /v1/groups request.")
    max_group_size: int = Field(default=512, ge=1, description="Responses per group.")
    max_response_chars: int = Field(default=4_000_000, ge=1)
    max_components: int = Field(default=8, ge=1, description="Weighted verifiers per group.")

    # "module:Class" verifier classes to register besides built-ins and entry-point plugins.
    extra_verifiers: Annotated[list[str], NoDecode] = Field(default_factory=list)
    load_plugins: bool = True
    # Start the Docker sandbox used by the `code` verifier and registered python graders
    # (settings: REFEREE_SANDBOX_*).
    sandbox: bool = True

    # Verifier types registered through the API (SQLite; created on the first registration).
    db_path: Path = Field(
        default_factory=_default_db_path, description="Default: $XDG_DATA_HOME/referee/referee.db."
    )
    # A server registry shared by several services (replicas): `postgresql://user@host/db`
    # (the `postgres` extra). Unset: the embedded SQLite file at db_path.
    db_url: str | None = Field(default=None, pattern=r"^postgres(?:ql)?://")
    # Seconds within which a type registered through one service is served by the others
    # (each re-reads the registry's change counter at most this often).
    db_refresh_s: float = Field(default=1.0, gt=0, le=60)
    # A registration waits this long for another writer's lock on the SQLite file, then gets
    # 503 + Retry-After (scoring never waits on it: reads go on under WAL).
    registry_busy_timeout_s: float = Field(default=10.0, gt=0, le=600)
    max_registered_types: int = Field(default=100, ge=0, description="Active registered type names.")
    max_registered_source_bytes: int = Field(default=64 * 1024, ge=256, description="Spec or source size.")
    max_registered_examples: int = Field(default=32, ge=1)
    # Statistics (GET /v1/stats/...): per-prompt records of the groups that carry a prompt_id
    # and per-verifier minutes (verdicts, errors, passes, latency), kept in memory and flushed
    # to SQLite every stats_flush_s (so they survive a restart). Per replica.
    stats: bool = True
    stats_db_path: Path | None = Field(default=None, description="Default: referee-stats.db beside db_path.")
    # The memory bound: prompt records over all callers (≈ 0.5 KB each); least recently seen go.
    stats_max_prompts: int = Field(default=100_000, ge=1, le=10_000_000)
    stats_window_minutes: int = Field(default=1440, ge=1, le=7 * 1440, description="Verifier minutes kept.")
    stats_max_verifiers: int = Field(default=1000, ge=1, description="Verifier names tracked.")
    stats_flush_s: float = Field(default=5.0, gt=0.0, le=3600.0)
    # A sample passes when its reward is at least this (so 1.0: fully right).
    stats_pass_threshold: float = 1.0

    # Auth: `Authorization: Bearer KEY`. Admin keys register and delete types (and may score);
    # API keys score. No key configured at all = open (local use; logged at start-up).
    admin_keys: Annotated[list[str], NoDecode] = Field(default_factory=list, repr=False)
    api_keys: Annotated[list[str], NoDecode] = Field(default_factory=list, repr=False)
    # Webhook verifiers: hosts they may call ("host", "host:port" or "*.domain"); empty = none.
    webhook_allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    webhook_timeout_s: float = Field(default=5.0, gt=0.0, le=60.0, description="Per attempt.")
    webhook_retries: int = Field(default=2, ge=0, le=5)
    webhook_max_concurrency: int = Field(default=32, ge=1, description="Calls in flight per type.")
    webhook_breaker_failures: int = Field(default=5, ge=1, description="Consecutive failures to open.")
    webhook_breaker_reset_s: float = Field(default=30.0, gt=0.0, description="Open state before a trial.")
    # Webhook hosts are resolved at each call and the connection pinned to the address checked;
    # addresses that are not public (private, loopback, link-local, ...) are refused unless in
    # one of these networks (CIDR, e.g. "10.0.0.0/8,127.0.0.1/32").
    webhook_allowed_networks: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Fernet keys encrypting webhook secrets at rest; the first encrypts, all decrypt (rotation).
    # Without one, webhook types cannot be registered.
    secret_keys: Annotated[list[str], NoDecode] = Field(default_factory=list, repr=False)

    @field_validator(
        "extra_verifiers",
        "admin_keys",
        "api_keys",
        "webhook_allowed_hosts",
        "webhook_allowed_networks",
        "secret_keys",
        mode="before",
    )
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def stats_path(self) -> Path:
        """Where statistics are persisted: stats_db_path, else beside the registry's file."""
        return self.stats_db_path or self.db_path.with_name("referee-stats.db")
