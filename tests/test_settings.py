"""One `Settings`, in sections, every setting under one flat name (its REFEREE_ variable)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from referee.runtime import Runtime
from referee.settings import FLAT_NAMES, SandboxSettings, Settings, UnknownSetting

REPO = Path(__file__).resolve().parents[1]
# Where users read which variables to set.
DOCUMENTS = [
    REPO / "README.md",
    REPO / "docker-compose.yml",
    REPO / "Dockerfile",
    REPO / "Makefile",
    *sorted((REPO / "docs").glob("*.md")),
]
# REFEREE_ names that are not settings of the service, each with its reader.
NOT_SETTINGS = {
    "URL": "clients and trainer adapters: where the service is",
    "API_KEY": "clients and trainer adapters: their key",
    "OPENRLHF_URL": "trainer_adapter/openrlhf.py: the route OpenRLHF's reward file calls",
    "PATIENCE_S": "trainer_adapter/openrlhf.py: how long it waits out a restarting service",
    "ENVIRONMENT": "trainer_adapter/openrlhf_agent.py: the environment its episodes play",
    "VERIFIER": "trainer_adapter/openrlhf_agent.py: the verifier of its episodes' answers",
    "FEEDBACK_TEMPLATE": "trainer_adapter/openrlhf_agent.py: how a tool's observation is shown",
    "TOOL_FORMAT": "trainer_adapter/openrlhf_agent.py: what a tool call looks like (hermes, code)",
    "TEST_TIME_FACTOR": "tests/timing.py",
    "EVALS_DIR": "tests/data",
    "UI_SCREENSHOT": "tests/service/test_dashboard.py",
    "IMAGE": "docker-compose.yml",
    "BASE_IMAGE": "docker-compose.yml",
    "PIP_FLAGS": "docker-compose.yml",
    "EXTRAS": "docker-compose.yml and the Ray image script",
    "PG_PASSWORD": "docker-compose.yml",
    "PG_IMAGE": "docker-compose.yml: the shared profile's PostgreSQL image",
}
# Families written as a prefix in prose (`REFEREE_SANDBOX_*`, `REFEREE_MAX_REGISTERED_*`).
PREFIXES = ("", "RAY_", "SANDBOX_", "STATS_", "MAX_REGISTERED_")


@pytest.fixture(autouse=True)
def _no_referee_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the variables it reads; none of the caller's leak in."""
    for name in list(os.environ):
        if name.startswith("REFEREE_"):
            monkeypatch.delenv(name)


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)


def test_every_documented_variable_is_still_read() -> None:
    """Every REFEREE_ name that the README, compose file, Dockerfile, Makefile and docs tell users
    to set is a setting's flat name (or one of the few names other programs read)."""
    seen = {
        match.group(1)
        for document in DOCUMENTS
        for match in re.finditer(r"\bREFEREE_([A-Z0-9_]*[A-Z0-9])\b", document.read_text(encoding="utf-8"))
    }
    unknown = sorted(
        name
        for name in seen
        if name.lower() not in FLAT_NAMES and name not in NOT_SETTINGS and f"{name}_" not in PREFIXES
    )
    assert not unknown, f"documented but read by nothing: {unknown}"


def test_environment_names_reach_their_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "REFEREE_WORKERS": "3",
        "REFEREE_WORKER_MEMORY_MB": "512",
        "REFEREE_PORT": "9000",
        "REFEREE_API_KEYS": "k1, k2",
        "REFEREE_MAX_GROUPS": "7",
        "REFEREE_REGISTRY_BUSY_TIMEOUT_S": "0.5",
        "REFEREE_WEBHOOK_ALLOWED_HOSTS": "a.example,b.example",
        "REFEREE_STATS": "false",
        "REFEREE_STATS_FLUSH_S": "2",
        "REFEREE_SANDBOX_POOL_SIZE": "4",
        "REFEREE_RAY_REPLICAS": "2",
        "REFEREE_URL": "http://elsewhere",  # a client's, not the service's: ignored
    }.items():
        monkeypatch.setenv(name, value)
    s = _settings()
    assert (s.workers.count, s.workers.memory_mb, s.service.port) == (3, 512, 9000)
    assert s.service.api_keys == ["k1", "k2"] and s.limits.max_groups == 7
    assert s.registry.busy_timeout_s == 0.5
    assert s.registry.webhook_allowed_hosts == ["a.example", "b.example"]
    assert (s.stats.enabled, s.stats.flush_s) == (False, 2.0)
    assert (s.sandbox.enabled, s.sandbox.pool_size, s.ray.replicas) == (True, 4, 2)


