"""A scoring engine whose judge verifiers reach a scripted judge on a real socket.

`VerdictServer` is the scripted chat server of tests/judges/scripted_server.py with one more
behaviour, `verdict`: it answers `VERDICT: EQUIVALENT` when the fenced response is one of
`equivalent`, else `VERDICT: NOT_EQUIVALENT`, as a judge that reasoned first would. `judged_scorer`
builds a `Scorer` over in-process worker checks (test_engine's FakePool) and real
`JudgeClients`, wrapped so that a test sees each batch the engine sends; `in_process` is the
whole service, worker processes included, behind an HTTP client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from referee.judges import ChatFailure, ChatReply, ChatRequest, JudgeClients
from referee.models import Verdict
from referee.runtime import Runtime
from referee.scoring import Scorer
from referee.scoring import worker as worker_module
from referee.service.app import create_app
from referee.settings import Settings
from referee.verifiers import Resources, load_installed
from tests.judges.scripted_server import ChatServer, completion, judge_settings
from tests.scoring.test_engine import FakePool


@dataclass
class VerdictServer(ChatServer):
    equivalent: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = self
        scripted = self.server.RequestHandlerClass

        class Handler(scripted):  # type: ignore[valid-type,misc]
            def behave(self, behaviour: str, count: int, body: dict[str, Any]) -> None:
                if behaviour != "verdict":
                    return super().behave(behaviour, count, body)
                said = fenced_response(body["messages"][-1]["content"])
                verdict = "EQUIVALENT" if said in owner.equivalent else "NOT_EQUIVALENT"
                return self.answer(200, completion(f"The answers compared.\nVERDICT: {verdict}"))

        self.server.RequestHandlerClass = Handler


def fenced_response(user: str) -> str:
    """The response between the prompt's fence lines."""
    start = user.index("\n", user.index("<<<RESPONSE-")) + 1
    return user[start : user.index("\n<<<END-RESPONSE-", start)]


@dataclass
class Batches:
    """`JudgeClients` as the engine sees them, recording the size of each batch."""

    clients: JudgeClients
    sizes: list[int] = field(default_factory=list)

    @property
    def cache(self) -> Any:
        return self.clients.cache

    def endpoint_model(self, endpoint: str) -> str | None:
        return self.clients.endpoint_model(endpoint)

    async def complete_many(self, requests: Sequence[ChatRequest]) -> list[ChatReply | ChatFailure]:
        self.sizes.append(len(requests))
        return await self.clients.complete_many(requests)


@dataclass
class Judged:
    scorer: Scorer
    judges: Batches | None
    observed: list[tuple[str, Verdict]]


@asynccontextmanager
async def judged_scorer(
    endpoints: dict[str, dict[str, Any]] | None, extra: Sequence[type[Any]] = ()
) -> AsyncIterator[Judged]:
    """A Scorer with judge endpoints (name -> endpoint fields; None: no judges configured)."""
    installed = load_installed(plugins=False)
    for cls in extra:
        installed.register(cls, kind="extra")
    previous = worker_module.use_installed(installed)
    judges = None if endpoints is None else Batches(JudgeClients(judge_settings(endpoints), backoff_s=0.01))
    settings = Settings(workers=1, sandbox=False)
    observed: list[tuple[str, Verdict]] = []
    scorer = Scorer(
        settings.limits,
        settings.workers,
        installed,
        FakePool(),  # type: ignore[arg-type]
        Resources(judges=judges),
        observer=lambda verdict, name: observed.append((name, verdict)),
    )
    try:
        yield Judged(scorer, judges, observed)
    finally:
        worker_module.use_installed(previous)
        if judges is not None:
            await judges.clients.aclose()


@asynccontextmanager
async def in_process(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The service started in this process, and a client of its API."""
    app = create_app(Runtime(settings))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://referee", timeout=60) as http:
            yield http
