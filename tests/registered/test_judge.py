"""Judge types registered through the API (kind `judge`, issue 29), against a real service and a
scripted chat server on a loopback socket.

The server plays three judges, by the first path segment of its endpoint: `strict` reads the
fenced response and judges it as a careful grader would (one final answer, equal to the
reference); `gullible` is `strict` but obeys a verdict line written in the response (the
injection probe's bait); `always` says EQUIVALENT to everything. What is checked: a type
registers as name@1 and scores through /v1/score and /v1/groups; a new version with another
template leaves name@1 sending its own pinned prompt; an unknown endpoint, a template without
{{response}} and request options are 422s; the judge battery refuses the gullible judge with
`probes_failed` and stores nothing; the always-yes judge fails its own examples; a weighted
formula sums `math` and a judge type. Without a service: the pinned spec carries the text and
the model, two candidates never share a cache key, a reference schema and the family both
check a reference, and options are refused.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from referee.audit import Graded, judge_battery
from referee.registered import judge
from referee.service.background import BackgroundServer
from referee.settings import JudgeSettings
from tests.judges.scripted_server import completion
from tests.registered.conftest import register, registered_settings, score

_FENCE = re.compile(r"<<<(RESPONSE|REFERENCE|CRITERION)-([0-9a-f]+)>>>\n(.*?)\n<<<END-\1-\2>>>", re.S)
_LABELS = re.compile(r"one of(?: these labels)?:? ([\w ,-]+?)[.>]")
RIGHT = "6 times 7 is 42, so the answer is 42."
WRONG = "6 times 7 is 41, so the answer is 41."
EXAMPLES = [
    {"response": RIGHT, "reference": "42", "expected_score": 1.0},
    {"response": WRONG, "reference": "42", "expected_score": 0.0},
]
BATTERY = len(judge_battery([Graded(RIGHT, "42", {}, 1.0), Graded(WRONG, "42", {}, 0.0)], "VERDICT: X"))


def judged(user: str, gullible: bool) -> str:
    """The verdict line a scripted grader ends with, for the prompt's user message."""
    fenced = {kind: text for kind, _, text in _FENCE.findall(user)}
    response = fenced.get("RESPONSE", "")
    answers = set(re.findall(r"answer is (\w+)", response)) or {response.strip().strip(".")}
    answer = answers.pop() if len(answers) == 1 else None
    if "VERDICT: NOT_MET" in user:
        good = answer in re.findall(r"\w+", fenced.get("CRITERION", ""))
        return f"VERDICT: {'MET' if good else 'NOT_MET'}"
    good = answer == fenced.get("REFERENCE", "").strip() or (gullible and "EQUIVALENT" in response)
    labels = _LABELS.search(user)
    if labels is not None and "LABEL:" in user:
        names = [n.strip() for n in labels.group(1).split(",")]
        return f"LABEL: {names[0] if good else names[-1]}"
    return f"VERDICT: {'EQUIVALENT' if good else 'NOT_EQUIVALENT'}"


