"""/v1/score and /v1/groups through a real uvicorn server."""

from __future__ import annotations

import statistics

import httpx
import pytest

from referee.service.background import BackgroundServer


@pytest.fixture()
def http(server: BackgroundServer) -> httpx.Client:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def test_single_verdict_shape(http: httpx.Client) -> None:
    r = http.post("/v1/score", json={"verifier": "exact", "response": " Paris", "reference": "Paris"})
    assert r.status_code == 200
    body = r.json()
    assert body["score"] == 1.0 and body["status"] == "ok" and body["verifier"] == "exact@1"
    assert isinstance(body["details"], dict) and body["duration_ms"] >= 0


def test_wrong_answer_is_ok_with_zero_and_reason(http: httpx.Client) -> None:
    body = http.post("/v1/score", json={"verifier": "exact", "response": "Lyon", "reference": "Paris"}).json()
    assert body["status"] == "ok" and body["score"] == 0.0 and body["reason"]


def test_batch_keeps_request_order(http: httpx.Client) -> None:
    items = [{"verifier": "exact", "response": str(i % 3), "reference": "1"} for i in range(30)]
    r = http.post("/v1/score", json={"items": items})
    assert r.status_code == 200
    scores = [v["score"] for v in r.json()["verdicts"]]
    assert scores == [1.0 if i % 3 == 1 else 0.0 for i in range(30)]


def test_unknown_verifier_is_404_listing_known_names(http: httpx.Client) -> None:
    r = http.post("/v1/score", json={"verifier": "nope", "response": "a", "reference": "a"})
    assert r.status_code == 404
    body = r.json()
    assert body["error"] == "unknown_verifier" and "exact" in body["detail"]["known"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"verifier": "exact", "respons": "a", "reference": "a"}, ["body", "respons"]),
        ({"verifier": "exact", "response": 5, "reference": "a"}, ["body", "response"]),
        ({"verifier": "exact", "response": "a", "reference": {"x": 1}}, ["reference"]),
        (
            {"verifier": "exact", "response": "a", "reference": "a", "options": {"case": 1}},
            ["options", "case"],
        ),
        ({"verifier": "regex", "response": "a", "reference": "(unclosed"}, ["reference"]),
        # (a number would be its decimal text, as trainers store answers: not an error)
        ({"items": [{"verifier": "exact", "response": "a", "reference": [3]}]}, ["items", 0, "reference"]),
    ],
)
def test_validation_errors_name_the_field(http: httpx.Client, payload: dict, field: list) -> None:
    r = http.post("/v1/score", json=payload)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "validation_error"
    assert any(d["loc"][: len(field)] == field for d in body["detail"]), body


def test_malformed_json_is_a_json_422(http: httpx.Client) -> None:
    r = http.post("/v1/score", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["error"] == "validation_error"
    assert "Traceback" not in r.text


def test_group_rewards_and_advantages_match_independent_computation(http: httpx.Client) -> None:
    responses = ["4", "5", "4", "x", "4", "3"]
    r = http.post(
        "/v1/groups", json={"groups": [{"verifier": "exact", "reference": "4", "responses": responses}]}
    )
    assert r.status_code == 200
    (group,) = r.json()["groups"]
    rewards = [1.0 if x == "4" else 0.0 for x in responses]
    assert group["rewards"] == rewards
    mean, std = statistics.fmean(rewards), statistics.stdev(rewards)  # sample std, ddof=1
    assert group["mean"] == pytest.approx(mean) and group["std"] == pytest.approx(std)
    assert group["advantages"] == pytest.approx([(x - mean) / (std + 1e-4) for x in rewards])
    assert group["zero_variance"] is False


def test_dr_grpo_scale_none_only_centres(http: httpx.Client) -> None:
    body = {
        "groups": [{"verifier": "exact", "reference": "a", "responses": ["a", "b", "b", "b"]}],
        "advantage": {"scale": "none"},
    }
    (group,) = http.post("/v1/groups", json=body).json()["groups"]
    assert group["advantages"] == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_zero_variance_group_has_zero_advantages(http: httpx.Client) -> None:
    body = {"groups": [{"verifier": "exact", "reference": "a", "responses": ["b", "c", "d"]}]}
    (group,) = http.post("/v1/groups", json=body).json()["groups"]
    assert group["zero_variance"] is True and group["advantages"] == [0.0, 0.0, 0.0]


def test_weighted_components_sum_into_reward(http: httpx.Client) -> None:
    body = {
        "groups": [
            {
                "verifier": [
                    {"name": "exact", "weight": 1.0, "options": {"case_sensitive": False}},
                    {"name": "regex", "weight": 0.25, "options": {"mode": "search"}},
                ],
                "reference": "abc",
                "responses": ["ABC", "abc", "xyz", "xabcx"],
            }
        ]
    }
    (group,) = http.post("/v1/groups", json=body).json()["groups"]
    assert group["rewards"] == pytest.approx([1.0, 1.25, 0.0, 0.25])
    assert len(group["verdicts"][0]["details"]["components"]) == 2


def test_error_verdicts_are_masked_out_of_the_statistics(http: httpx.Client) -> None:
    body = {"groups": [{"verifier": "test.raising", "responses": ["a", "boom", "b"]}]}
    (group,) = http.post("/v1/groups", json=body).json()["groups"]
    assert [v["status"] for v in group["verdicts"]] == ["ok", "error", "ok"]
    assert group["verdicts"][1]["score"] is None and "RuntimeError" in group["verdicts"][1]["reason"]
    assert group["rewards"] == [1.0, None, 1.0]
    assert group["advantages"] == [0.0, None, 0.0]
    assert group["mean"] == 1.0


def test_out_of_range_score_is_an_error_not_a_reward(http: httpx.Client) -> None:
    body = http.post("/v1/score", json={"verifier": "test.out_of_range", "response": "bad"}).json()
    assert body["status"] == "error" and body["score"] is None


def test_reference_prepared_once_per_worker_for_a_group(http: httpx.Client) -> None:
    # A fresh reference, never seen by any worker: each worker prepares it at most once.
    reference = "group-cache-probe"
    body = {"groups": [{"verifier": "test.prepare_counter", "reference": reference, "responses": ["r"] * 64}]}
    (group,) = http.post("/v1/groups", json=body).json()["groups"]
    by_pid: dict[int, set[int]] = {}
    for v in group["verdicts"]:
        by_pid.setdefault(v["details"]["pid"], set()).add(v["details"]["prepares"])
    assert len(by_pid) <= 2
    # Within one worker the counter never moved during the group: one prepare served all.
    assert all(len(counts) == 1 for counts in by_pid.values())


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        ({"groups": []}, 422),
        ({"groups": [{"verifier": "exact", "reference": "a", "responses": []}]}, 422),
        ({"groups": [{"verifier": [], "reference": "a", "responses": ["a"]}]}, 422),
        (
            {
                "groups": [{"verifier": "exact", "reference": "a", "responses": ["a"]}],
                "advantage": {"scale": "x"},
            },
            422,
        ),
        ({"groups": [{"verifier": "zzz", "reference": "a", "responses": ["a"]}]}, 404),
    ],
)
def test_bad_groups_are_rejected(http: httpx.Client, payload: dict, status: int) -> None:
    r = http.post("/v1/groups", json=payload)
    assert r.status_code == status, r.text
    assert "error" in r.json()


