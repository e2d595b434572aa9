"""The probe battery passes for every built-in verifier (issue 15 §1, "must show").

Each probe is scored in-process by the verifier itself (validate, prepare, check, as the worker
does); the `code` battery runs in the real sandbox (test_code_battery.py). A probe a verifier
fails is a verifier bug, kept here as a strict xfail that names it (file ownership: verifiers/
is not this change's to fix).
"""

from __future__ import annotations

from typing import Any

import pytest

from referee.audit import Probe, battery
from referee.audit.probes import BATTERY_KINDS
from referee.verifiers import Check, load_installed

INSTALLED = load_installed(plugins=False)
CPU_KINDS = [
    n
    for n in INSTALLED.names()
    if n in ("math", "numeric", "exact", "multiple_choice") or n.startswith(("logic.", "format."))
]
# Verifier holes the probes found and that are not fixed yet: (verifier, probe) -> the bug.
KNOWN_BUGS: dict[tuple[str, str], str] = {}


def _cases() -> list[Any]:
    cases = []
    for name in CPU_KINDS:
        for probe in battery(name):
            marks = []
            bug = KNOWN_BUGS.get((name, probe.name))
            if bug:
                marks.append(pytest.mark.xfail(strict=True, reason=bug))
            cases.append(pytest.param(probe, id=f"{name}/{probe.name}", marks=marks))
    return cases


def _judge(probe: Probe) -> Check:
    verifier = INSTALLED.get(probe.verifier)
    return verifier.score(probe.response, probe.reference, probe.options)


@pytest.mark.parametrize("probe", _cases())
def test_probe(probe: Probe) -> None:
    check = _judge(probe)
    assert probe.passes("ok", check.score), (probe.response, check.score, check.reason)


def test_every_builtin_kind_has_a_battery_with_controls_and_the_attacks() -> None:
    # The judges' battery (probes scored by a model judge) is issue 29's later gate.
    kinds = [n for n in INSTALLED.names() if not n.startswith(("length.", "regex", "judge_"))]
    assert "code" in kinds and any(k.startswith("logic.") for k in kinds)
    for name in kinds:
        probes = battery(name)
        assert any(p.control for p in probes), name
        attacks = {p.attack for p in probes if not p.control}
        assert {"empty", "injection"} <= attacks, (name, attacks)
        if name != "code":
            assert {"whitespace", "think_only"} <= attacks, (name, attacks)
            assert attacks & {"hedge", "spray"} and "retraction" in attacks, (name, attacks)
    code_attacks = {p.attack for p in battery("code")}
    assert {"constant", "echo", "exit_early", "always_equal", "result_channel"} <= code_attacks
    assert set(BATTERY_KINDS) >= {"math", "numeric", "exact", "multiple_choice", "code", "logic.*"}


def test_a_battery_needs_controls_to_pass() -> None:
    """A verifier that rejects everything fails the battery: its controls score 0."""
    for name in CPU_KINDS:
        controls = [p for p in battery(name) if p.control]
        assert controls and not any(p.passes("ok", 0.0) for p in controls), name
        attacks = [p for p in battery(name) if not p.control]
        assert all(p.passes("ok", 0.0) for p in attacks)
        assert not any(p.passes("ok", 1.0) for p in attacks), name


def test_error_verdicts_pass_nothing() -> None:
    for probe in battery("math"):
        assert not probe.passes("error", None)


def test_registered_and_shaping_kinds_have_no_fixed_battery() -> None:
    assert battery("keywords@3") == [] and battery("length.cosine") == [] and battery("regex") == []
