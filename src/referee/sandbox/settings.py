"""Sandbox settings (environment prefix `REFEREE_SANDBOX_`).

Limits default to the judging policy (2 s wall per test, 256 MB for the process tree, 64
processes, 1 MB of stdout, 64 KB of stderr kept, 10 s to compile).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_parallel() -> int:
    # Tests are judged on wall-clock time: running more candidates than there are cores makes
    # a correct program look slow. One running submission per core.
    return max(1, os.cpu_count() or 1)


class SandboxSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REFEREE_SANDBOX_", extra="ignore")

    enabled: bool = True
    # The image is named here and pinned by content: with `image_tag` unset the tag is the hash
    # of the recipe this code builds (packages + supervisor + harness), so a code change never
    # runs a stale image and nothing is ever pulled at request time.
    image_repository: str = "referee-sandbox"
    image_tag: str | None = None
    # Docker endpoint; falls back to DOCKER_HOST, then the SDK's default (the local socket).
    docker_host: str | None = Field(
        default=None, validation_alias=AliasChoices("REFEREE_SANDBOX_DOCKER_HOST", "DOCKER_HOST")
    )
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
    max_parallel: int = Field(default_factory=_default_parallel, ge=1, le=256)
    max_starting: int = Field(default=2, ge=1, le=64, description="Container starts in flight.")
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

    # Image build (`referee sandbox build`).
    cache_dir: Path = Path("~/.cache/referee/sandbox").expanduser()
    debian_suite: str = "bookworm"
    debian_mirror: str = "http://deb.debian.org/debian"
    dockerfile_base: str = "debian:bookworm-slim"

    def container_memory_mb(self, memory_limit_mb: int | None = None) -> int:
        return (memory_limit_mb or self.memory_limit_mb) + self.supervisor_memory_mb


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path("~/.local/share").expanduser())


def docker_module() -> Any:
    """The docker SDK, imported lazily (the service starts without it being used) and typed as
    Any: a `docker/` folder at the repository root would otherwise shadow it for mypy."""
    return importlib.import_module("docker")
