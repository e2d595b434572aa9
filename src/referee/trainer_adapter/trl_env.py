"""TRL 1.16's environment hook backed by Referee episodes: ``GRPOTrainer(environment_factory=...)``.

TRL makes one environment instance per concurrent rollout (pooled, reused across batches),
calls ``reset(**row)`` before generating, exposes the instance's public methods as the model's
tools (name, type hints and Google-style docstring make the schema), and passes the instances
to the reward functions as ``environments=``. So::

    env = RefereeEnvironment.factory("http://referee:8000", verifier="math")
    trainer = GRPOTrainer(
        model=..., train_dataset=ds,            # columns: prompt, reference (and verifier, options)
        environment_factory=env,
        reward_funcs=[RefereeEpisodeReward()],  # verifies each rollout's final answer
        args=GRPOConfig(..., max_tool_calling_iterations=8),
    )

``reset`` ends the instance's previous episode and starts one whose task is the row's
``prompt`` (its last user message for conversational rows), ``verifier``, ``reference``,
``options`` (columns named by ``task_columns``); the only tool is ``python(code)``, run in the
episode's code session with state kept between calls. TRL has no "rollout finished" call,
so the verdict is asked by the reward function, which reads the completion's final assistant
message: `RefereeEpisodeReward` (a verdict of status error is None: TRL leaves it out of the
reward instead of learning from a fake 0). An episode left open when training ends is closed
with the instance (or by the service's idle TTL).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from referee.client import Episode, RefereeError, tool_call
from referee.trainer_adapter import connections

TASK_COLUMNS = ("verifier", "reference", "options")


def prompt_text(prompt: Any) -> str:
    """A row's prompt as text: itself, or its last user message's content (conversational)."""
    if isinstance(prompt, str):
        return prompt
    for turn in reversed(list(prompt or [])):
        if isinstance(turn, Mapping) and turn.get("role") == "user":
            content = turn.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if isinstance(p, Mapping))
    return ""


def final_answer(completion: Any) -> str:
    """The text a completion ends with: itself, or its last assistant message's content."""
    if isinstance(completion, str):
        return completion
    for turn in reversed(list(completion or [])):
        if isinstance(turn, Mapping) and turn.get("role") == "assistant":
            return str(turn.get("content") or "")
    return ""


class RefereeEnvironment:
    """One rollout's episode of a Referee environment; its public method is the model's tool."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        environment: str = "python",
        *,
        api_key: str | None = None,
        verifier: str | None = None,
        task_columns: Sequence[str] = TASK_COLUMNS,
        patience_s: float | None = None,
    ) -> None:
        self._url, self._key = base_url, api_key
        self._environment, self._verifier = environment, verifier
        self._columns = tuple(task_columns)
        self._patience = connections.Patience(patience_s=patience_s)
        self._episode: Episode | None = None
        self.tool_calls = 0

    @classmethod
    def factory(
        cls, base_url: str = "http://127.0.0.1:8000", **kwargs: Any
    ) -> Callable[[], RefereeEnvironment]:
        """What `environment_factory` takes: a callable making a fresh instance."""
        return functools.partial(cls, base_url, **kwargs)

    def _client(self) -> Any:
        return connections.sync_client(self._url, self._key, self._patience)

    def reset(self, **row: Any) -> str | None:
        """Start this rollout's episode (ending the instance's previous one). Returns None: TRL
        keeps the row's prompt, which is the task's."""
        self._end()
        task: dict[str, Any] = {"prompt": prompt_text(row.get("prompt"))}
        if self._verifier is not None:
            task["verifier"] = self._verifier
        task.update({k: row[k] for k in self._columns if row.get(k) is not None})
        self._episode = self._client().start_episode(self._environment, task)
        self.tool_calls = 0
        return None

    def python(self, code: str) -> str:
        """Run Python code in a persistent interpreter: variables, imports and files are kept between calls.

        Args:
            code: The Python source to run.

        Returns:
            What the code printed, the value of its last expression, and any error.
        """
        if self._episode is None:
            return "error: no episode (reset was not called)"
        self.tool_calls += 1
        try:
            step = self._client().step(
                self._episode.environment, self._episode.episode_id, tool_call("python", {"code": code})
            )
        except RefereeError as exc:  # the model reads it; the rollout goes on
            return f"error: {exc}"
        return str(step.observation)

    def _verify(self, answer: str) -> float | None:
        """The episode's score for `answer` (its final message), None for a verdict of status error."""
        if self._episode is None:
            return None
        episode = self._episode
        verdict = self._client().verify(episode.environment, episode.episode_id, response=answer)
        return None if verdict.status == "error" else verdict.score

    def _end(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            with contextlib.suppress(RefereeError):  # the service's idle TTL reclaims it
                self._client().end_episode(episode.environment, episode.episode_id)

    def __del__(self) -> None:
        try:  # not contextlib.suppress: at interpreter shutdown the module's globals may be gone
            self._end()
        except Exception:
            return  # nothing left to call it with: the service's idle TTL reclaims the episode


class RefereeEpisodeReward:
    """TRL reward function: each rollout's final assistant message, verified by its episode."""

    def __init__(self, name: str = "referee_episode") -> None:
        self.__name__ = name  # TRL names the reward's column by it

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        environments: Sequence[Any] | None = None,
        **_: Any,
    ) -> list[float | None]:
        if environments is None:
            raise ValueError(
                "RefereeEpisodeReward needs GRPOTrainer(environment_factory=RefereeEnvironment...)"
            )
        return [
            env._verify(final_answer(completion)) if isinstance(env, RefereeEnvironment) else None
            for env, completion in zip(environments, completions, strict=True)
        ]