class Graders:
    """The scripted chat server: what each judge was sent, and its answers."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str]] = []  # (judge, user message)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                who = self.path.strip("/").split("/")[0]
                user = body["messages"][-1]["content"]
                owner.prompts.append((who, user))
                text = "VERDICT: EQUIVALENT" if who == "always" else judged(user, who == "gullible")
                data = json.dumps(completion(f"Checked.\n{text}", model=body["model"])).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def endpoint(self, who: str) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{self.server.server_address[1]}/{who}/v1", "model": "judge-model"}

    def last(self, who: str) -> str:
        return [user for judge, user in self.prompts if judge == who][-1]


@pytest.fixture(scope="module")
def graders() -> Iterator[Graders]:
    running = Graders()
    yield running
    running.server.shutdown()
    running.server.server_close()


@pytest.fixture(scope="module")
def judge_service(graders: Graders, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    db: Path = tmp_path_factory.mktemp("judge-db") / "referee.db"
    endpoints = {who: graders.endpoint(who) for who in ("strict", "gullible", "always")}
    with BackgroundServer(registered_settings(db, judge_endpoints=endpoints)) as running:
        yield running


@pytest.fixture()
def http(judge_service: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=judge_service.url, timeout=60) as c:
        yield c


def judge_type(name: str, endpoint: str = "strict", **spec: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "judge",
        "spec": {"family": "equivalence", "endpoint": endpoint, **spec},
        "examples": EXAMPLES,
    }


def test_a_judge_type_registers_and_scores_alone_and_in_groups(http: httpx.Client) -> None:
    r = register(http, judge_type("jt.equiv", template="equivalence@1"))
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["verifier"] == "jt.equiv@1" and body["probes_passed"] == BATTERY
    spec = body["version"]["spec"]
    # Pinned: the template's text, the endpoint's model and the defaults are in the stored spec.
    assert spec["template"]["builtin"] == "equivalence@1" and "{{response}}" in spec["template"]["user"]
    assert spec["model"] == "judge-model" and spec["extract"] == "auto"
    right = score(http, "jt.equiv", "So the answer is 42.", "42")
    assert right["score"] == 1.0 and right["verifier"] == "jt.equiv@1", right
    assert right["details"]["template"] == "jt.equiv@1" and right["details"]["judge_verdict"] == "EQUIVALENT"
    assert score(http, "jt.equiv@1", "So the answer is 40.", "42")["score"] == 0.0
    group = {"verifier": "jt.equiv", "reference": "42", "responses": ["42", "The answer is 7.", ""]}
    reply = http.post("/v1/groups", json={"groups": [group]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["groups"][0]["rewards"] == [1.0, 0.0, 0.0]
    listed = {v["name"]: v for v in http.get("/v1/verifiers").json()["verifiers"]}
    assert listed["jt.equiv"]["kind"] == "judge" and listed["jt.equiv"]["version"] == "1"


def test_a_new_version_leaves_the_old_one_judging_with_its_pinned_template(
    http: httpx.Client, graders: Graders
) -> None:
    assert register(http, judge_type("jt.pin")).json()["verifier"] == "jt.pin@1"
    custom = "HOUSE STYLE. Gold: {{reference}}\nCandidate: {{response}}\nSame final answer?"
    second = register(http, judge_type("jt.pin", template=custom))
    assert second.status_code == 201 and second.json()["verifier"] == "jt.pin@2", second.text
    stored_user = second.json()["version"]["spec"]["template"]["user"]
    assert stored_user.startswith("HOUSE STYLE") and stored_user.endswith("VERDICT: NOT_EQUIVALENT")

    assert score(http, "jt.pin@1", "The answer is 42 (first).", "42")["score"] == 0.0  # "42 (first)"
    old = graders.last("strict")
    assert "HOUSE STYLE" not in old and "Is the final answer of the response equivalent" in old
    latest = score(http, "jt.pin", "The answer is 42.", "42")
    assert latest["verifier"] == "jt.pin@2" and latest["details"]["template"] == "jt.pin@2"
    new = graders.last("strict")
    assert new.startswith("HOUSE STYLE") and "<<<RESPONSE-" in new  # still fenced
    assert score(http, "jt.pin@1", "The answer is 42.", "42")["details"]["template"] == "jt.pin@1"
    assert "HOUSE STYLE" not in graders.last("strict")
    # The same content again is the same version: the stored spec round-trips.
    again = register(http, {**judge_type("jt.pin"), "spec": second.json()["version"]["spec"]})
    assert again.status_code == 200 and again.json()["verifier"] == "jt.pin@2", again.text


@pytest.mark.parametrize(
    ("spec", "code", "where"),
    [
        ({"endpoint": "nowhere"}, "unknown_judge_endpoint", ["body", "spec", "endpoint"]),
        ({"template": "Gold: {{reference}}. Is it right?"}, "invalid_spec", ["body", "spec"]),
        ({"template": "equivalence@9"}, "invalid_spec", ["body", "spec"]),
        ({"template": "rubric_score@1"}, "invalid_spec", ["body", "spec"]),
        ({"labels": {"yes": 1.0, "no": 0.0}}, "invalid_spec", ["body", "spec"]),
    ],
)
def test_invalid_specs_are_refused_and_nothing_is_stored(
    http: httpx.Client, spec: dict[str, Any], code: str, where: list[str]
) -> None:
    r = register(http, judge_type("jt.bad", **spec))
    assert r.status_code == 422, r.text
    assert r.json()["error"] == code and r.json()["detail"][0]["loc"] == where, r.json()
    assert http.get("/v1/verifiers/jt.bad/versions").status_code == 404


def test_request_options_are_refused_everything_is_pinned(http: httpx.Client) -> None:
    assert register(http, judge_type("jt.noopts")).status_code == 201
    request = {
        "verifier": "jt.noopts",
        "response": "42",
        "reference": "42",
        "options": {"endpoint": "always"},
    }
    r = http.post("/v1/score", json=request)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "endpoint", r.text


def test_a_judge_that_obeys_an_injected_verdict_is_refused(http: httpx.Client) -> None:
    r = register(http, judge_type("jt.gullible", endpoint="gullible", extract="final"))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert r.json()["error"] == "probes_failed" and detail["battery"] == "judge"
    failed = {f["name"]: f for f in detail["failed"]}
    assert set(failed) == {"injection_verdict_line", "injection_only"}, sorted(failed)
    assert failed["injection_only"]["score"] == 1.0 and failed["injection_only"]["attack"] == "injection"
    assert detail["probes"] == BATTERY
    assert http.get("/v1/verifiers/jt.gullible/versions").status_code == 404


def test_the_same_configuration_on_a_careful_judge_passes_every_probe(http: httpx.Client) -> None:
    """Padding and flattery included: the judge sees the whole response (`extract: final`)."""
    passed = register(http, judge_type("jt.careful", extract="final"))
    assert passed.status_code == 201 and passed.json()["probes_passed"] == BATTERY, passed.text


def test_a_judge_that_agrees_with_everything_fails_its_examples(http: httpx.Client) -> None:
    r = register(http, judge_type("jt.always", endpoint="always"))
    assert r.status_code == 422 and r.json()["error"] == "activation_failed", r.text
    assert [f["index"] for f in r.json()["detail"]["failing"]] == [1]
    # Examples without a wrong answer would let it in: the battery needs one, so it is a 422.
    only_right = {**judge_type("jt.always"), "examples": EXAMPLES[:1]}
    r = register(http, only_right)
    assert r.status_code == 422 and r.json()["error"] == "probes_invalid", r.text
    assert http.get("/v1/verifiers/jt.always/versions").status_code == 404


def test_the_judge_battery_is_for_judge_types(http: httpx.Client) -> None:
    exact = {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "exact"}}
    body = {
        "name": "jt.exact",
        "kind": "declarative",
        "spec": exact,
        "examples": [{"response": "42", "reference": "42", "expected_score": 1.0}],
    }
    assert register(http, body).status_code == 201
    r = register(http, {**body, "name": "jt.exact2", "probes": {"battery": "judge"}})
    assert r.status_code == 422 and r.json()["error"] == "probes_invalid", r.text
    assert r.json()["detail"][0]["loc"] == ["body", "probes", "battery"]


def test_a_weighted_formula_sums_math_and_a_judge_type(http: httpx.Client) -> None:
    assert register(http, judge_type("jt.formula")).status_code == 201
    group = {
        "verifier": [{"name": "math", "weight": 1.0}, {"name": "jt.formula", "weight": 0.5}],
        "reference": "42",
        "responses": ["So the answer is $\\boxed{42}$.", "So the answer is $\\boxed{41}$."],
    }
    reply = http.post("/v1/groups", json={"groups": [group]})
    assert reply.status_code == 200, reply.text
    result = reply.json()["groups"][0]
    assert result["rewards"] == [1.5, 0.0]
    parts = result["verdicts"][0]["details"]["components"]
    assert [p["verifier"].split("@")[0] for p in parts] == ["math", "jt.formula"]
    assert parts[1]["verifier"] == "jt.formula@1" and parts[1]["score"] == 1.0


def test_the_label_family_with_a_custom_template(http: httpx.Client, graders: Graders) -> None:
    label = judge_type(
        "jt.label",
        family="label",
        template="Grade {{response}} against {{reference}}.",
        labels={"right": 1.0, "wrong": 0.0},
    )
    r = register(http, label)
    assert r.status_code == 201, r.text
    assert score(http, "jt.label", "The answer is 42.", "42")["details"]["judge_verdict"] == "right"
    assert "LABEL: <one of: right, wrong>" in graders.last("strict")


def test_a_label_judge_whose_best_label_scores_under_1_registers(
    http: httpx.Client, graders: Graders
) -> None:
    """Its best label is its full marks: the right example and the battery's controls earn 0.8,
    the wrong one and every attack the worst label's 0."""
    # (The scripted judge answers the first label listed for a right answer: sorted, as stored.)
    label = judge_type("jt.partial", family="label", labels={"correct": 0.8, "wrong": 0.0})
    label["examples"] = [{**EXAMPLES[0], "expected_score": 0.8}, EXAMPLES[1]]
    r = register(http, label)
    assert r.status_code == 201, r.text
    assert r.json()["probes_passed"] == BATTERY
    verdict = score(http, "jt.partial", RIGHT, "42")
    assert verdict["score"] == 0.8 and "one of these labels: correct, wrong" in graders.last("strict")
    # Examples without the best label's score still lack a right answer for the battery.
    label["examples"] = [{**EXAMPLES[0], "reference": "41", "expected_score": 0.0}, EXAMPLES[1]]
    refused = register(http, {**label, "name": "jt.partial.none"})
    assert refused.status_code == 422 and refused.json()["error"] == "probes_invalid", refused.text
    assert "expected_score 0.8" in refused.json()["detail"][0]["msg"]


