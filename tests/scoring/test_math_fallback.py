"""`math` with `options.fallback: "judge"`: the answers math could not read go to
`judge_equivalence`, and only those (scoring/fallback.py).

The judge is a scripted server on a real socket reached through the service's own transport
(`JudgeClients`): it answers EQUIVALENT for the answers a test lists, so each test knows what
the judge will say and counts the calls it got. The last test asks `transformers serve`,
whose nonsense never holds a verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from referee.errors import InputError
from referee.models import AdvantageConfig, GroupResult, GroupSpec, ScoreRequest, VerdictStatus
from referee.verifiers.math import MathVerifier
from tests.conftest import make_settings
from tests.judges.scripted_server import API_KEY, refused_port
from tests.scoring.judged import VerdictServer, in_process, judged_scorer
from tests.support.openai_server import OpenAIServer, require_serving

# Math cannot read these answers (LaTeX outside its grammar, a number in words)...
UNREADABLE_RIGHT = "So the count is $\\boxed{\\text{ten}}$."
UNREADABLE_WRONG = "Hence $\\boxed{\\mathcal{Q}}$."
# ... and the scripted judge calls the first equivalent to the gold "10".
EQUIVALENT = {"\\text{ten}"}
READABLE_RIGHT = "So \\boxed{10}."
READABLE_WRONG = "So \\boxed{11}."
HEDGE = "It is \\boxed{10} or \\boxed{11}."
DENIAL = "The answer is \\boxed{\\text{maybe } 10}."
THINK_ONLY = "<think>ten, probably"
FALLBACK = {"fallback": "judge"}


def math_group(
    responses: list[str], options: dict[str, Any] | None = None, reference: Any = "10"
) -> GroupSpec:
    return GroupSpec(
        verifier="math",
        reference=reference,
        responses=responses,
        options=FALLBACK if options is None else options,
    )


async def score(scorer: Any, *groups: GroupSpec) -> list[GroupResult]:
    return await scorer.score_groups(list(groups), AdvantageConfig())


@pytest.mark.parametrize(
    ("response", "gold", "unreadable"),
    [
        (UNREADABLE_WRONG, "10", True),  # LaTeX outside math's grammar
        (UNREADABLE_RIGHT, "10", True),  # words only
        ("\\boxed{x \\in A \\cap B}", "3", True),  # a relation math does not interpret
        ("\\boxed{x>1 \\cap x<3}", "2", True),  # an intersection it cannot reduce
        ("\\boxed{\\emptyset}", "\\text{No solution}", True),  # a gold compared by spelling only
        ("\\boxed{\\text{Tuesday}}", "\\text{Monday}", True),
        (READABLE_WRONG, "10", False),
        (HEDGE, "10", False),
        (DENIAL, "10", False),
        ("\\boxed{\\text{not } 10}", "10", False),
        (THINK_ONLY, "10", False),
        ("\\boxed{42}", "B", False),  # no letter for a choice: nothing a judge could compare
        ("\\boxed{\\text{Monday}} or \\boxed{\\text{Tuesday}}", "\\text{Monday}", False),
    ],
)
def test_math_flags_only_the_answers_it_could_not_read_or_compare(
    response: str, gold: str, unreadable: bool
) -> None:
    check = MathVerifier().score(response, gold)
    assert check.score == 0.0
    assert check.details.get("unreadable", False) is unreadable, check


async def test_an_unreadable_answer_the_judge_finds_equivalent_scores_1() -> None:
    with VerdictServer(equivalent=EQUIVALENT) as server:
        async with judged_scorer({"default": {"url": server.url("verdict")}}) as judged:
            (result,) = await score(judged.scorer, math_group([UNREADABLE_RIGHT]))
    (verdict,) = result.verdicts
    assert verdict.status is VerdictStatus.ok and verdict.score == 1.0 and result.rewards == [1.0]
    assert verdict.verifier.startswith("math@")  # still math's verdict, for statistics
    details = verdict.details
    assert details["fallback"] == "judge" and details["judge_verdict"] == "EQUIVALENT"
    assert details["math"]["score"] == 0.0 and details["math"]["unreadable"] is True
    assert details["math"]["reason"].startswith("could not read the answer")
    assert details["tokens"] == {"prompt": 11, "completion": 3}  # the judge's, from its usage
    assert "judge_equivalence@1 (fallback): equivalent" in (verdict.reason or "")
    sent = server.bodies("verdict")
    assert len(sent) == 1
    user = sent[0]["messages"][-1]["content"]
    assert "\n10\n" in user  # the gold's text is the judge's reference
    assert [(name, v.score) for name, v in judged.observed] == [("math", 1.0)]


async def test_an_unreadable_answer_the_judge_finds_different_scores_0() -> None:
    with VerdictServer(equivalent=EQUIVALENT) as server:
        async with judged_scorer({"default": {"url": server.url("verdict")}}) as judged:
            (result,) = await score(judged.scorer, math_group([UNREADABLE_WRONG]))
    (verdict,) = result.verdicts
    assert verdict.status is VerdictStatus.ok and verdict.score == 0.0
    assert verdict.details["judge_verdict"] == "NOT_EQUIVALENT" and verdict.details["fallback"] == "judge"
    assert "not equivalent" in (verdict.reason or "")
    assert server.hits["verdict"] == 1


async def test_a_judge_that_is_down_makes_the_verdict_an_error_never_maths_0() -> None:
    down = {"url": f"http://127.0.0.1:{refused_port()}/v1", "retries": 0}
    async with judged_scorer({"default": down}) as judged:
        (result,) = await score(judged.scorer, math_group([UNREADABLE_RIGHT, READABLE_RIGHT]))
    failed, read = result.verdicts
    assert failed.status is VerdictStatus.error and failed.score is None
    assert result.rewards == [None, 1.0]  # masked, not punished
    assert "(unreachable)" in (failed.reason or "") and "fallback" in (failed.reason or "")
    assert failed.details["fallback"] == "judge" and failed.details["math"]["unreadable"] is True
    # The judge's error details beside math's: its kind, endpoint, model and template.
    assert (failed.details["judge_error"], failed.details["endpoint"]) == ("unreachable", "default")
    assert failed.details["template"] == "equivalence@1" and failed.details["judge_model"]
    assert read.status is VerdictStatus.ok and "fallback" not in read.details


@pytest.mark.parametrize(
    ("response", "why"),
    [
        (READABLE_WRONG, "answer differs"),
        (HEDGE, "hedging"),
        (DENIAL, "deny or hedge"),
        (THINK_ONLY, "never closed"),
        ("", "no final answer"),
    ],
)
async def test_what_math_read_or_refused_stays_0_without_a_call(response: str, why: str) -> None:
    with VerdictServer(equivalent={"11", "10", "\\text{maybe } 10"}) as server:
        async with judged_scorer({"default": {"url": server.url("verdict")}}) as judged:
            (result,) = await score(judged.scorer, math_group([response]))
    (verdict,) = result.verdicts
    assert verdict.status is VerdictStatus.ok and verdict.score == 0.0
    assert why in (verdict.reason or "") and "fallback" not in verdict.details
    assert "unreadable" not in verdict.details
    assert server.hits["verdict"] == 0


async def test_a_mixed_group_sends_its_unreadable_answers_in_one_batch() -> None:
    responses = [
        UNREADABLE_RIGHT,
        READABLE_WRONG,
        UNREADABLE_WRONG,
        HEDGE,
        READABLE_RIGHT,
        DENIAL,
        THINK_ONLY,
        UNREADABLE_RIGHT,  # the same answer again: one call
    ]
    with VerdictServer(equivalent=EQUIVALENT) as server:
        async with judged_scorer({"default": {"url": server.url("verdict")}}) as judged:
            (result,) = await score(judged.scorer, math_group(responses))
            # One batch: a call per distinct answer.
            assert judged.judges is not None and judged.judges.sizes == [2]
            # Scored again: the judge's verdicts come from the cache, no call.
            (again,) = await score(judged.scorer, math_group(responses))
    assert result.rewards == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    judged_ones = [i for i, v in enumerate(result.verdicts) if v.details.get("fallback") == "judge"]
    assert judged_ones == [0, 2, 7]
    assert server.hits["verdict"] == 2  # two distinct prompts
    assert again.rewards == result.rewards
    assert all(again.verdicts[i].details["cached"] is True for i in judged_ones)
    assert result.std is not None and result.std > 0


async def test_the_fallback_options_reach_the_judge() -> None:
    options = {
        "fallback": "judge",
        "fallback_options": {"endpoint": "strong", "model": "big-judge", "sampling": {"max_tokens": 64}},
    }
    with VerdictServer(equivalent=EQUIVALENT) as server:
        endpoints = {"default": {"url": server.url("fail")}, "strong": {"url": server.url("verdict")}}
        async with judged_scorer(endpoints) as judged:
            (result,) = await score(judged.scorer, math_group([UNREADABLE_RIGHT], options, {"answer": "10"}))
    assert result.rewards == [1.0]
    (body,) = server.bodies("verdict")
    assert body["model"] == "big-judge" and body["max_tokens"] == 64
    assert server.hits["fail"] == 0


async def test_single_items_fall_back_too() -> None:
    with VerdictServer(equivalent=EQUIVALENT) as server:
        async with judged_scorer({"default": {"url": server.url("verdict")}}) as judged:
            item = ScoreRequest(verifier="math", response=UNREADABLE_RIGHT, reference="10", options=FALLBACK)
            (verdict,) = await judged.scorer.score_items([item])
    assert verdict.score == 1.0 and verdict.details["fallback"] == "judge"


@pytest.mark.parametrize(
    ("endpoints", "options", "says"),
    [
        (None, FALLBACK, "REFEREE_JUDGE_ENDPOINTS is not configured"),
        (
            {"default": {"url": "http://127.0.0.1:9/v1"}},
            {**FALLBACK, "fallback_options": {"endpoint": "x"}},
            "'x'",
        ),
    ],
)
async def test_a_fallback_the_service_cannot_give_is_refused_before_any_work(
    endpoints: Any, options: dict[str, Any], says: str
) -> None:
    async with judged_scorer(endpoints) as judged:
        with pytest.raises(InputError) as refused:
            await score(judged.scorer, math_group([UNREADABLE_RIGHT], options))
    (error,) = refused.value.errors
    assert error["loc"] == ["groups", 0, "options", "fallback"] and says in error["msg"]
    assert judged.observed == []


async def test_fallback_options_without_a_fallback_are_refused() -> None:
    async with judged_scorer(None) as judged:
        with pytest.raises(InputError, match="fallback_options need fallback"):
            await score(judged.scorer, math_group(["\\boxed{10}"], {"fallback_options": {}}))
        # Without the fallback, no judge is needed: math alone.
        (result,) = await score(judged.scorer, math_group([UNREADABLE_RIGHT], {}))
    assert result.rewards == [0.0] and result.verdicts[0].details["unreadable"] is True


async def test_through_the_service_with_worker_processes(tmp_path: Path) -> None:
    with VerdictServer(equivalent=EQUIVALENT) as server:
        common = {"model": "judge-model", "api_key": API_KEY, "retries": 0}
        endpoints = {
            "default": {"url": server.url("verdict"), **common},
            "down": {"url": server.url("fail"), **common},
        }
        settings = make_settings(workers=1, db_path=tmp_path / "referee.db", judge_endpoints=endpoints)
        async with in_process(settings) as http:
            before = (await http.get("/metrics")).text
            responses = [UNREADABLE_RIGHT, READABLE_WRONG, UNREADABLE_WRONG]
            group = {"verifier": "math", "reference": "10", "options": FALLBACK, "responses": responses}
            down = {**FALLBACK, "fallback_options": {"endpoint": "down"}}
            # Another unreadable answer (the first group's would be in the verdict cache, keyed by model).
            words = "So it is $\\boxed{\\text{twelve}}$."
            failing = {"verifier": "math", "reference": "10", "options": down, "responses": [words]}
            reply = await http.post("/v1/groups", json={"groups": [group, failing]})
            metrics = (await http.get("/metrics")).text
    assert reply.status_code == 200, reply.text
    result, failed = reply.json()["groups"]
    assert result["rewards"] == [1.0, 0.0, 0.0] and failed["rewards"] == [None]
    assert [v["details"].get("fallback") for v in result["verdicts"]] == ["judge", None, "judge"]
    assert server.hits["verdict"] == 2 and server.hits["fail"] == 1
    assert 'referee_verdicts_total{status="ok",verifier="math"} 3.0' in metrics
    # The fallback's own counter: how many answers went to the judge, and how they ended.
    for outcome, count in (("equivalent", 1), ("not_equivalent", 1), ("error", 1)):
        line = f'referee_math_judge_fallback_total{{outcome="{outcome}"}}'
        assert f"{line} 0.0" in before and f"{line} {float(count)}" in metrics


@pytest.mark.slow
async def test_a_real_servers_nonsense_is_an_error_never_0_or_1(openai_server: OpenAIServer) -> None:
    require_serving()
    endpoint = {"url": openai_server.base_url, "model": openai_server.model, "api_key": None}
    options = {**FALLBACK, "fallback_options": {"sampling": {"max_tokens": 8}}}
    async with judged_scorer({"default": endpoint}) as judged:
        (result,) = await score(judged.scorer, math_group([UNREADABLE_RIGHT, READABLE_RIGHT], options))
    nonsense, read = result.verdicts
    assert nonsense.status is VerdictStatus.error and nonsense.score is None
    assert "unparseable" in (nonsense.reason or "") and nonsense.details["fallback"] == "judge"
    assert read.score == 1.0 and result.rewards == [None, 1.0]
