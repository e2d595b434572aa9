"""Helpers shared by the sandbox tests (dev data, host process and container inspection)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from referee.sandbox.hardening import LABEL
from referee.sandbox.in_container.supervisor import CANDIDATE_UID_BASE
from referee.sandbox.settings import SandboxSettings
from tests.data import devset

# Sandbox instances are per test run (the pid): a pool removes its instance's containers when it
# starts, so two runs on one engine (a developer's and CI's) must never share a name.
RUN_SUFFIX = f"-run{os.getpid()}"


def run_instance(name: str) -> str:
    """`name`, made this test run's own (see RUN_SUFFIX)."""
    return name + RUN_SUFFIX


TEST_INSTANCE = run_instance("pytest")


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


def labelled_containers(*, every_run: bool = False) -> list[str]:
    """This run's sandbox containers (every_run: any run's, e.g. a parallel developer's run)."""
    client = docker_client()
    try:
        found = client.api.containers(all=True, filters={"label": LABEL})
        return [c["Id"] for c in found if every_run or str(c["Labels"].get(LABEL, "")).endswith(RUN_SUFFIX)]
    finally:
        client.close()
