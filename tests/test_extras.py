"""Without an optional extra the suite still collects: what needs it skips, saying how to install it.

Each check collects the whole suite in a subprocess where the extras' modules and
distributions are hidden (tests/support/without_extras.py), as in a virtualenv that lacks
them, and fails on any collection error: without every extra at once (every guard has to hold
on its own, the runner's packages excepted), and without one extra at a time (a module guarded
only by another extra's import: Ray comes with `trainers`, Ray Serve only with `ray`). Each
collection takes seconds (two run at once), hence `slow`: `make test` runs them, `make
test-fast` does not.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.support.without_extras import EXTRAS, REPO

SKIPPED = re.compile(r"^SKIPPED \[\d+\] (?P<where>\S+): (?P<reason>.*)$", re.MULTILINE)


def collect_without(*extras: str) -> str:
    """The collection's report with `extras` hidden (all of them when none is named)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.without_extras", *extras],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = done.stdout + done.stderr
    errors = [line for line in out.splitlines() if "ERROR collecting" in line or line.startswith("E   ")]
    assert done.returncode == 0 and not errors, "\n".join(errors) or out[-8000:]
    return out


@pytest.fixture(scope="module")
def collections(request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, ...], Future[str]]]:
    """The collections the selected tests of this module check, started at once and run two at
    a time (each is a process that mostly imports, ~15 s): half the time on two cores."""
    wanted: list[tuple[str, ...]] = []
    for item in request.session.items:
        if item.path == request.path and "collections" in getattr(item, "fixturenames", ()):
            params = getattr(item, "callspec", None)
            wanted.append((params.params["extra"],) if params is not None else ())
    with ThreadPoolExecutor(max_workers=2) as runs:
        yield {hidden: runs.submit(collect_without, *hidden) for hidden in dict.fromkeys(wanted)}


def module_skips(out: str) -> dict[str, str]:
    return {m["where"]: m["reason"] for m in SKIPPED.finditer(out)}


@pytest.mark.slow
def test_without_any_extra_the_suite_collects_and_skips_with_a_reason(
    collections: dict[tuple[str, ...], Future[str]],
) -> None:
    skips = module_skips(collections[()].result())
    # Hiding took effect: the trainer and deployment suites cannot have run their imports.
    assert any(where.startswith("tests/trainer_adapter/test_grpo_loss.py") for where in skips), skips
    assert any(where.startswith("tests/deploy/test_ray_serve.py") for where in skips), skips
    unexplained = {where: reason for where, reason in skips.items() if "pip install" not in reason}
    assert not unexplained, f"skipped without saying how to install what is missing: {unexplained}"


@pytest.mark.slow
@pytest.mark.parametrize("extra", EXTRAS)
def test_without_one_extra_the_suite_collects(
    extra: str, collections: dict[tuple[str, ...], Future[str]]
) -> None:
    skips = module_skips(collections[(extra,)].result())
    unexplained = {where: reason for where, reason in skips.items() if "pip install" not in reason}
    assert not unexplained, f"skipped without saying how to install what is missing: {unexplained}"


def test_the_blocker_hides_an_extra_and_keeps_the_runner() -> None:
    code = (
        "import importlib.metadata as md\n"
        "from tests.support.without_extras import hide_extras\n"
        "hide_extras(['postgres'])\n"
        "import referee.service, pytest, hypothesis\n"
        "names = {d.metadata['Name'] for d in md.distributions()}\n"
        "assert 'psycopg' not in names and 'pytest' in names, sorted(names)\n"
        "try:\n"
        "    import psycopg\n"
        "except ModuleNotFoundError:\n"
        "    print('hidden')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "hidden", done.stdout + done.stderr
