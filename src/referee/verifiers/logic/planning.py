"""Planning puzzles whose answer is a move sequence: tower of Hanoi and maze paths.

Both problems ask for the *shortest* solution, so a legal but longer sequence scores 0. The
optimum is computed from the puzzle itself (2^n − 1 Hanoi moves for three pegs; breadth-first
search for the maze) rather than trusted from the reference. With more than three pegs the
reference's `min_moves` is used when given, else the Frame–Stewart number.
"""

from __future__ import annotations

import re
from collections import deque
from functools import cache
from typing import Any, ClassVar

from pydantic import Field, model_validator

from referee.verifiers.base import Check
from referee.verifiers.logic.common import (
    Invalid,
    LogicVerifier,
    PuzzleSpec,
    excerpt,
    is_separator_text,
    passed,
)

# --- tower of Hanoi -------------------------------------------------------------------------


class HanoiSpec(PuzzleSpec):
    disks: int = Field(ge=1, le=20)
    pegs: int = Field(default=3, ge=3, le=10)
    start_peg: int = Field(ge=1)
    target_peg: int = Field(ge=1)
    min_moves: int | None = Field(default=None, description="used only for more than three pegs")
    reference_solution: str | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _pegs(self) -> HanoiSpec:
        if not (self.start_peg <= self.pegs and self.target_peg <= self.pegs):
            raise ValueError("start_peg and target_peg must be between 1 and pegs")
        if self.start_peg == self.target_peg:
            raise ValueError("start_peg and target_peg must differ")
        return self


@cache
def frame_stewart(disks: int, pegs: int) -> int:
    """Fewest moves for `disks` on `pegs` (optimal for 3 and 4 pegs; the conjectured optimum
    beyond)."""
    if disks == 0:
        return 0
    if pegs == 3:
        return 2**disks - 1
    return min(2 * frame_stewart(k, pegs) + frame_stewart(disks - k, pegs - 1) for k in range(disks))


_MOVE = re.compile(
    r"(?<![\w])(?:move\s+)?(?:disk\s*#?\s*)?(?P<disk>[0-9]{1,2})\s+from\s+(?:peg\s*)?(?P<src>[0-9]{1,2})"
    r"\s+to\s+(?:peg\s*)?(?P<dst>[0-9]{1,2})(?![\w])",
    re.IGNORECASE,
)
_NUMBERING = re.compile(r"(?m)^[ \t]*(?:step\s*)?[0-9]{1,4}\s*[.):]\s+(?=\S)", re.IGNORECASE)


class TowerOfHanoi(LogicVerifier):
    name = "logic.tower_of_hanoi"
    description = (
        "Tower of Hanoi: the moves ('Move disk X from Peg Y to Peg Z', one per line, numbering "
        "allowed) are replayed; every move must be legal, all disks must end on the target peg, "
        "and the sequence must be of minimal length."
    )
    reference_type: ClassVar[Any] = HanoiSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>two disks: three moves</think><answer>\nMove disk 1 from Peg 1 to Peg 2\n"
        "Move disk 2 from Peg 1 to Peg 3\nMove disk 1 from Peg 2 to Peg 3\n</answer>",
        "reference": {"disks": 2, "pegs": 3, "start_peg": 1, "target_peg": 3},
        "expected_score": 1.0,
    }

    def judge(self, answer: str, prepared: HanoiSpec) -> Check:
        text = _NUMBERING.sub("", answer)
        moves: list[tuple[int, int, int]] = []
        pos = 0
        for match in _MOVE.finditer(text):
            if not is_separator_text(text[pos : match.start()], ("then", "and")):
                raise Invalid(f"unexpected text {excerpt(text[pos : match.start()].strip(), 40)!r}")
            moves.append((int(match.group("disk")), int(match.group("src")), int(match.group("dst"))))
            pos = match.end()
        if not moves or not is_separator_text(text[pos:], ("then", "and")):
            raise Invalid(f"unexpected text {excerpt(text[pos:].strip(), 40)!r}")
        spec = prepared
        stacks: dict[int, list[int]] = {p: [] for p in range(1, spec.pegs + 1)}
        stacks[spec.start_peg] = list(range(spec.disks, 0, -1))
        for i, (disk, src, dst) in enumerate(moves, 1):
            if src not in stacks or dst not in stacks or src == dst:
                raise Invalid(f"move {i}: no such move between pegs {src} and {dst}")
            if not stacks[src] or stacks[src][-1] != disk:
                raise Invalid(f"move {i}: disk {disk} is not on top of peg {src}")
            if stacks[dst] and stacks[dst][-1] < disk:
                raise Invalid(f"move {i}: disk {disk} onto the smaller disk {stacks[dst][-1]}")
            stacks[dst].append(stacks[src].pop())
        if len(stacks[spec.target_peg]) != spec.disks:
            raise Invalid(f"not all disks end on peg {spec.target_peg}")
        best = frame_stewart(spec.disks, 3) if spec.pegs == 3 else spec.min_moves
        if best is None:
            best = frame_stewart(spec.disks, spec.pegs)
        if len(moves) != best:
            raise Invalid(f"{len(moves)} moves; the shortest solution has {best}")
        return passed("shortest legal solution", moves=len(moves))


