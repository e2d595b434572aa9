"""The episode table of one service: who owns which episode, its turns, and when it expires.

An episode id is random (`secrets.token_urlsafe`) and belongs to the key that started it:
another key's id is answered 404 exactly like an unknown one, so ids are not oracles. An
episode not stepped for its idle TTL is closed by the reaper (its code session with it); a
bounded table (per key and in all) keeps a client that never deletes from filling the memory.

The counters (`EpisodeCounters`) are what /metrics shows: episodes started, finished (an
episode's last turn, or its answer), expired and deleted; turns and tool calls per finished
episode; tool errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from referee.environments.base import (
    Action,
    Environment,
    EnvironmentKind,
    EpisodeDone,
    EpisodeNotFound,
    Reset,
    Step,
    with_details,
)
from referee.errors import DomainError, ErrorKind
from referee.models import Verdict
from referee.settings import EnvironmentSettings

log = structlog.get_logger(__name__)

Clock = Callable[[], float]

REAP_EVERY_S = 5.0


@dataclass
class Episode:
    id: str
    owner: Hashable
    kind: EnvironmentKind
    env: Environment
    max_turns: int
    created: float
    last_used: float
    turn: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    done: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def summary(self) -> dict[str, Any]:
        return {
            "episode": self.id,
            "environment": self.kind.name,
            "turns": self.turn,
            "tool_calls": self.tool_calls,
        }


@dataclass
class EpisodeCounters:
    started: int = 0
    finished: int = 0
    expired: int = 0
    deleted: int = 0
    turns: int = 0  # over finished episodes (with `finished`: turns per episode)
    tool_calls: int = 0  # likewise
    tool_errors: int = 0
    by_environment: Counter[str] = field(default_factory=Counter)  # episodes started per environment


class Episodes:
    def __init__(
        self,
        settings: EnvironmentSettings | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        settings = settings or EnvironmentSettings()
        self.idle_ttl_s = settings.idle_ttl_s
        self.max_episodes, self.max_per_key = settings.max_episodes, settings.max_per_key
        self.clock = clock
        self.counters = EpisodeCounters()
        self._episodes: dict[str, Episode] = {}
        self._reaper: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._episodes)

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(
        self, kind: EnvironmentKind, owner: Hashable, task: Mapping[str, Any] | None, seed: int | None
    ) -> tuple[Episode, Reset]:
        await self.reap()
        if len(self._episodes) >= self.max_episodes:
            raise DomainError(
                ErrorKind.overloaded,
                "episodes_full",
                "every episode slot is taken; retry later",
                retry_after_s=5,
            )
        # Without keys (owner None) every caller is the same one: only the global cap holds.
        held = sum(1 for e in self._episodes.values() if e.owner == owner)
        if owner is not None and held >= self.max_per_key:
            raise DomainError(
                ErrorKind.throttled,
                "episode_quota",
                f"this key has {self.max_per_key} episodes open; finish or delete some",
                retry_after_s=5,
            )
        env = kind.make(owner)
        try:
            first = await env.reset(task, seed)
        except BaseException:
            await env.close()
            raise
        now = self.clock()
        episode = Episode(secrets.token_urlsafe(18), owner, kind, env, kind.max_turns, now, now)
        self._episodes[episode.id] = episode
        self.counters.started += 1
        self.counters.by_environment[kind.name] += 1
        return episode, first

    def get(self, owner: Hashable, name: str, episode_id: str) -> Episode:
        episode = self._episodes.get(episode_id)
        if episode is None or episode.owner != owner or episode.kind.name != name or self._expired(episode):
            raise EpisodeNotFound()
        return episode

    async def step(self, owner: Hashable, name: str, episode_id: str, action: Action) -> tuple[Episode, Step]:
        episode = self.get(owner, name, episode_id)
        async with episode.lock:
            if episode.id not in self._episodes:  # deleted or reaped while this call waited
                raise EpisodeNotFound()
            if episode.done:
                raise EpisodeDone(episode.turn)
            episode.last_used = self.clock()
            result = await episode.env.step(action, episode.max_turns - episode.turn - 1)
            episode.turn += 1
            episode.last_used = self.clock()
            if result.tool_call:
                episode.tool_calls += 1
                if result.tool_error:
                    episode.tool_errors += 1
                    self.counters.tool_errors += 1
            if episode.turn >= episode.max_turns and not result.done:
                result = Step(
                    result.observation,
                    True,
                    {**result.info, "out_of_turns": True},
                    result.tool_call,
                    result.tool_error,
                )
            if result.done:
                self._finish(episode)
            return episode, result

    async def verify(self, owner: Hashable, name: str, episode_id: str, response: str | None) -> Verdict:
        episode = self.get(owner, name, episode_id)
        async with episode.lock:
            if episode.id not in self._episodes:
                raise EpisodeNotFound()
            episode.last_used = self.clock()
            verdict = await episode.env.verify(response)
            episode.last_used = self.clock()
        return with_details(verdict, **episode.summary(), done=episode.done)

    async def delete(self, owner: Hashable, name: str, episode_id: str) -> None:
        episode = self.get(owner, name, episode_id)
        await self._close(episode)
        self.counters.deleted += 1

    # ---- expiry and shutdown --------------------------------------------------------------

    def _expired(self, episode: Episode) -> bool:
        return self.clock() - episode.last_used > self.idle_ttl_s and not episode.lock.locked()

    def _finish(self, episode: Episode) -> None:
        episode.done = True
        self.counters.finished += 1
        self.counters.turns += episode.turn
        self.counters.tool_calls += episode.tool_calls

    async def _close(self, episode: Episode) -> None:
        if self._episodes.pop(episode.id, None) is None:
            return
        try:
            await episode.env.close()
        except Exception:  # a lost container is already gone: nothing else to release
            log.warning("episode_close_failed", episode=episode.id, exc_info=True)

    async def reap(self) -> int:
        """Close the episodes idle past their TTL; how many."""
        expired = [e for e in list(self._episodes.values()) if self._expired(e)]
        for episode in expired:
            await self._close(episode)
        self.counters.expired += len(expired)
        return len(expired)

    async def _reap_forever(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await self.reap()
            except Exception:
                log.exception("episode_reaper_failed")

    def start_reaper(self, every_s: float = REAP_EVERY_S) -> None:
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(every_s), name="referee-episode-reaper")

    async def close(self) -> None:
        """Stop the reaper and close every episode (their code sessions with them)."""
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
        for episode in list(self._episodes.values()):
            await self._close(episode)
