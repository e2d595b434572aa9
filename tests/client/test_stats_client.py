"""`Client.prompt_stats` / `verifier_stats` (and the async pair) against a real service: the
query reaches the service, pages and filters are the service's, each key reads its own
prompts, a refused query raises, and a retried GET keeps its query string."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from referee.client import AsyncClient, Client, RefereeHTTPError
from referee.models import GroupSpec, PromptFilter
from referee.service.background import BackgroundServer
from tests.conftest import make_settings

KEYS = ["client-stats-a", "client-stats-b", "client-stats-c"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """A service of its own: its statistics start empty, so counts are exact."""
    settings = make_settings(workers=1, api_keys=KEYS, db_path=tmp_path_factory.mktemp("stats") / "r.db")
    with BackgroundServer(settings) as running:
        yield running


def group(prompt_id: str, right: int, wrong: int) -> GroupSpec:
    return GroupSpec(
        verifier="exact", reference="42", responses=["42"] * right + ["41"] * wrong, prompt_id=prompt_id
    )


def test_prompt_stats_filters_pages_and_namespaces(server: BackgroundServer) -> None:
    with Client(server.url, api_key=KEYS[0]) as a, Client(server.url, api_key=KEYS[1]) as b:
        for _ in range(2):
            a.score_groups([group("easy", 3, 0), group("hard", 0, 3), group("mid", 1, 2)])
        a.score_groups([group("easy", 2, 0)])
        b.score_groups([group("other", 1, 0)])

        page = a.prompt_stats()
        by_id = {p.prompt_id: p for p in page.prompts}
        assert set(by_id) == {"easy", "hard", "mid"} and page.tracked == 3 and page.visits == 7
        assert (by_id["easy"].visits, by_id["easy"].attempts, by_id["easy"].passes) == (3, 8, 8)
        assert by_id["easy"].solved_streak == 3 and by_id["hard"].unsolved_streak == 2
        assert page.prompts[0].prompt_id == "easy"  # most recently seen first
        assert page.zero_variance_share == pytest.approx(5 / 7)  # easy x3, hard x2

        solved = a.prompt_stats("always_solved", last=3)
        assert [p.prompt_id for p in solved.prompts] == ["easy"] and solved.matched == 1
        assert a.prompt_stats(PromptFilter.never_solved, last=2).matched == 1
        assert a.prompt_stats("never_solved", last=3).matched == 0  # hard has only 2 visits

        first = a.prompt_stats(limit=2)
        rest = a.prompt_stats(limit=2, offset=2)
        assert len(first.prompts) == 2 and first.matched == 3
        assert {p.prompt_id for p in first.prompts + rest.prompts} == {"easy", "hard", "mid"}

        assert [p.prompt_id for p in b.prompt_stats().prompts] == ["other"]


def test_bad_queries_fail_before_or_at_the_service(server: BackgroundServer) -> None:
    with Client(server.url, api_key=KEYS[0]) as client:
        with pytest.raises(ValueError, match="solved_often"):
            client.prompt_stats("solved_often")
        with pytest.raises(RefereeHTTPError) as info:
            client.prompt_stats(last=0)
        assert info.value.status_code == 422
        with pytest.raises(RefereeHTTPError) as info:
            client.verifier_stats(minutes=0)
        assert info.value.status_code == 422
    with Client(server.url, api_key="not-a-key") as stranger, pytest.raises(RefereeHTTPError) as info:
        stranger.prompt_stats()
    assert info.value.status_code == 401


async def test_async_client_reads_the_same_statistics(server: BackgroundServer) -> None:
    async with AsyncClient(server.url, api_key=KEYS[2]) as client:
        await client.score_groups([group("p1", 2, 0), group("p2", 1, 1)])
        page = await client.prompt_stats("zero_variance")
        assert [p.prompt_id for p in page.prompts] == ["p1"] and page.tracked == 2
        assert page.zero_variance_share == pytest.approx(0.5)
        verifiers = await client.verifier_stats(minutes=5)
    assert verifiers.minutes == 5
    exact = next(v for v in verifiers.verifiers if v.verifier.split("@")[0] == "exact")
    assert exact.verdicts >= 4 and exact.errors == 0
    with Client(server.url, api_key=KEYS[2]) as sync:
        same = next(v for v in sync.verifier_stats().verifiers if v.verifier == exact.verifier)
    assert same.verdicts >= exact.verdicts


def test_a_retried_stats_request_keeps_its_query() -> None:
    """A 503 first, then the answer: both attempts carry the same query string."""
    seen: list[str] = []
    body = {
        "prompts": [],
        "matched": 0,
        "tracked": 0,
        "visits": 0,
        "zero_variance_share": None,
        "pass_rate_histogram": {"edges": [0.0, 1.0], "counts": [0]},
        "pass_threshold": 1.0,
        "max_prompts": 10,
    }

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url.query, "ascii"))
        if len(seen) == 1:
            return httpx.Response(503, json={"error": "unavailable", "message": "starting"})
        return httpx.Response(200, json=body)

    with Client("http://referee", transport=httpx.MockTransport(handler), backoff_s=0.0) as client:
        page = client.prompt_stats("always_solved", last=4, limit=7, offset=3)
    assert page.matched == 0
    assert seen == ["filter=always_solved&last=4&limit=7&offset=3"] * 2