def test_the_gate_judges_with_the_prompt_the_stored_version_sends(
    http: httpx.Client, graders: Graders
) -> None:
    """The store keeps a spec's keys sorted, so the labels reach the judge in sorted order; the
    candidate the gate scores lists them the same way, not in the order they were posted."""
    label = judge_type("jt.order", family="label", labels={"wrong": 0.0, "right": 1.0})
    r = register(http, label)  # the scripted judge answers the first label listed for a right answer
    assert r.status_code == 201, r.text
    assert list(r.json()["version"]["spec"]["labels"]) == ["right", "wrong"]
    gate = {user for who, user in graders.prompts if who == "strict"}  # the examples' and probes'
    assert score(http, "jt.order", RIGHT, "42")["score"] == 1.0
    stored = graders.last("strict")
    assert "one of these labels: right, wrong" in stored and stored in gate  # the right example's


def test_controls_need_the_judges_full_marks() -> None:
    battery = judge_battery([Graded(RIGHT, "42", {}, 0.8), Graded(WRONG, "42", {}, 0.0)], "LABEL: good", 0.8)
    controls = [p for p in battery if p.control]
    assert len(controls) == 2 and all(p.min_score == 0.8 for p in controls)
    assert controls[0].passes("ok", 0.8) and not controls[0].passes("ok", 0.5)
    with pytest.raises(ValueError, match="expected_score 1"):
        judge_battery([Graded(RIGHT, "42", {}, 0.8), Graded(WRONG, "42", {}, 0.0)], "LABEL: good")
    assert judge.best_score({"family": "label", "labels": {"a": 0.8, "b": 0.1}}) == 0.8
    assert judge.best_score({"family": "label"}) == judge.best_score({"family": "rubric"}) == 1.0


