"""Helpers shared by the sandbox tests (dev data, host process and container inspection)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from referee.sandbox.hardening import LABEL
from referee.sandbox.in_container.supervisor import CANDIDATE_UID_BASE
from referee.sandbox.settings import SandboxSettings
from tests.data import devset

TEST_INSTANCE = "pytest"


def load_code_rows() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    policy, rows = devset("code")
    assert policy is not None, "code_dev.jsonl starts with its limits policy"
    return policy, rows


def make_sandbox_settings(**overrides: object) -> SandboxSettings:
    values: dict[str, object] = {"instance": TEST_INSTANCE, "pool_size": 2}
    values.update(overrides)
    return SandboxSettings(**values)  # type: ignore[arg-type]


def docker_client() -> Any:
    import docker

    return docker.from_env()


def sandbox_uid_processes() -> dict[int, str]:
    """Host pids running as a candidate uid -> the docker container id of their cgroup ('' if none)."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid <= CANDIDATE_UID_BASE:
                continue
            cgroup = Path(f"/proc/{entry}/cgroup").read_text()
        except OSError:
            continue
        cid = ""
        for line in cgroup.splitlines():
            if "/docker/" in line:
                cid = line.rsplit("/docker/", 1)[1].strip()[:64]
                break
        found[int(entry)] = cid
    return found


def labelled_containers() -> list[str]:
    client = docker_client()
    try:
        return [c["Id"] for c in client.api.containers(all=True, filters={"label": LABEL})]
    finally:
        client.close()
