"""`Environments`: the named environments of one service and their episodes.

Built-in: `python` (the code interpreter) and one game per `logic.*` checker. Registered through
the API: a declarative environment — a name, a description, which built-in kind it uses, the
verifier that judges it, its turn limit and a prompt template — gated like a registered type:
its verifier must exist (a built-in, or a registered type, which passed its own gate), its
examples must reproduce their expected scores through the environment, and the verifier's probe
battery must earn nothing (`ProbeCheck`, run by the service, which owns the audit's
batteries). No user code ever runs in the service: a registered environment is data.

Registered environments are kept in the registry's store, beside the registered types (its
`environments` table, in the SQLite file or the PostgreSQL database that replicas share). A write
moves the store's generation: each replica reads the table again when it sees the generation
move, before it lists environments or starts an episode, so an environment registered or deleted
through one replica is served (or refused) by every other within the store's refresh bound. While
the store cannot be read, the environments already loaded are served.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from functools import partial
from typing import Any, Protocol

import structlog

from referee.environments.base import Action, EnvironmentKind, Reset, Step, UnknownEnvironment
from referee.environments.episodes import Episode, Episodes
from referee.environments.puzzles import PuzzleKind
from referee.environments.python_env import CallResult, CodeRunner, PythonKind
from referee.errors import DomainError, ErrorKind, InputError
from referee.models import (
    EnvironmentExample,
    EnvironmentInfo,
    RegisteredEnvironment,
    RegisterEnvironmentRequest,
    Verdict,
    VerdictStatus,
)
from referee.scoring import Scorer

log = structlog.get_logger(__name__)

SCORE_TOLERANCE = 1e-9
# How many environments may be registered (they are small, but every one is listed).
MAX_REGISTERED = 256
# The probe battery of a registered environment's verifier: (verifier, the examples' references)
# -> how many probes earned nothing; raises a DomainError (422) when one earned something.
ProbeCheck = Callable[[str, list[Any]], Awaitable[int]]


class _Opened(Protocol):
    @property
    def id(self) -> str: ...


class SessionTable(Protocol):
    """What `referee.sessions.CodeSessions` offers that an episode uses (structural, so this
    package depends on the session table's shape, not on its import)."""

    async def open(self, owner: Hashable) -> _Opened: ...

    async def run(self, owner: Hashable, session_id: str, code: str) -> tuple[CallResult, int]: ...

    async def close(self, owner: Hashable, session_id: str) -> None: ...


class SessionsRunner:
    """`CodeSessions` as an episode needs it (open in the owner's name, run, close)."""

    def __init__(self, sessions: SessionTable) -> None:
        self._sessions = sessions

    async def open(self, owner: Hashable) -> str:
        return (await self._sessions.open(owner)).id

    async def run(self, owner: Hashable, session_id: str, code: str) -> CallResult:
        outcome, _ = await self._sessions.run(owner, session_id, code)
        return outcome

    async def close(self, owner: Hashable, session_id: str) -> None:
        try:
            await self._sessions.close(owner, session_id)
        except DomainError as exc:  # already gone (expired, lost): nothing to close
            if exc.kind is not ErrorKind.not_found:
                raise


class EnvironmentStore(Protocol):
    """Where registered environments are kept: the registry's store (referee.registered.store)."""

    def environment_documents(self) -> list[str]: ...

    def save_environment(self, name: str, document: str) -> None: ...

    def delete_environment(self, name: str) -> bool: ...

    def generation(self) -> object: ...


def _invalid(loc: list[str | int], msg: str, code: str = "validation_error") -> DomainError:
    return DomainError(ErrorKind.invalid, code, msg, [{"loc": ["body", *loc], "msg": msg, "type": code}])


class Environments:
    def __init__(
        self,
        scorer: Scorer,
        sessions: SessionTable | None,
        *,
        store: EnvironmentStore | None = None,
        episodes: Episodes | None = None,
    ) -> None:
        """`store`: where registered environments are kept (None: in memory, this process only)."""
        self.scorer = scorer
        self.runner: CodeRunner | None = SessionsRunner(sessions) if sessions is not None else None
        # `is None`, not `or`: an empty table is falsy (it has a length).
        self.episodes = episodes if episodes is not None else Episodes()
        self._store = store
        self._generation: object = None  # the store's, when the registered ones were read
        self._builtin: dict[str, EnvironmentKind] = {"python": PythonKind(scorer, self.runner)}
        for name in scorer.installed.names():
            if name.startswith("logic.") and scorer.installed.kind(name) == "builtin":
                self._builtin[name] = PuzzleKind(scorer, name)
        self._registered: dict[str, tuple[RegisteredEnvironment, EnvironmentKind]] = {}

    # ---- the catalog ----------------------------------------------------------------------

    def names(self) -> list[str]:
        return [*self._builtin, *sorted(self._registered)]

    def kind(self, name: str) -> EnvironmentKind:
        found = self._builtin.get(name) or self._registered.get(name, (None, None))[1]
        if found is None:
            raise UnknownEnvironment(name, self.names())
        return found

    async def refresh(self) -> None:
        """Read the registered environments again if the store changed since they were read
        (another replica registered or deleted one). The store's generation is a local read;
        the table is read in a thread. While the store cannot be read, what is loaded stays."""
        if self._store is None:
            return
        try:
            generation = self._store.generation()
            if generation == self._generation:
                return
            documents = await asyncio.to_thread(self._store.environment_documents)
        except DomainError as exc:  # the registry's RegistryUnavailable (its server is down)
            if exc.kind is not ErrorKind.unavailable:
                raise
            log.warning("environments_store_unreadable", reason=exc.message)
            return
        self._generation = generation
        registered: dict[str, tuple[RegisteredEnvironment, EnvironmentKind]] = {}
        for document in documents:
            record = RegisteredEnvironment.model_validate_json(document)
            body = RegisterEnvironmentRequest.model_construct(
                **record.model_dump(exclude={"created_at", "probes"})
            )
            try:
                registered[record.name] = (record, self._build(body))
            except DomainError:  # its checker is gone from this version: not served
                continue
        self._registered = registered

    async def infos(self) -> list[EnvironmentInfo]:
        await self.refresh()
        kinds = [
            *self._builtin.values(),
            *(k for _, k in sorted(self._registered.values(), key=lambda r: r[0].name)),
        ]
        return [
            EnvironmentInfo(name=k.name, description=k.description, tools=k.tools, max_turns=k.max_turns)
            for k in kinds
        ]

    # ---- episodes -------------------------------------------------------------------------

    async def start_episode(
        self, name: str, owner: Hashable, task: Mapping[str, Any] | None, seed: int | None
    ) -> tuple[Episode, Reset]:
        await self.refresh()
        return await self.episodes.start(self.kind(name), owner, task, seed)

    async def step(self, name: str, owner: Hashable, episode_id: str, action: Action) -> tuple[Episode, Step]:
        return await self.episodes.step(owner, name, episode_id, action)

    async def verify(self, name: str, owner: Hashable, episode_id: str, response: str | None) -> Verdict:
        return await self.episodes.verify(owner, name, episode_id, response)

    async def delete(self, name: str, owner: Hashable, episode_id: str) -> None:
        await self.episodes.delete(owner, name, episode_id)

    # ---- registration ---------------------------------------------------------------------

    def _build(self, body: RegisterEnvironmentRequest) -> EnvironmentKind:
        make: Callable[..., EnvironmentKind]
        if body.kind == "puzzle":
            if not (body.verifier.startswith("logic.") and body.verifier in self._builtin):
                games = ", ".join(n for n in self._builtin if n != "python")
                raise _invalid(
                    ["verifier"],
                    "a puzzle environment is the game of a built-in `logic.*` checker (their "
                    f"feedback never shows the solution); known: {games}",
                    "invalid_spec",
                )
            make = partial(PuzzleKind, self.scorer, body.verifier)
        else:
            make = partial(PythonKind, self.scorer, self.runner, verifier=body.verifier)
        return make(
            name=body.name, description=body.description, max_turns=body.max_turns, template=body.prompt
        )

    async def register(
        self, body: RegisterEnvironmentRequest, owner: Hashable, probes: ProbeCheck
    ) -> RegisteredEnvironment:
        """The gate, then the store: nothing is kept unless every step passes."""
        await self.refresh()
        if body.name in self._builtin:
            raise DomainError(ErrorKind.conflict, "builtin_name", f"{body.name!r} is a built-in environment")
        if body.name not in self._registered and len(self._registered) >= MAX_REGISTERED:
            raise _invalid(["name"], f"at most {MAX_REGISTERED} registered environments", "quota_exceeded")
        await self.scorer.prepare([body.verifier])
        self.scorer.resolve(body.verifier)  # UnknownVerifier: 404, as /v1/score answers
        kind = self._build(body)
        references = await self._gate_examples(kind, body.examples, owner)
        passed = await probes(body.verifier, references)
        record = RegisteredEnvironment(
            name=body.name,
            description=body.description,
            kind=body.kind,
            verifier=body.verifier,
            max_turns=body.max_turns,
            prompt=body.prompt,
            created_at=time.time(),
            probes=passed,
        )
        if self._store is not None:
            await asyncio.to_thread(self._store.save_environment, record.name, record.model_dump_json())
        self._registered[record.name] = (record, kind)
        return record

    async def _gate_examples(
        self, kind: EnvironmentKind, examples: list[EnvironmentExample], owner: Hashable
    ) -> list[Any]:
        """Each example, played as a one-answer episode, reproduces its expected score; at least
        one scores 1 and one 0 (an environment nothing can win or nothing can lose is broken).
        Returns the examples' references (for the probes)."""
        failing: list[dict[str, Any]] = []
        scores: list[float | None] = []
        references: list[Any] = []
        for i, example in enumerate(examples):
            env = kind.make(owner)
            try:
                try:
                    await env.reset(example.task, None)
                except InputError as exc:
                    errors = [{**e, "loc": ["body", "examples", i, *e["loc"][1:]]} for e in exc.errors]
                    raise InputError(errors) from None
                verdict = await env.verify(example.response)
                references.append(getattr(env, "reference", None))  # what the verifier judges against
            finally:
                await env.close()
            scores.append(verdict.score)
            if (
                verdict.status is not VerdictStatus.ok
                or verdict.score is None
                or abs(verdict.score - example.expected_score) > SCORE_TOLERANCE
            ):
                failing.append(
                    {
                        "index": i,
                        "expected_score": example.expected_score,
                        "score": verdict.score,
                        "reason": verdict.reason,
                    }
                )
        if failing:
            raise DomainError(
                ErrorKind.invalid,
                "activation_failed",
                f"{len(failing)} of {len(examples)} examples do not reproduce their expected score",
                {"failing": failing},
            )
        if 1.0 not in scores or 0.0 not in scores:
            raise _invalid(
                ["examples"], "the examples need an answer scoring 1 and one scoring 0", "activation_failed"
            )
        return references

    async def unregister(self, name: str) -> None:
        if name in self._builtin:
            raise DomainError(ErrorKind.conflict, "builtin_name", f"{name!r} is a built-in environment")
        await self.refresh()
        if self._registered.pop(name, None) is None:
            raise UnknownEnvironment(name, self.names())
        if self._store is not None:
            await asyncio.to_thread(self._store.delete_environment, name)

    # ---- lifetime -------------------------------------------------------------------------

    async def open(self) -> None:
        """Read the registered environments back and start the episode reaper."""
        await self.refresh()
        self.episodes.start_reaper()

    async def close(self) -> None:
        await self.episodes.close()