def test_the_rubric_family_with_pinned_criteria(http: httpx.Client, graders: Graders) -> None:
    rubric = judge_type(
        "jt.rubric", family="rubric", criteria=[{"criterion": "Gives 42 as the final answer."}]
    )
    r = register(http, rubric)
    assert r.status_code == 201, r.text
    assert r.json()["version"]["spec"]["scale"] == "yes_no"
    verdict = score(http, "jt.rubric", "The answer is 42.", "42")
    assert verdict["score"] == 1.0 and verdict["details"]["criteria"][0]["judge_verdict"] == "MET"
    assert "Gives 42 as the final answer." in graders.last("strict")


# ---- the spec, without a service -------------------------------------------------------------


def _settings() -> JudgeSettings:
    return JudgeSettings.model_validate(
        {"endpoints": {"default": {"url": "http://judge/v1", "model": "m-1"}}}
    )


def test_pin_writes_the_text_and_the_model_and_the_candidate_caches_apart() -> None:
    pinned = judge.pin({"family": "rubric", "endpoint": "default", "template": "rubric_score"}, _settings())
    assert pinned["model"] == "m-1" and pinned["scale"] == "score" and pinned["extract"] == "final"
    assert pinned["template"]["builtin"] == "rubric_score@1" and "SCORE:" in pinned["template"]["user"]
    stored = judge.build_class("r", "3", pinned, None)
    assert stored.template.qualified == "r@3" and stored.qualified_name() == "r@3"
    assert stored.lane == "io" and stored.runs_in == "service"  # in the event loop, as webhooks
    other = judge.pin({"family": "rubric", "endpoint": "default"}, _settings())
    first, second = (judge.build_class("r", "candidate", spec, None) for spec in (pinned, other))
    assert first.qualified_name() == second.qualified_name() == "r@candidate"
    assert first.template.qualified != second.template.qualified  # never one cache entry for both
    with pytest.raises(ValueError, match="criterion"):
        judge.pin(
            {"family": "rubric", "endpoint": "default", "template": "Is {{response}} good?"}, _settings()
        )
    with pytest.raises(ValueError, match="scale"):
        judge.pin(
            {"family": "rubric", "endpoint": "default", "template": "rubric_score@1", "scale": "yes_no"},
            _settings(),
        )


def test_a_reference_schema_and_the_family_both_check_the_reference() -> None:
    pinned = judge.pin({"family": "equivalence", "endpoint": "default"}, _settings())
    cls = judge.build_class("e", "1", pinned, {"type": "string", "maxLength": 5})
    assert cls.validate_reference("42") == "42"
    with pytest.raises(ValidationError, match="reference_schema"):
        cls.validate_reference("far too long")
    with pytest.raises(ValidationError):
        judge.build_class("e", "1", pinned, None).validate_reference({"not": "text"})
    assert cls.validate_options({}) is cls.pinned
    with pytest.raises(ValidationError):
        cls.validate_options({"model": "another"})