@pytest.mark.parametrize("name", ["REFEREE_SANDBOX", "REFEREE_SANDBOX_ENABLED"])
def test_one_sandbox_switch_under_both_names(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "false")
    assert not _settings().sandbox.enabled
    assert _settings(sandbox=True).sandbox.enabled  # an argument wins over the environment


def test_arguments_win_and_sections_merge_with_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_SANDBOX", "false")
    monkeypatch.setenv("REFEREE_SANDBOX_POOL_SIZE", "5")
    monkeypatch.setenv("REFEREE_SANDBOX_INSTANCE", "from-env")
    s = _settings(workers=1, sandbox=SandboxSettings(pool_size=2))
    # The section object contributes what it set; the rest still comes from the environment.
    assert (s.workers.count, s.sandbox.pool_size, s.sandbox.instance) == (1, 2, "from-env")
    assert not s.sandbox.enabled
    assert _settings(sandbox={"enabled": True}).sandbox.pool_size == 5


def test_dotenv_file_is_read_below_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("REFEREE_WORKERS=5\nREFEREE_SANDBOX_POOL_SIZE=3\nOTHER=1\n")
    monkeypatch.setenv("REFEREE_WORKERS", "2")
    s = Settings(_env_file=env_file)
    assert (s.workers.count, s.sandbox.pool_size) == (2, 3)


def test_unknown_arguments_are_refused() -> None:
    with pytest.raises(UnknownSetting, match="workerz"):
        _settings(workerz=1)


def test_flat_names_are_one_per_field() -> None:
    assert FLAT_NAMES["workers"] == ("workers", "count")
    assert FLAT_NAMES["sandbox"] == FLAT_NAMES["sandbox_enabled"] == ("sandbox", "enabled")
    assert FLAT_NAMES["stats"] == ("stats", "enabled")
    assert FLAT_NAMES["stats_db_path"] == ("stats", "db_path")
    assert FLAT_NAMES["db_path"] == ("registry", "db_path")


def test_stats_file_defaults_to_beside_the_registry_named_after_it(tmp_path: Path) -> None:
    assert _settings(db_path=tmp_path / "r.db").stats_path() == tmp_path / "r-stats.db"
    assert _settings(db_path=tmp_path / "referee.db").stats_path() == tmp_path / "referee-stats.db"
    assert _settings(stats_db_path=tmp_path / "s.db").stats_path() == tmp_path / "s.db"
    # When another running service holds it: this instance's own file, named by its port.
    assert _settings(db_path=tmp_path / "r.db", port=8123).stats_paths() == [
        tmp_path / "r-stats.db",
        tmp_path / "r-stats-8123.db",
    ]


def test_what_replicas_adopt_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """`shared()` is what a Ray replica adopts from the process that builds the application:
    what was set there, without keys, the registry's URL (its password) and the ray section."""
    for name, value in {
        "REFEREE_WORKERS": "3",
        "REFEREE_ADMIN_KEYS": "admin-secret",
        "REFEREE_API_KEYS": "api-secret",
        "REFEREE_SECRET_KEYS": "fernet-secret",
        "REFEREE_DB_URL": "postgresql://referee:hunter2@db/referee",
        "REFEREE_RAY_REPLICAS": "2",
    }.items():
        monkeypatch.setenv(name, value)
    shared = _settings(sandbox_pool_size=2).shared()
    text = json.dumps(shared)
    assert not any(secret in text for secret in ("admin-secret", "api-secret", "fernet-secret", "hunter2"))
    assert {k: v for k, v in shared.items() if v} == {"workers": {"count": 3}, "sandbox": {"pool_size": 2}}
    # A replica reads the rest, secrets included, from its own node's environment.
    replica = _settings(**shared)
    assert replica.workers.count == 3 and replica.sandbox.pool_size == 2
    assert replica.service.admin_keys == ["admin-secret"] and replica.registry.db_url


JUDGE_KEY = "sk-judge-key-0123456789"


