"""Any batch size, through every adapter, against the real service: verl's default 1024 prompts
x 5 and TRL's 300 x 4 exceed one request's 256 groups; the client sends chunks (concurrently)
and the rewards come back in order. Each request the service saw stayed within its limits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from referee.client import AsyncClient, Client
from referee.grouping import ChunkPolicy
from referee.models import GroupSpec
from referee.trainer_adapter import connections, verl
from referee.trainer_adapter.rewarder import GroupRewarder
from referee.trainer_adapter.trl import AsyncRefereeReward, RefereeReward

PROMPTS, G = 1024, 5


def batch(prompts: int, g: int) -> tuple[list[str], list[str], list[str]]:
    """Flat TRL/verl-style lists: prompt i's completions are "i" (right) and "i+1" (wrong)."""
    flat_prompts, completions, answers = [], [], []
    for i in range(prompts):
        for j in range(g):
            flat_prompts.append(f"prompt {i}")
            completions.append(str(i) if j % 2 == 0 else str(i + 1))
            answers.append(str(i))
    return flat_prompts, completions, answers


def expected(prompts: int, g: int) -> list[float]:
    return [1.0 if j % 2 == 0 else 0.0 for _ in range(prompts) for j in range(g)]


class Recording(httpx.HTTPTransport):
    """The real transport, recording the number of groups in each /v1/groups body."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path == "/v1/groups" and response.status_code == 200:  # not a 503 retried
            import json

            self.sizes.append(len(json.loads(request.content)["groups"]))
        return response


@pytest.fixture
def recording() -> Iterator[Recording]:
    yield Recording()


def test_verl_batch_of_1024_prompts_x_5(
    referee_url: str, recording: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = connections.use_client(referee_url, None, Client(referee_url, transport=recording))
    _, completions, answers = batch(PROMPTS, G)
    try:
        scores = verl.compute_score_batch(
            ["openai/gsm8k"] * len(completions), completions, answers, None, url=referee_url, verifier="exact"
        )
    finally:
        connections.use_client(referee_url, None, previous)
    assert scores == expected(PROMPTS, G)
    # verl groups by reference: 1024 groups of 5, sent as chunks of at most 256 groups.
    assert sum(recording.sizes) == PROMPTS and max(recording.sizes) <= 256 and len(recording.sizes) >= 4


def test_trl_batch_of_300_prompts_x_4(referee_url: str, recording: Recording) -> None:
    client = Client(referee_url, transport=recording)
    reward = RefereeReward(referee_url, verifier="exact", reference_column="answer", client=client)
    prompts, completions, answers = batch(300, 4)
    assert reward(prompts=prompts, completions=completions, answer=answers) == expected(300, 4)
    assert sum(recording.sizes) == 300 and max(recording.sizes) <= 256 and len(recording.sizes) == 2


@pytest.mark.slow
async def test_async_trl_and_rewarder_batch_of_1024_prompts_x_5(referee_url: str) -> None:
    prompts, completions, answers = batch(PROMPTS, G)
    reward = AsyncRefereeReward(referee_url, verifier="exact", reference_column="answer")
    assert await reward(prompts=prompts, completions=completions, answer=answers) == expected(PROMPTS, G)
    rewarder = GroupRewarder(referee_url, verifier="exact")
    groups = [completions[i * G : (i + 1) * G] for i in range(PROMPTS)]
    result = await rewarder.score(groups, answers[::G])
    assert result.flat_rewards() == expected(PROMPTS, G)
    await rewarder.aclose()


async def test_async_client_chunks_concurrently_within_its_policy(referee_url: str) -> None:
    in_flight, peak, sizes = 0, 0, []

    class Tracking(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            nonlocal in_flight, peak
            import json

            sizes.append(len(json.loads(request.content)["groups"]))
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                await asyncio.sleep(0.05)  # hold the slot so concurrent chunks overlap
                return await super().handle_async_request(request)
            finally:
                in_flight -= 1

    policy = ChunkPolicy(max_groups=100, max_responses=10_000, max_concurrency=3)
    async with AsyncClient(referee_url, transport=Tracking(), chunks=policy) as client:
        groups: list[Any] = [
            GroupSpec(verifier="exact", reference=str(i), responses=[str(i), "x"]) for i in range(950)
        ]
        response = await client.score_groups(groups)
    assert [g.rewards for g in response.groups] == [[1.0, 0.0]] * 950
    assert sizes == [100] * 9 + [50] and peak == 3
