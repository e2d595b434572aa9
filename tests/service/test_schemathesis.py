"""The OpenAPI document describes what the service does (issue 14, defects 1 and 2; issue 32).

Schemathesis runs against a live service (real uvicorn, keys configured so that the auth
checks apply): every phase (examples, coverage, fuzzing, stateful over the document's links),
every check, a fixed seed and a bounded number of examples per operation, and must find
nothing, as the admin, as an API key and without keys. The built-in checks are configured
narrowly (`_config`): 503 is not counted as a server error (our check holds it to the
document), and on the operations that list refusals beyond JSON Schema (`REFUSALS`: lists of
equal length, a registered type's reference, examples that must reproduce) a 422 may answer a
schema-valid request, but only one that list names, verified by `refusals_are_documented`
(`tests/service/schemathesis_hooks.py`); every other operation gets the built-in
`positive_data_acceptance` as it is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from referee.service.background import BackgroundServer
from referee.service.openapi_refusals import REFUSALS
from tests.conftest import REPO, make_settings
from tests.registered.conftest import SECRET_KEY
from tests.timing import within

ADMIN, API = "schemathesis-admin", "schemathesis-api"
SEED = 20261203
MAX_EXAMPLES = 40
# The coverage phase walks every branch of the per-verifier schemas (about a minute): once, as
# the admin; the other callers run the phases whose outcome depends on who asks.
PHASES = {"admin": "examples,coverage,fuzzing,stateful", "api": "examples,fuzzing,stateful"}


# What the built-in positive_data_acceptance expects, plus 422 (checked by our hook) on the
# operations whose refusals beyond the schema the document lists.
_ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]


def _config(path: Path) -> Path:
    lines = ["[checks.not_a_server_error]", 'expected-statuses = ["2xx", "3xx", "4xx", "503"]', ""]
    # A DELETE of a running audit cancels it and keeps it (its job says `cancelled`; a second
    # DELETE forgets it): `use_after_free` would read the kept job as a deletion that failed.
    lines += [
        "[[operations]]",
        'include-name = "GET /v1/audits/{audit_id}"',
        "checks.use_after_free.enabled = false",
        "",
    ]
    for path_, method in REFUSALS:
        lines += [
            "[[operations]]",
            f'include-name = "{method.upper()} {path_}"',
            f"checks.positive_data_acceptance.expected-statuses = {_ACCEPTED!r}".replace("'", '"'),
            "",
        ]
    path.write_text("\n".join(lines))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("caller", ["admin", "api", "open"])
def test_schemathesis_finds_no_failure(tmp_path: Path, caller: str) -> None:
    """As the admin and as an API key (the auth checks apply: 401 without a key, 403 for
    registrations, the 429 quota documented), and without keys (open mode: the document then
    declares no security and no 401/403/429)."""
    pytest.importorskip("schemathesis", reason="needs the `dev` extra: pip install -e '.[dev]'")
    auth: dict[str, object] = {"admin_keys": [ADMIN], "api_keys": [API]} if caller != "open" else {}
    if auth:
        # `ignored_auth` probes every operation with a wrong key, all from loopback: past the
        # wrong-key limit every request would be 429 and the run would test nothing else.
        auth.update(ui_login_max_failures=10_000, ui_login_max_failures_all_clients=10_000)
    settings = make_settings(
        secret_keys=[SECRET_KEY],
        webhook_allowed_hosts=["127.0.0.1"],
        db_path=tmp_path / "referee.db",
        **auth,
    )
    key = {"admin": ADMIN, "api": API}.get(caller)
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(_config(tmp_path / "schemathesis.toml")),
        "--no-color",
        "run",
        "--checks",
        "all",
        *(["--header", f"Authorization: Bearer {key}"] if key else []),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--phases",
        PHASES.get(caller, PHASES["api"]),
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
    # It did test: every operation of the document, in every phase, the stateful one included.
    selected = re.search(r"(\d+) selected / (\d+) total", out)
    assert selected and selected[1] == selected[2] and int(selected[1]) >= 13, out[-5000:]
    assert f"Tested: {selected[1]}" in out, out[-5000:]
    for phase in PHASES.get(caller, PHASES["api"]).split(","):
        assert f"✅  {phase.title()}" in out or f"✅ {phase.title()}" in out, out[-5000:]
    assert "failure" not in out.rsplit("SUMMARY", 1)[-1].lower(), out[-5000:]
