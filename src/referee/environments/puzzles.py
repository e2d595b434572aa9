"""The logic puzzles as multi-turn games: the model answers, the checker says what is wrong.

Each `logic.*` checker is a game of the same name. A turn is one answer (a `message` holding an
`<answer>` block, as the single-turn verifier reads it); the observation is the checker's own
reason ("row 3 repeats a digit", "clause [1, -3] is not satisfied", "the expression equals 30,
not 24"): as specific as the checker can be, never the solution, because a checker's reason
only ever describes the candidate it was given (a checker never prints its reference). The game
ends when an answer solves the puzzle or the turns run out; `verify` gives the last answer's
verdict.

The task is the puzzle record (`{"puzzle": {...}}`, the verifier's reference) or, for the games
with a generator (`generators.py`), a seed.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

from referee.environments.base import Action, Reset, Step, check_inputs, judge, task_error
from referee.environments.generators import generate
from referee.models import Verdict, VerdictStatus
from referee.scoring import Scorer

ANSWER_HINT = (
    "Put your answer inside <answer>...</answer>. After each answer you are told whether it "
    "solves the puzzle and, if not, what is wrong with it; you may answer up to {turns} times."
)
MAX_PROMPT_CHARS = 100_000
# Fields of a puzzle record that answer it, or say what the answer is like: never shown.
HIDDEN = frozenset(
    {
        "solution",
        "reference_solution",
        "valid_completions",
        "num_valid_completions",
        "num_valid_orders",
        "satisfiable",
        "shortest_length",
        "unique_solution",
    }
)


def shown(puzzle: Any) -> str:
    """The puzzle as the model sees it: the record without its solution fields, as JSON."""
    if isinstance(puzzle, dict):
        puzzle = {k: v for k, v in puzzle.items() if k not in HIDDEN}
    return json.dumps(puzzle, ensure_ascii=False, separators=(", ", ": "))


def default_prompt(description: str, puzzle: Any, max_turns: int) -> str:
    body = shown(puzzle)
    return f"{description}\n\nPuzzle:\n{body}\n\n{ANSWER_HINT.format(turns=max_turns)}"


class PuzzleEpisode:
    def __init__(self, kind: PuzzleKind, owner: Hashable) -> None:
        self._kind, self._owner = kind, owner
        self.puzzle: Any = None
        self.options: dict[str, Any] = {}
        self.last: Verdict | None = None
        self.solved = False

    @property
    def reference(self) -> Any:
        """The puzzle: the reference its checker judges every answer against."""
        return self.puzzle

    async def reset(self, task: Mapping[str, Any] | None, seed: int | None) -> Reset:
        kind = self._kind
        task = dict(task or {})
        unknown = sorted(set(task) - {"puzzle", "prompt", "options"})
        if unknown:
            raise task_error(f"unknown fields {unknown}; known: puzzle, prompt, options")
        puzzle = task.get("puzzle")
        if puzzle is None:
            if seed is None:
                raise task_error(
                    "a puzzle is required (`task.puzzle`), or a `seed` for the games with a generator"
                )
            puzzle = generate(kind.verifier, seed)
            if puzzle is None:
                raise task_error(f"{kind.verifier} has no puzzle generator: send the puzzle as `task.puzzle`")
        options = task.get("options") or {}
        if not isinstance(options, dict):
            raise task_error("a JSON object", "options")
        prompt = task.get("prompt")
        if prompt is not None and (not isinstance(prompt, str) or len(prompt) > MAX_PROMPT_CHARS):
            raise task_error(f"a string of at most {MAX_PROMPT_CHARS} characters", "prompt")
        await check_inputs(kind.scorer, kind.verifier, puzzle, options)
        self.puzzle, self.options = puzzle, options
        text = prompt or default_prompt(kind.puzzle_description, puzzle, kind.max_turns)
        if kind.template:
            text = kind.template.replace("$puzzle", shown(puzzle)).replace("$prompt", text)
        return Reset(observation=text, tools=[])

    async def step(self, action: Action, turns_left: int) -> Step:
        if action.type != "message":
            return Step(
                observation="error: this game has no tools; answer with a message holding <answer>...</answer>",
                done=False,
                info={"tool": action.name[:64], "status": "unknown_tool"},
                tool_call=True,
                tool_error=True,
            )
        verdict = await self._judge(action.content)
        self.last = verdict
        info: dict[str, Any] = {"score": verdict.score, "status": verdict.status.value}
        if verdict.status is VerdictStatus.error:
            return Step(f"the answer could not be checked: {verdict.reason}", done=False, info=info)
        if verdict.score is not None and verdict.score >= 1.0:
            self.solved = True
            return Step(f"Correct: {verdict.reason or 'solved'}.", done=True, info={**info, "solved": True})
        left = (
            f"{turns_left} answer{'s' if turns_left != 1 else ''} left."
            if turns_left > 0
            else "No answers left."
        )
        return Step(f"Not solved: {verdict.reason or 'wrong answer'}. {left}", done=False, info=info)

    async def verify(self, response: str | None) -> Verdict:
        if response is not None:
            return await self._judge(response)
        if self.last is not None:
            return self.last
        return await self._judge("")  # no answer given: judged as one (score 0, and why)

    async def _judge(self, response: str) -> Verdict:
        kind = self._kind
        return await judge(kind.scorer, self._owner, kind.verifier, response, self.puzzle, self.options)

    async def close(self) -> None:
        """Nothing to release: a game keeps no container."""


class PuzzleKind:
    """The game of one `logic.*` checker (or a registered game built on one)."""

    def __init__(
        self,
        scorer: Scorer,
        verifier: str,
        *,
        name: str | None = None,
        description: str | None = None,
        max_turns: int = 8,
        template: str = "",
    ) -> None:
        self.scorer, self.verifier = scorer, verifier
        self.puzzle_description = scorer.installed.get(verifier).description
        self.name = name or verifier
        seeded = (
            " Seeded puzzles: send `seed` instead of a task." if generate(verifier, 0) is not None else ""
        )
        self.description = description or (
            f"{self.puzzle_description} Multi-turn: the checker says what is wrong with each answer.{seeded}"
        )
        self.max_turns = max_turns
        self.template = template
        self.tools: list[dict[str, Any]] = []

    def make(self, owner: Hashable) -> PuzzleEpisode:
        return PuzzleEpisode(self, owner)
