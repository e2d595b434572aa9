"""The OpenAPI document describes what the service does (issue 14, defects 1 and 2).

Schemathesis runs against a live service (real uvicorn, keys configured so that the auth
checks apply): every phase (examples, coverage, fuzzing, stateful over the document's links),
every check, a fixed seed and a bounded number of examples per operation, and must find
nothing. Two built-in checks are replaced by exact versions of the same promise
(`tests/service/schemathesis_hooks.py`): 5xx only as a documented 503, and 422 for a
schema-valid request only for what the document says is checked beyond the schema.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from referee.service.background import BackgroundServer
from tests.conftest import REPO, make_settings
from tests.registered.conftest import SECRET_KEY
from tests.timing import within

ADMIN, API = "schemathesis-admin", "schemathesis-api"
SEED = 20261203
MAX_EXAMPLES = 25


@pytest.mark.slow
@pytest.mark.parametrize("keys", [True, False], ids=["keys", "open"])
def test_schemathesis_finds_no_failure(tmp_path: Path, keys: bool) -> None:
    """With keys (the auth checks apply: 401 without one, the 429 quota documented) and
    without (open mode: the document then declares no security and no 401/403/429)."""
    pytest.importorskip("schemathesis", reason="needs the `dev` extra: pip install -e '.[dev]'")
    auth: dict[str, object] = {"admin_keys": [ADMIN], "api_keys": [API]} if keys else {}
    if keys:
        # `ignored_auth` probes every operation with a wrong key, all from loopback: past the
        # wrong-key limit every request would be 429 and the run would test nothing else.
        auth.update(ui_login_max_failures=10_000, ui_login_max_failures_all_clients=10_000)
    settings = make_settings(
        secret_keys=[SECRET_KEY],
        webhook_allowed_hosts=["127.0.0.1"],
        db_path=tmp_path / "referee.db",
        **auth,
    )
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--no-color",
        "run",
        "--checks",
        "all",
        "--exclude-checks",
        "not_a_server_error,positive_data_acceptance",
        *(["--header", f"Authorization: Bearer {ADMIN}"] if keys else []),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.service.schemathesis_hooks", "PYTHONPATH": str(REPO)}
    with BackgroundServer(settings) as server:
        run = subprocess.run(
            [*command, f"{server.url}/openapi.json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=within(300),
            check=False,
        )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-20000:]
    # It did test: every operation of the document.
    selected = re.search(r"(\d+) selected / (\d+) total", out)
    assert selected and selected[1] == selected[2] and int(selected[1]) >= 13, out[-5000:]
    assert f"Tested: {selected[1]}" in out, out[-5000:]
    assert "failure" not in out.rsplit("SUMMARY", 1)[-1].lower(), out[-5000:]
