"""Two services on one Docker engine never touch each other's sandboxes (issue 14, defect 7).

Each service owns a label value unique among the running services and stable across its own
restarts (sandbox/instance.py): a second service's start-up sweep leaves the first one's warm
containers alone, and a restarted service still removes what its crashed predecessor left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.sandbox.hardening import LABEL
from referee.sandbox.instance import claim_instance
from referee.sandbox.pool import SandboxPool
from tests.sandbox.helpers import docker_client, make_sandbox_settings


def test_slots_are_unique_while_held_and_stable_across_restarts(tmp_path: Path) -> None:
    first = claim_instance(tmp_path)
    second = claim_instance(tmp_path)
    assert (first.slot, second.slot) == (0, 1)
    assert first.instance != second.instance
    first.release()  # the first service stops (or crashes: the kernel drops its lock)
    again = claim_instance(tmp_path)
    assert (again.slot, again.instance) == (0, first.instance)
    third = claim_instance(tmp_path)
    assert (third.slot, third.instance) == (2, third.instance) and third.instance not in (
        first.instance,
        second.instance,
    )
    for claim in (second, again, third):
        claim.release()


def test_an_unusable_state_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError):
        claim_instance(blocker / "sandbox")


def _containers(instance: str | None) -> set[str]:
    client = docker_client()
    try:
        return {c["Id"] for c in client.api.containers(all=True, filters={"label": f"{LABEL}={instance}"})}
    finally:
        client.close()


@pytest.mark.docker
async def test_two_services_on_one_engine_keep_their_containers(
    sandbox_image: str, tmp_path: Path, escape_check: None
) -> None:
    """Service A warms up; service B (same state dir, so the same machine's defaults) starts
    beside it: A's containers survive B's start-up sweep and B's own shutdown. A crashes; its
    restart claims A's id again and removes what the crash left, leaving B's alone."""
    settings = make_sandbox_settings(instance=None, state_dir=tmp_path, pool_size=2)
    a = SandboxPool(settings)
    await a.start()
    b = SandboxPool(settings)
    a_restarted = SandboxPool(settings)
    try:
        assert await a.until_warm(2)
        a_ids = _containers(a.settings.instance)
        assert len(a_ids) == 2
        await b.start()
        assert await b.until_warm(2)
        assert b.settings.instance != a.settings.instance
        assert _containers(a.settings.instance) == a_ids  # untouched by B's start
        assert a.health()[0] and a.warm == 2
        await a.abandon()  # A crashes: its containers stay behind
        assert _containers(a.settings.instance) == a_ids
        b_ids = _containers(b.settings.instance)
        await a_restarted.start()
        assert a_restarted.settings.instance == a.settings.instance
        assert await a_restarted.until_warm(2)
        assert not (_containers(a.settings.instance) & a_ids)  # the crash's leftovers are gone
        assert _containers(b.settings.instance) == b_ids  # B's are not
        await b.close()
        assert len(_containers(a.settings.instance)) == 2  # B's shutdown spared A's
    finally:
        for pool in (a_restarted, b, a):
            await pool.close()
    assert not _containers(a.settings.instance) and not _containers(b.settings.instance)
