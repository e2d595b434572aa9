"""The code-interpreter environment: the model runs Python in a session, then answers.

Tool-integrated reasoning (ReTool, SimpleTIR, verl's sandbox tools) in one environment: the task
is a prompt and what judges the answer (any verifier: `math`, `code`, `logic.*`, a registered
type); each `python` tool call runs in the episode's code session, state kept between calls; a
`message` is the final answer. The session is opened on the first tool call only (an episode
answered without code costs no container) and in the episode owner's name, so it counts in that
key's session quota like any session it opens itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Protocol

from referee.environments.base import Action, Reset, Step, check_inputs, judge, task_error
from referee.errors import DomainError
from referee.models import Verdict
from referee.scoring import Scorer

PYTHON_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "python",
        "description": (
            "Run Python code in a persistent interpreter (variables, imports and files in the "
            "working directory are kept between calls). Returns stdout, stderr and the value of "
            "the last expression, as a notebook cell shows them."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The code to run."}},
            "required": ["code"],
            "additionalProperties": False,
        },
    },
}
MAX_CODE_CHARS = 200_000
MAX_PROMPT_CHARS = 200_000
# What of a call's output goes back to the model (the session caps it already; a tool message
# this long is mostly useless to the model and costly to the trainer's context).
OBSERVATION_CHARS = 16_000


class CallResult(Protocol):
    """A code session's answer to one call (`referee.sandbox.CallOutcome` is one; read-only)."""

    @property
    def status(self) -> str: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def value(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def restarted(self) -> bool: ...


class CodeRunner(Protocol):
    """What an episode needs of the service's code sessions: open one in its owner's name, run
    code in it, close it. The runtime adapts its `CodeSessions` to this."""

    async def open(self, owner: Hashable) -> str: ...

    async def run(self, owner: Hashable, session_id: str, code: str) -> CallResult: ...

    async def close(self, owner: Hashable, session_id: str) -> None: ...


def _tool_error(tool: str, status: str, message: str) -> Step:
    """A tool call that ran nothing: the turn is spent, the model is told why."""
    return Step(
        f"error: {message}",
        done=False,
        info={"tool": tool, "status": status},
        tool_call=True,
        tool_error=True,
    )


def format_call(result: CallResult) -> str:
    """A call's outcome as a tool message: only the parts that say something."""
    parts = []
    if result.stdout:
        parts.append(f"stdout:\n{result.stdout}")
    if result.stderr:
        parts.append(f"stderr:\n{result.stderr}")
    if result.value is not None:
        parts.append(f"value: {result.value}")
    if result.error:
        parts.append(f"error ({result.status}):\n{result.error}")
    elif result.status != "ok":
        parts.append(f"error: {result.status}")
    if result.restarted:
        parts.append("(the interpreter was restarted: variables and imports are lost, files kept)")
    if result.truncated:
        parts.append("(output truncated)")
    text = "\n".join(parts) or "(no output)"
    if len(text) > OBSERVATION_CHARS:
        text = text[:OBSERVATION_CHARS] + "\n…(output truncated)"
    return text


class PythonEpisode:
    """One episode of a code-interpreter kind; `verifier` set means the task may not name another."""

    def __init__(
        self, scorer: Scorer, runner: CodeRunner | None, owner: Hashable, verifier: str | None, template: str
    ) -> None:
        self._scorer, self._runner, self._owner = scorer, runner, owner
        self._fixed_verifier = verifier
        self._template = template
        self._session: str | None = None
        self.verifier = ""
        self.reference: Any = None
        self.options: dict[str, Any] = {}
        self.final: str | None = None

    async def reset(self, task: Mapping[str, Any] | None, seed: int | None) -> Reset:
        if task is None:
            raise task_error("this environment needs a task: {prompt, verifier, reference, options}")
        prompt = task.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_PROMPT_CHARS:
            raise task_error(f"a non-empty string of at most {MAX_PROMPT_CHARS} characters", "prompt")
        unknown = sorted(set(task) - {"prompt", "verifier", "reference", "options"})
        if unknown:
            raise task_error(f"unknown fields {unknown}; known: prompt, verifier, reference, options")
        verifier = task.get("verifier", self._fixed_verifier)
        if self._fixed_verifier is not None and verifier != self._fixed_verifier:
            raise task_error(f"this environment is judged by {self._fixed_verifier!r}", "verifier")
        if not isinstance(verifier, str) or not verifier:
            raise task_error("the name of the verifier that judges the final answer", "verifier")
        options = task.get("options") or {}
        if not isinstance(options, dict):
            raise task_error("a JSON object", "options")
        await check_inputs(self._scorer, verifier, task.get("reference"), options)
        self.verifier, self.reference, self.options = verifier, task.get("reference"), options
        observation = self._template.replace("$prompt", prompt) if self._template else prompt
        return Reset(observation=observation, tools=[PYTHON_TOOL])

    async def step(self, action: Action, turns_left: int) -> Step:
        if action.type == "message":
            self.final = action.content
            return Step(observation="", done=True, info={"final": True})
        if action.name != "python":
            return _tool_error(
                action.name[:64],
                "unknown_tool",
                f"unknown tool {action.name[:64]!r}; the only tool is `python`",
            )
        code = action.arguments.get("code")
        if not isinstance(code, str) or len(code) > MAX_CODE_CHARS or set(action.arguments) != {"code"}:
            shape = f'`python` takes {{"code": "..."}} (a string of at most {MAX_CODE_CHARS} characters)'
            return _tool_error("python", "bad_arguments", shape)
        if self._runner is None:
            return _tool_error("python", "unavailable", "code sessions are not available on this service")
        note = ""
        try:
            result = await self._run(code)
        except DomainError as exc:
            if exc.code != "unknown_session":
                if exc.code == "session_lost":  # the next call opens a fresh session
                    self._session = None
                    return _tool_error(
                        "python", "lost", "the interpreter's container was lost; state is gone"
                    )
                raise  # quota, no sandbox, busy: the trainer's to retry (429, 503, 409)
            # The session outlived its idle TTL or lifetime between two turns: start afresh.
            self._session = None
            result = await self._run(code)
            note = "(a new interpreter was started: the previous one expired)\n"
        return Step(
            observation=note + format_call(result),
            done=False,
            info={"tool": "python", "status": result.status, "restarted": result.restarted},
            tool_call=True,
            tool_error=result.status != "ok",
        )

    async def _run(self, code: str) -> CallResult:
        assert self._runner is not None
        if self._session is None:
            self._session = await self._runner.open(self._owner)
        return await self._runner.run(self._owner, self._session, code)

    async def verify(self, response: str | None) -> Verdict:
        answer = response if response is not None else (self.final or "")
        return await judge(self._scorer, self._owner, self.verifier, answer, self.reference, self.options)

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and self._runner is not None:
            await self._runner.close(self._owner, session)


class PythonKind:
    """The built-in `python` environment, or a registered one built on it (`verifier` fixed)."""

    def __init__(
        self,
        scorer: Scorer,
        runner: CodeRunner | None,
        *,
        name: str = "python",
        description: str = (
            "Code interpreter: the task's prompt, a `python` tool whose calls run in one "
            "stateful session per episode, and a final message judged by the task's verifier "
            "(any verifier: math, code, logic, registered types)."
        ),
        max_turns: int = 16,
        verifier: str | None = None,
        template: str = "",
    ) -> None:
        self.name, self.description, self.max_turns = name, description, max_turns
        self.tools = [PYTHON_TOOL]
        self._scorer, self._runner = scorer, runner
        self._verifier, self._template = verifier, template

    def make(self, owner: Hashable) -> PythonEpisode:
        return PythonEpisode(self._scorer, self._runner, owner, self._verifier, self._template)
