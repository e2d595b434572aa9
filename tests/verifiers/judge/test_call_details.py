"""What a judge verdict's details say about its calls: an error verdict says why, where and what
it cost (never a 0 or a 1), and a call answered for another verdict is marked `shared`, so an
audit counts each call once (audit/judging.py reads these fields)."""

from __future__ import annotations

import asyncio
from typing import Any

from referee.audit.judging import judge_cost
from referee.judges import ChatFailure
from referee.models import Verdict, VerdictStatus
from referee.verifiers import Check, Resources, VerifierError
from referee.verifiers.judge import JudgeEquivalenceVerifier, JudgeRubricVerifier
from tests.judges.scripted_server import SLOW_S, ChatServer, clients
from tests.verifiers.judge.fakes import FakeJudges, criterion_of, reply
from tests.verifiers.judge.test_verifiers import equivalent_if, run, says


def error(result: Check | VerifierError) -> VerifierError:
    assert isinstance(result, VerifierError), result
    return result


def as_verdict(result: Check | VerifierError) -> Verdict:
    if isinstance(result, VerifierError):
        return Verdict(
            score=None, status=VerdictStatus.error, verifier="judge_equivalence@1", details=result.details
        )
    return Verdict(
        score=result.score, status=VerdictStatus.ok, verifier="judge_equivalence@1", details=result.details
    )


async def test_an_unparseable_reply_says_what_it_cost() -> None:
    judges = FakeJudges(says("They look about the same to me."))
    (result,) = await run(JudgeEquivalenceVerifier(), ["\\boxed{42}"], "42", judges)
    details = error(result).details
    assert details["judge_error"] == "unparseable"
    assert (details["endpoint"], details["judge_model"], details["template"]) == (
        "default",
        "fake-judge",
        "equivalence@1",
    )
    assert details["tokens"] == {"prompt": 100, "completion": 9} and details["cached"] is False
    assert "about the same" in details["judge_reply"] and details["shared"] is False
    assert details["injection_suspected"] is False  # what the prompt was sent with


async def test_a_failed_call_and_a_missing_endpoint_say_their_kind_without_tokens() -> None:
    judges = FakeJudges(lambda r: ChatFailure("timeout", "no reply within 30 s", attempts=3))
    (result,) = await run(JudgeEquivalenceVerifier(), ["42"], "42", judges, {"model": "big-judge"})
    details = error(result).details
    assert details["judge_error"] == "timeout" and details["attempts"] == 3
    assert (details["endpoint"], details["judge_model"]) == ("default", "big-judge")
    assert "tokens" not in details  # no reply: nothing was spent that the server reported
    verifier = JudgeEquivalenceVerifier()
    opts = verifier.validate_options({"endpoint": "nope"})
    prepared = verifier.prepare("1", opts)
    for resources, kind in ((Resources(), "no_endpoint"), (Resources(judges=judges), "unknown_endpoint")):
        try:
            await verifier.check_group(["1"], prepared, opts, resources)
        except VerifierError as exc:
            assert exc.details == {"judge_error": kind, "endpoint": "nope", "template": "equivalence@1"}
        else:  # pragma: no cover - the failure message is the point
            raise AssertionError("no error")


async def test_a_rubric_error_lists_every_criterions_call() -> None:
    def answer(request: Any) -> Any:
        return reply("VERDICT: MET" if "light" in criterion_of(request) else "It depends.")

    rubric = {"criteria": [{"criterion": "Names light."}, {"criterion": "Names glucose.", "weight": 2}]}
    (result,) = await run(JudgeRubricVerifier(), ["Light makes glucose."], rubric, FakeJudges(answer))
    failed = error(result)
    assert str(failed).startswith("criterion 2 ('Names glucose.')")
    details = failed.details
    assert (details["judge_error"], details["criterion"], details["template"]) == (
        "unparseable",
        2,
        "rubric_yes_no@1",
    )
    first, second = details["criteria"]
    assert first["judge_verdict"] == "MET" and second["judge_error"] == "unparseable"
    assert first["tokens"]["prompt"] == second["tokens"]["prompt"] == 100
    cost = judge_cost([as_verdict(result)])
    assert cost is not None and cost.calls == 2 and cost.errors == {"unparseable": 1}


async def test_a_response_repeated_in_a_group_is_one_call_the_others_shared() -> None:
    judges = FakeJudges(equivalent_if("4"))
    group = ["The answer is 4.", "The answer is 5.", "The answer is 4.", "The answer is 4."]
    results = await run(JudgeEquivalenceVerifier(), group, "4", judges)
    assert [r.details["shared"] for r in results if isinstance(r, Check)] == [False, False, True, True]
    cost = judge_cost([as_verdict(r) for r in results])
    assert cost is not None and (cost.calls, cost.shared) == (2, 2) == (len(judges.requests), 2)
    again = await run(JudgeEquivalenceVerifier(), group, "4", judges)  # the cache answers all
    cost = judge_cost([as_verdict(r) for r in again])
    assert cost is not None and (cost.calls, cost.cache_hits, cost.shared) == (0, 4, 0)


async def test_identical_calls_of_two_groups_in_flight_are_sent_once_and_marked() -> None:
    """Two groups judging the same response at once: the transport sends one call; one verdict
    says it is its own, the other that it shares it, and the audit counts one call."""
    with ChatServer() as server:
        judges = clients({"default": {"url": server.url("slow"), "model": "judge-model"}})
        verifier = JudgeEquivalenceVerifier()
        try:
            (a,), (b,) = await asyncio.wait_for(
                asyncio.gather(
                    run(verifier, ["\\boxed{7}"], "7", judges), run(verifier, ["\\boxed{7}"], "7", judges)
                ),
                timeout=10 * SLOW_S + 10,
            )
        finally:
            await judges.aclose()
        assert server.hits["slow"] == 1
    # The scripted server echoes the prompt, which holds both verdict lines: unparseable, and
    # the tokens it spent are in both verdicts' details, counted once.
    first, second = error(a).details, error(b).details
    assert sorted([first["shared"], second["shared"]]) == [False, True]
    assert first["tokens"] == second["tokens"] == {"prompt": 11, "completion": 3}
    cost = judge_cost([as_verdict(a), as_verdict(b)])
    assert cost is not None and cost.calls == 1 and cost.tokens.total == 14