# --- maze -----------------------------------------------------------------------------------

_STEPS = {
    "up": (-1, 0), "u": (-1, 0), "north": (-1, 0), "n": (-1, 0),
    "down": (1, 0), "d": (1, 0), "south": (1, 0), "s": (1, 0),
    "left": (0, -1), "l": (0, -1), "west": (0, -1), "w": (0, -1),
    "right": (0, 1), "r": (0, 1), "east": (0, 1), "e": (0, 1),
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z]+")
_INFEASIBLE = re.compile(
    r"infeasible|impossible|unreachable|unsolvable|no (?:valid )?(?:path|route|solution)(?: exists)?",
    re.IGNORECASE,
)


class MazeSpec(PuzzleSpec):
    grid: list[list[str]] = Field(min_length=1, max_length=200)
    start: str = Field(default="*", description="start cell symbol")
    goal: str = Field(default="#", description="goal cell symbol")
    wall: str = Field(default="X", description="wall cell symbol; any other cell is open")
    shortest_length: int | None = Field(default=None, description="informational; recomputed by BFS")
    reference_solution: str | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _cells(self) -> MazeSpec:
        if any(len(row) != len(self.grid[0]) or len(row) > 200 for row in self.grid):
            raise ValueError("grid rows must have equal length (at most 200)")
        cells = [c for row in self.grid for c in row]
        if cells.count(self.start) != 1 or cells.count(self.goal) != 1:
            raise ValueError("grid needs exactly one start and one goal cell")
        return self


def _find(grid: list[list[str]], symbol: str) -> tuple[int, int]:
    return next((r, c) for r, row in enumerate(grid) for c, cell in enumerate(row) if cell == symbol)


def shortest_path_length(spec: MazeSpec) -> int | None:
    start, goal = _find(spec.grid, spec.start), _find(spec.grid, spec.goal)
    rows, cols = len(spec.grid), len(spec.grid[0])
    dist = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        if (r, c) == goal:
            return dist[goal]
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            nxt = (r + dr, c + dc)
            if (
                0 <= nxt[0] < rows
                and 0 <= nxt[1] < cols
                and nxt not in dist
                and spec.grid[nxt[0]][nxt[1]] != spec.wall
            ):
                dist[nxt] = dist[(r, c)] + 1
                queue.append(nxt)
    return None


class MazePath(LogicVerifier):
    name = "logic.maze_path"
    description = (
        "Maze: moves (up/down/left/right, U/D/L/R, compass words; any separators) from * to #, "
        "never through a wall X, of shortest length; or 'infeasible' when the goal is unreachable."
    )
    reference_type: ClassVar[Any] = MazeSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>go around the wall</think><answer>down down right right</answer>",
        "reference": {"grid": [["*", "X", "O"], ["O", "X", "O"], ["O", "O", "#"]]},
        "expected_score": 1.0,
    }

    def prepare(self, reference: MazeSpec, options: Any) -> tuple[MazeSpec, int | None]:
        return reference, shortest_path_length(reference)

    def judge(self, answer: str, prepared: tuple[MazeSpec, int | None]) -> Check:
        spec, best = prepared
        if _INFEASIBLE.fullmatch(answer.strip().rstrip(".!")):
            if best is None:
                return passed("correctly reports the goal unreachable")
            raise Invalid(f"the goal is reachable in {best} moves")
        compact = answer.strip()
        if len(compact) > 1 and re.fullmatch(r"[UDLR]+", compact):
            words = list(compact)  # "UULR": one letter per move
        else:
            words = []
            pos = 0
            for match in _WORD.finditer(answer):
                if not is_separator_text(answer[pos : match.start()]):
                    raise Invalid(f"unexpected text {excerpt(answer[pos : match.start()].strip(), 40)!r}")
                words.append(match.group(0))
                pos = match.end()
            if not is_separator_text(answer[pos:]):
                raise Invalid(f"unexpected text {excerpt(answer[pos:].strip(), 40)!r}")
        if not words:
            raise Invalid("no moves")
        r, c = _find(spec.grid, spec.start)
        rows, cols = len(spec.grid), len(spec.grid[0])
        for i, word in enumerate(words, 1):
            step = _STEPS.get(word.lower())
            if step is None:
                raise Invalid(f"{excerpt(word, 20)!r} is not a move")
            r, c = r + step[0], c + step[1]
            if not (0 <= r < rows and 0 <= c < cols):
                raise Invalid(f"move {i} leaves the grid")
            if spec.grid[r][c] == spec.wall:
                raise Invalid(f"move {i} runs into a wall")
        if spec.grid[r][c] != spec.goal:
            raise Invalid("the route does not end at the goal")
        if best is not None and len(words) != best:
            raise Invalid(f"{len(words)} moves; the shortest route has {best}")
        return passed("shortest route", moves=len(words))
