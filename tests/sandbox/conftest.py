"""Fixtures for real-Docker sandbox tests.

- `sandbox_image`: builds the image once per session (a no-op when the recipe hash exists).
- `sandbox_pool`: a started SandboxPool (function-scoped: asyncio objects bind to one loop).
- `escape_check`: asserts that every host process running as the sandbox uid belongs to a live
  sandbox container (nothing escaped). At the end of the session there must be zero labelled
  containers and zero new sandbox-uid processes on the host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from referee.sandbox.image import build_image
from referee.sandbox.pool import SandboxPool
from tests.sandbox.helpers import labelled_containers, make_sandbox_settings, sandbox_uid_processes


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    return build_image(make_sandbox_settings(), log=lambda _msg: None)


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers_after_session(request: pytest.FixtureRequest) -> Iterator[None]:
    """At the end of the session: no labelled container and no sandbox-uid process remain."""
    before = set(sandbox_uid_processes())
    yield
    if not any(item.get_closest_marker("docker") for item in request.session.items):
        return
    assert labelled_containers() == [], "sandbox containers left behind"
    # Another run's live containers (a parallel run on the same engine) are not ours to judge.
    others = set(labelled_containers(every_run=True))
    left = {
        pid: cid for pid, cid in sandbox_uid_processes().items() if pid not in before and cid not in others
    }
    assert left == {}, f"sandbox-uid processes left on the host: {left}"


@pytest.fixture
def escape_check() -> Iterator[None]:
    """After the test: every sandbox-uid process on the host is inside a live sandbox container."""
    yield
    live = set(labelled_containers(every_run=True))
    escaped = {pid: cid for pid, cid in sandbox_uid_processes().items() if cid not in live}
    assert escaped == {}, f"processes outside any live sandbox container: {escaped}"


@pytest.fixture
async def sandbox_pool(sandbox_image: str) -> AsyncIterator[SandboxPool]:
    pool = SandboxPool(make_sandbox_settings())
    await pool.start()
    healthy, reason = pool.health()
    assert healthy, reason
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def one_container(sandbox_image: str) -> AsyncIterator[SandboxPool]:
    """A pool of exactly one container, so consecutive programs share it."""
    pool = SandboxPool(make_sandbox_settings(pool_size=1, max_parallel=1))
    await pool.start()
    try:
        yield pool
    finally:
        await pool.close()