def test_judge_endpoints_are_json_in_one_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoints = {
        "default": {
            "url": "http://gpu-node:8000/v1/",
            "model": "Qwen/Qwen2.5-7B-Instruct",
            "api_key": JUDGE_KEY,
        },
        "openai": {
            "url": "https://api.openai.com/v1",
            "model": "gpt-4o-mini",
            "api_key_env": "OPENAI_API_KEY",
        },
    }
    monkeypatch.setenv("REFEREE_JUDGE_ENDPOINTS", json.dumps(endpoints))
    monkeypatch.setenv("REFEREE_JUDGE_CACHE_ENTRIES", "10")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    judges = _settings().judges
    assert judges.cache_entries == 10 and sorted(judges.endpoints) == ["default", "openai"]
    default = judges.endpoints["default"]
    assert default.url == "http://gpu-node:8000/v1"  # the base URL, without its trailing slash
    assert (default.max_concurrency, default.timeout_s, default.retries) == (16, 60.0, 2)
    assert default.key() == JUDGE_KEY and judges.endpoints["openai"].key() == "sk-from-env"
    # The key is in no repr, no dump, and not in what Ray replicas adopt (they read the variable).
    s = _settings()
    for text in (repr(s), str(s.judges), repr(default), s.model_dump_json(), json.dumps(s.shared())):
        assert JUDGE_KEY not in text
    assert "endpoints" not in s.shared().get("judges", {})
    assert _settings().judges.endpoints == _settings(judge_endpoints=endpoints).judges.endpoints


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ({"url": "ftp://gpu-node/v1", "model": "m"}, "http(s)://host"),
        ({"url": f"http://user:{JUDGE_KEY}@gpu-node/v1", "model": "m"}, "may not carry credentials"),
        (
            {"url": "http://gpu-node/v1", "model": "m", "api_key": JUDGE_KEY, "api_key_env": "K"},
            "give one of",
        ),
        (
            {"url": "http://gpu-node/v1", "model": "m", "api_key": JUDGE_KEY, "api_key_file": "/k"},
            "give one of",
        ),
        ({"url": "http://gpu-node/v1", "api_key": JUDGE_KEY}, "Field required"),
        (
            {"url": "http://gpu-node/v1", "model": "m", "api_key": JUDGE_KEY, "max_concurrency": 0},
            "greater than",
        ),
    ],
)
def test_a_wrong_judge_endpoint_is_refused_without_echoing_it(endpoint: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _settings(judge_endpoints={"default": endpoint})
    assert problem in str(caught.value) and JUDGE_KEY not in str(caught.value)


def test_judge_endpoints_that_are_not_json_are_refused_without_echoing_them() -> None:
    with pytest.raises(ValidationError, match="not JSON") as caught:
        _settings(judge_endpoints=f'{{"default": {{"api_key": "{JUDGE_KEY}"')
    assert JUDGE_KEY not in str(caught.value)
    with pytest.raises(ValidationError, match="String should match pattern"):
        _settings(judge_endpoints={"no spaces": {"url": "http://h/v1", "model": "m"}})


def test_code_session_settings_have_their_own_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_SESSIONS", "false")
    monkeypatch.setenv("REFEREE_SESSIONS_IDLE_TTL_S", "30")
    monkeypatch.setenv("REFEREE_SESSIONS_MAX_PER_KEY", "4")
    monkeypatch.setenv("REFEREE_SANDBOX_MAX_SESSIONS", "8")  # the global bound is the sandbox's
    s = _settings()
    assert (s.sessions.enabled, s.sessions.idle_ttl_s, s.sessions.max_per_key) == (False, 30.0, 4)
    assert s.sandbox.max_sessions == 8 and s.sessions.max_lifetime_s == 3600.0
    with pytest.raises(ValidationError, match="over sessions_max_idle_ttl_s"):
        _settings(sessions_idle_ttl_s=600, sessions_max_idle_ttl_s=60)


def test_environment_settings_reach_the_episode_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_ENVIRONMENTS_IDLE_TTL_S", "45")
    monkeypatch.setenv("REFEREE_ENVIRONMENTS_MAX_EPISODES", "10")
    monkeypatch.setenv("REFEREE_ENVIRONMENTS_MAX_PER_KEY", "3")
    episodes = Runtime(_settings()).environments.episodes
    assert (episodes.idle_ttl_s, episodes.max_episodes, episodes.max_per_key) == (45.0, 10, 3)
    with pytest.raises(ValidationError, match=r"environments\.max_per_key"):
        _settings(environments_max_per_key=0)
