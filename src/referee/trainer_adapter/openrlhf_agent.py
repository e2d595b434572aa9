"""OpenRLHF's multi-turn agent file: each sample is an episode of a Referee environment.

OpenRLHF 0.11 loads ``--train.agent_func_path`` (a ``.py`` file) under a module name of its own
and instantiates its ``AgentExecutor``; `MultiTurnAgentExecutor` makes one ``AgentInstance``
per sample, calls ``reset({"observation": prompt, "label": label})`` once, then
``step({"action_text": ..., ...})`` after each generation until ``done``. Point it at this file::

    --train.agent_func_path $(python -c "import referee.trainer_adapter.openrlhf_agent as m; print(m.__file__)")

Here, ``reset`` starts an episode (`POST /v1/environments/{name}/episodes`) whose task is the
sample's label: a JSON object is the task itself (for the ``python`` environment: ``verifier``,
``reference``, ``options``; ``prompt`` defaults to the sample's prompt), any other label is the
reference judged by ``REFEREE_VERIFIER``. A generation holding a tool call is a ``tool_call``
step: its observation goes back to the model through ``REFEREE_FEEDBACK_TEMPLATE``, reward 0.
``REFEREE_TOOL_FORMAT`` says what a tool call looks like:

- ``hermes`` (the default): ``<tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call>``
  anywhere in the generation (Hermes/Qwen's format); the feedback is ChatML's tool turn.
- ``code``: a generation that *ends* with a fenced Python block (```` ```python ... ``` ````,
  optionally inside ``<code>...</code>``), as tool-integrated reasoning recipes generate it
  (SimpleTIR, ReTool: the engine stops after the block); the feedback is an
  ```` ```output ```` block. A code block followed by more text is part of a final answer.

A generation without a tool call is the final answer: a ``message`` step, then ``verify``, whose score is the reward
(0 for a verdict of status error: OpenRLHF has no mask), and the episode ends. An episode the
executor abandons (its token budget spent) is ended when OpenRLHF drops the instance
(`rollouts.close_when_dropped`), or by the service's idle TTL.

OpenRLHF passes no configuration, so the rollout actors' environment does: ``REFEREE_URL``,
``REFEREE_API_KEY``, ``REFEREE_PATIENCE_S``, ``REFEREE_ENVIRONMENT`` (default ``python``),
``REFEREE_VERIFIER`` (default ``math``), ``REFEREE_TOOL_FORMAT`` (``hermes`` or ``code``),
``REFEREE_FEEDBACK_TEMPLATE`` (``{observation}`` is replaced; the format's own by default).
"""

from __future__ import annotations

import json
import re
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from referee.client import Episode, RefereeError, message, tool_call
from referee.trainer_adapter.rollouts import ServiceConfig, close_when_dropped, setting

FEEDBACK_TEMPLATE = (
    "\n<|im_start|>user\n<tool_response>\n{observation}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
)
TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
# The `code` format: the last opening Python fence, its block closed at the generation's end.
CODE_FENCE = re.compile(r"```(?:python3?|py)[ \t]*\n")
CODE_BLOCK_END = re.compile(r"\n?```\s*(?:</code>\s*)?$")
CODE_FEEDBACK_TEMPLATE = "\n```output\n{observation}\n```\n"
TOOL_FORMATS = ("hermes", "code")


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """The first `<tool_call>{"name", "arguments"}</tool_call>` of a generation, if any; a
    malformed one is still a tool call (the environment tells the model what is wrong)."""
    found = TOOL_CALL.search(text)
    if found is None:
        return None
    try:
        call = json.loads(found.group(1))
    except json.JSONDecodeError:
        return "invalid_tool_call", {"raw": found.group(1)[:2000]}
    if not isinstance(call, dict):
        return "invalid_tool_call", {"raw": found.group(1)[:2000]}
    arguments = call.get("arguments")
    if isinstance(arguments, str):  # some templates render the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {"raw": arguments}
    return str(call.get("name", "")), arguments if isinstance(arguments, dict) else {}


