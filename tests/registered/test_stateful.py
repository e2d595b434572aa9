"""Register -> score -> versions -> delete, in random orders, against a live service and a
model of what each step must do (hypothesis's rule-based state machine; derandomized, bounded).

Invariants: a version is created exactly when the content that decides verdicts changes
(kind, spec, reference schema; not the description), version numbers only grow and are never
reused after a DELETE, a name scores while it has an active version and is 404 otherwise,
`name@N` keeps scoring with version N until that version is disabled, and history is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from referee.service.background import BackgroundServer
from tests.registered.conftest import registered_settings

NAMES = ["st.alpha", "st.beta"]
COMPARATORS = ["exact", "numeric"]


def _body(name: str, comparator: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "declarative",
        "description": description,
        "spec": {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": comparator}},
        "examples": [
            {"response": "4", "reference": "4", "expected_score": 1.0},
            {"response": "5", "reference": "4", "expected_score": 0.0},
        ],
    }


@dataclass
class Model:
    versions: list[tuple[int, str, bool]] = field(default_factory=list)  # (version, comparator, active)

    def latest_active(self) -> tuple[int, str] | None:
        active = [(v, c) for v, c, on in self.versions if on]
        return active[-1] if active else None


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    db = Path(tmp_path_factory.mktemp("stateful")) / "r.db"
    with BackgroundServer(registered_settings(db)) as running:
        yield running


class Registry(RuleBasedStateMachine):
    url: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self.http = httpx.Client(base_url=self.url, timeout=60)
        # Each run starts from a clean slate: the names' active versions are disabled, and
        # what the database already holds (history of earlier runs) is taken as the model.
        self.model: dict[str, Model] = {}
        for name in NAMES:
            self.http.delete(f"/v1/verifiers/{name}")
            r = self.http.get(f"/v1/verifiers/{name}/versions")
            history = r.json()["versions"] if r.status_code == 200 else []
            self.model[name] = Model(
                [(v["version"], v["spec"]["compare"]["kind"], v["active"]) for v in history]
            )

    def teardown(self) -> None:
        self.http.close()

    @rule(
        name=st.sampled_from(NAMES),
        comparator=st.sampled_from(COMPARATORS),
        description=st.sampled_from(["a", "b"]),
    )
    def register(self, name: str, comparator: str, description: str) -> None:
        model = self.model[name]
        r = self.http.post("/v1/verifiers", json=_body(name, comparator, description))
        latest = model.latest_active()
        if latest is not None and latest[1] == comparator:  # same content: that version
            assert r.status_code == 200, r.text
            assert r.json()["created"] is False and r.json()["verifier"] == f"{name}@{latest[0]}"
            return
        assert r.status_code == 201, r.text
        number = r.json()["version"]["version"]
        assert number == 1 + max((v for v, _, _ in model.versions), default=0)  # never reused
        model.versions.append((number, comparator, True))

    @rule(name=st.sampled_from(NAMES), answer=st.sampled_from(["4", "4.0", "5"]), pin=st.booleans())
    def score(self, name: str, answer: str, pin: bool) -> None:
        model = self.model[name]
        target = name
        expected = model.latest_active()
        if pin and model.versions:
            number, comparator, active = model.versions[0]
            target, expected = f"{name}@{number}", (number, comparator) if active else None
        r = self.http.post("/v1/score", json={"verifier": target, "response": answer, "reference": "4"})
        if expected is None:
            assert r.status_code == 404 and r.json()["error"] == "unknown_verifier", r.text
            return
        assert r.status_code == 200, r.text
        number, comparator = expected
        right = answer == "4" or (answer == "4.0" and comparator == "numeric")
        assert r.json()["verifier"] == f"{name}@{number}"
        assert r.json()["score"] == (1.0 if right else 0.0)

    @rule(name=st.sampled_from(NAMES), pin=st.booleans())
    def delete(self, name: str, pin: bool) -> None:
        model = self.model[name]
        if pin and model.versions:
            number = model.versions[-1][0]
            r = self.http.delete(f"/v1/verifiers/{name}@{number}")
            assert r.status_code == 200, r.text
            was_active = model.versions[-1][2]
            assert r.json()["disabled"] == ([number] if was_active else [])
            model.versions[-1] = (number, model.versions[-1][1], False)
            return
        r = self.http.delete(f"/v1/verifiers/{name}")
        if not model.versions:
            assert r.status_code == 404
            return
        assert r.status_code == 200, r.text
        assert r.json()["disabled"] == [v for v, _, on in model.versions if on]
        model.versions = [(v, c, False) for v, c, _ in model.versions]

    @invariant()
    def history_is_kept(self) -> None:
        for name, model in self.model.items():
            r = self.http.get(f"/v1/verifiers/{name}/versions")
            if not model.versions:
                assert r.status_code == 404
                continue
            got = [(v["version"], v["spec"]["compare"]["kind"], v["active"]) for v in r.json()["versions"]]
            assert got == model.versions


def test_register_score_delete_state_machine(live: BackgroundServer) -> None:
    Registry.url = live.url
    run_state_machine_as_test(
        Registry,
        settings=settings(
            max_examples=12,
            stateful_step_count=10,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
