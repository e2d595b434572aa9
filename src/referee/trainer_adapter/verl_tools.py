"""verl's code-interpreter tool backed by Referee code sessions (verl 0.9.1's `BaseTool`).

Declared in verl's tool YAML (`actor_rollout_ref.rollout.multi_turn.tool_config_path`)::

    tools:
      - class_name: referee.trainer_adapter.verl_tools.RefereeCodeInterpreterTool
        config:
          type: native
          base_url: http://referee:8000
          api_key_env: REFEREE_API_KEY      # the variable holding the key, not the key
          limits: {call_time_s: 10, memory_mb: 512}
          idle_ttl_s: 120
        tool_schema: ...                    # optional: `python` with a `code` string by default

Where the state lives. verl 0.9.1's `ToolAgentLoop` calls `create`, `execute` and `release`
around *every* tool call, and passes the trajectory's `AgentData` to `execute`: a session per
tool instance would forget `x = 1` before the next call. So with an `agent_data`, the session
is the trajectory's (opened on its first call, kept on the `AgentData`, closed when verl drops
it: `rollouts.close_when_dropped`); without one (a caller that creates an instance per
trajectory and releases it at the end, as verl's earlier rollouts did), the instance's, closed
by `release`. `create_kwargs` (the dataset's `tools_kwargs`) may carry `files`
(path -> text) placed in the session's work dir.

A call's failure is the model's to read, never the rollout's end: an exception, a timeout or
an expired session comes back as the tool's text (with `status` in the metrics), and a lost
session is replaced by a fresh one on the next call.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from referee.client import AsyncSession, RefereeError, RefereeHTTPError
from referee.trainer_adapter.rollouts import ServiceConfig, close_when_dropped

DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python code in a persistent interpreter (variables, imports and files are kept "
            "between calls). Returns stdout, stderr and the value of the last expression."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The code to run."}},
            "required": ["code"],
        },
    },
}
# Where a trajectory's sessions are kept on verl's AgentData (one per tool name).
AGENT_DATA_ATTR = "_referee_sessions"


@dataclass
class _Holder:
    """A session opened on first use, with the files it starts with."""

    files: dict[str, str] = field(default_factory=dict)
    session: AsyncSession | None = None


class RefereeCodeInterpreterTool(BaseTool):
    """A `python(code)` tool whose calls run in a Referee session, state kept per trajectory."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        self.service = ServiceConfig.from_mapping(config, ignore=frozenset({"type"}))  # verl's own key
        super().__init__(config, tool_schema)  # type: ignore[arg-type]  # None: get_openai_tool_schema
        self._instances: dict[str, _Holder] = {}

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        existing = getattr(self, "tool_schema", None)
        return existing or OpenAIFunctionToolSchema.model_validate(DEFAULT_SCHEMA)

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        instance_id = instance_id or uuid.uuid4().hex
        create_kwargs = kwargs.get("create_kwargs") or {}
        self._instances[instance_id] = _Holder(files=dict(create_kwargs.get("files") or {}))
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        code = parameters.get("code")
        if not isinstance(code, str):
            return (
                ToolResponse(text='error: the tool takes {"code": "<python source>"}'),
                0.0,
                {"status": "bad_arguments"},
            )
        holder = self._holder(instance_id, kwargs.get("agent_data"))
        try:
            if holder.session is None:
                holder.session = await self._open(holder.files)
            result = await holder.session.run(code, self.service.time_s)
        except RefereeHTTPError as exc:
            if exc.status_code in (404, 503):  # expired or its container lost: the next call starts afresh
                holder.session = None
                return (
                    ToolResponse(text=f"error: the interpreter was lost ({exc.message}); state is gone"),
                    0.0,
                    {"status": "lost"},
                )
            return ToolResponse(text=f"error: {exc}"), 0.0, {"status": "unavailable"}
        except RefereeError as exc:
            return ToolResponse(text=f"error: {exc}"), 0.0, {"status": "unavailable"}
        metrics = {"status": result.status, "duration_s": result.duration_s, "restarted": result.restarted}
        return ToolResponse(text=result.text()), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0  # the answer is judged by the reward function, not by the tool

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        holder = self._instances.pop(instance_id, None)
        if holder is not None and holder.session is not None:
            await _close(holder.session)

    def _holder(self, instance_id: str, agent_data: Any) -> _Holder:
        own = self._instances.setdefault(instance_id, _Holder())
        if agent_data is None:
            return own
        sessions: dict[str, _Holder] | None = getattr(agent_data, AGENT_DATA_ATTR, None)
        if sessions is None:
            sessions = {}
            setattr(agent_data, AGENT_DATA_ATTR, sessions)
            close_when_dropped(agent_data, _closer(sessions))
        return sessions.setdefault(self.name, _Holder(files=own.files))

    async def _open(self, files: dict[str, str]) -> AsyncSession:
        session: AsyncSession = await self.service.client().open_session(
            self.service.language, self.service.limits or None, files or None, self.service.idle_ttl_s
        )
        return session


def _closer(sessions: dict[str, _Holder]) -> Any:
    async def close() -> None:
        for holder in sessions.values():
            if holder.session is not None:
                await _close(holder.session)

    return close


async def _close(session: AsyncSession) -> None:
    with contextlib.suppress(RefereeError):  # the service's idle TTL reclaims it
        await session.close()