def parse_code_block(text: str) -> tuple[str, dict[str, Any]] | None:
    """The `code` format's tool call: the code of a Python block the generation ends with."""
    fences = list(CODE_FENCE.finditer(text))
    if not fences:
        return None
    body = text[fences[-1].end() :]
    end = CODE_BLOCK_END.search(body)
    if end is None or "```" in body[: end.start()]:  # not closed, or text after the block
        return None
    return "python", {"code": body[: end.start()]}


def parse_action(text: str, tool_format: str) -> tuple[str, dict[str, Any]] | None:
    """The tool call a generation makes in `tool_format` (see the module's docstring), if any."""
    return parse_code_block(text) if tool_format == "code" else parse_tool_call(text)


def task_of(label: Any, prompt: str, verifier: str) -> dict[str, Any]:
    """The episode's task from a sample's label (see the module's docstring)."""
    parsed = label
    if isinstance(label, str):
        try:
            parsed = json.loads(label)
        except json.JSONDecodeError:
            parsed = label
    if isinstance(parsed, dict):
        return {"prompt": prompt, "verifier": verifier, **parsed}
    return {"prompt": prompt, "verifier": verifier, "reference": label}


class AgentInstance(AgentInstanceBase):
    """One sample's episode."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.service = ServiceConfig.from_env()
        self.environment = setting("REFEREE_ENVIRONMENT", "python")
        self.verifier = setting("REFEREE_VERIFIER", "math")
        self.tool_format = setting("REFEREE_TOOL_FORMAT", "hermes")
        if self.tool_format not in TOOL_FORMATS:
            raise ValueError(f"REFEREE_TOOL_FORMAT is {self.tool_format!r}; one of {', '.join(TOOL_FORMATS)}")
        default = CODE_FEEDBACK_TEMPLATE if self.tool_format == "code" else FEEDBACK_TEMPLATE
        self.template = setting("REFEREE_FEEDBACK_TEMPLATE", default)
        self.episode: Episode | None = None
        self.tool_calls = 0

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        prompt = states["observation"]
        client = self.service.client()
        task = task_of(states.get("label"), prompt, self.verifier)
        episode: Episode = await client.start_episode(self.environment, task)
        self.episode = episode

        async def end() -> None:
            await client.end_episode(episode.environment, episode.episode_id)

        self._finalizer = close_when_dropped(self, end)
        return {"observation": prompt}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        assert self.episode is not None, "reset() starts the episode"
        client, episode = self.service.client(), self.episode
        call = parse_action(states["action_text"], self.tool_format)
        if call is not None:
            self.tool_calls += 1
            try:
                result = await client.step(episode.environment, episode.episode_id, tool_call(*call))
                observation, done = result.observation, result.done
            except RefereeError as exc:  # the model reads it; the rollout goes on
                observation, done = f"error: {exc}", False
            if not done:
                return self._result(0.0, self.template.format(observation=observation), False, states)
        else:
            await client.step(episode.environment, episode.episode_id, message(states["action_text"]))
        verdict = await client.verify(episode.environment, episode.episode_id)
        self._finalizer.detach()
        await client.end_episode(episode.environment, episode.episode_id)
        reward = verdict.score if verdict.score is not None else 0.0
        return self._result(reward, "", True, states, error=verdict.status == "error")

    def _result(
        self, reward: float, feedback: str, done: bool, states: dict[str, Any], error: bool = False
    ) -> dict[str, Any]:
        return {
            "rewards": torch.tensor(reward),
            "scores": torch.tensor(reward),
            "environment_feedback": feedback,
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": {
                "referee_tool_calls": float(self.tool_calls),
                "referee_verdict_error": float(error),
            },
        }


class AgentExecutor(MultiTurnAgentExecutor):
    """What OpenRLHF instantiates from ``--train.agent_func_path``."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