def test_per_response_options_drive_length_shaping(http: httpx.Client) -> None:
    # DAPO overlong penalty with token counts the trainer knows and the service cannot.
    body = {
        "groups": [
            {
                "verifier": [
                    {"name": "exact", "weight": 1.0},
                    {
                        "name": "length.overlong",
                        "weight": 1.0,
                        "options": {"unit": "tokens", "max_length": 100, "cache_length": 20},
                    },
                ],
                "reference": "a",
                "responses": ["a", "a", "b"],
                "response_options": [{"length": 50}, {"length": 90}, {"length": 120}],
            }
        ]
    }
    r = http.post("/v1/groups", json=body)
    assert r.status_code == 200, r.text
    (group,) = r.json()["groups"]
    assert group["rewards"] == pytest.approx([1.0, 1.0 - 0.5, 0.0 - 1.0])


def test_per_response_options_must_match_and_be_used(http: httpx.Client) -> None:
    base = {"verifier": "exact", "reference": "a", "responses": ["a", "b"]}
    r = http.post("/v1/groups", json={"groups": [{**base, "response_options": [{}]}]})
    assert r.status_code == 422
    r = http.post("/v1/groups", json={"groups": [{**base, "response_options": [{"lenght": 3}, {}]}]})
    assert r.status_code == 422 and "lenght" in r.json()["message"]


def test_a_single_weighted_component_applies_its_weight(http: httpx.Client) -> None:
    body = {
        "groups": [
            {"verifier": [{"name": "exact", "weight": 0.5}], "reference": "4", "responses": ["4", "5"]}
        ]
    }
    (group,) = http.post("/v1/groups", json=body).json()["groups"]
    assert group["rewards"] == [0.5, 0.0]


@pytest.mark.parametrize(
    "group",
    [
        {
            "verifier": [{"name": "exact", "weight": 1e308}, {"name": "exact", "weight": 1e308}],
            "reference": "a",
            "responses": ["a"],
        },
        {
            "verifier": [{"name": "exact"}],
            "options": {"case_sensitive": False},
            "reference": "a",
            "responses": ["a"],
        },
    ],
)
def test_unusable_groups_are_422_not_500(http: httpx.Client, group: dict) -> None:
    r = http.post("/v1/groups", json={"groups": [group]})
    assert r.status_code == 422, r.text


def test_a_non_numeric_score_is_an_error_verdict(http: httpx.Client) -> None:
    r = http.post(
        "/v1/score", json={"items": [{"verifier": "test.not_a_number", "response": x} for x in ("ok", "bad")]}
    )
    assert r.status_code == 200, r.text
    first, second = r.json()["verdicts"]
    assert first["score"] == 1.0
    assert second["status"] == "error" and second["score"] is None
