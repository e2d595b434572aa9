"""Grid puzzles: sudoku (4x4, 9x9 and any n×n with rectangular boxes) and n-queens.

Both accept the grid as lines of cells (separated by spaces, commas, `|`, or nothing when every
cell is one character; decorative rule lines such as `------+------` are skipped) or as a JSON
list of rows. Every row and every cell must be there: a blank, `_` or `.` cell is missing
content, not a format variant.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from pydantic import Field, model_validator

from referee.verifiers.base import Check
from referee.verifiers.logic.common import (
    Invalid,
    LogicVerifier,
    PuzzleSpec,
    load_json,
    passed,
)

# Decorative rules between box bands ("------+-------", "=====") carry no cells.
_RULE_LINE = re.compile(r"[\s|+]*[\-=—–]{3,}[\-=—–+|\s]*")
_ROW_LABEL = re.compile(r"^\s*row\s*[0-9]{1,2}\s*[:.)=\-]\s*", re.IGNORECASE)
_CELL = re.compile(r"[0-9]+|[^\s,;|\[\](){}'\"]")
_JSONISH = re.compile(r"^\s*\[")


def grid_rows(answer: str, size: int) -> list[list[str]]:
    """The answer as rows of cell strings (not yet validated against the puzzle)."""
    if _JSONISH.match(answer):
        data = load_json(answer)
        if not isinstance(data, list) or not all(isinstance(row, list | str) for row in data):
            raise Invalid("JSON grid must be a list of rows")
        rows: list[list[str]] = []
        for row in data:
            if isinstance(row, str):
                rows.append(_cells(row, size))
            else:
                if not all(isinstance(c, str | int) and not isinstance(c, bool) for c in row):
                    raise Invalid("JSON grid cells must be strings or integers")
                rows.append([str(c).strip() for c in row])
        return rows
    lines = [line for line in answer.splitlines() if line.strip()]
    lines = [line for line in lines if not _RULE_LINE.fullmatch(line)]
    rows = [_cells(_ROW_LABEL.sub("", line, count=1), size) for line in lines]
    if len(rows) == 1 and len(rows[0]) == size * size and size > 1:
        # The whole grid on one line, row after row.
        flat = rows[0]
        rows = [flat[i * size : (i + 1) * size] for i in range(size)]
    return rows


def _cells(line: str, size: int) -> list[str]:
    cells = _CELL.findall(line)
    if len(cells) == 1 and len(cells[0]) == size and size <= 9:
        return list(cells[0])  # "3412": one character per cell, no separators
    return cells


def _shape(rows: list[list[str]], size: int, what: str) -> None:
    if len(rows) != size:
        raise Invalid(f"{len(rows)} rows, expected {size}")
    for i, row in enumerate(rows, 1):
        if len(row) != size:
            raise Invalid(f"row {i} has {len(row)} {what}, expected {size}")


# --- sudoku --------------------------------------------------------------------------------


def box_shape(size: int) -> tuple[int, int]:
    """Box rows × columns: square boxes for square sizes, else the most square divisor pair
    with fewer rows than columns (6 → 2×3, 8 → 2×4, 12 → 3×4), as printed sudokus use."""
    root = math.isqrt(size)
    if root * root == size:
        return root, root
    rows = max(d for d in range(1, root + 1) if size % d == 0)
    return rows, size // rows


class SudokuSpec(PuzzleSpec):
    size: int = Field(ge=1, le=25)
    givens: list[list[int]] = Field(description="size × size digits, 0 for an empty cell")
    box: tuple[int, int] | None = Field(default=None, description="box rows × columns; default from size")
    reference_solution: list[list[int]] | None = None
    unique_solution: bool | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SudokuSpec:
        n = self.size
        if len(self.givens) != n or any(len(row) != n for row in self.givens):
            raise ValueError(f"givens must be {n} rows of {n} cells")
        if any(not 0 <= v <= n for row in self.givens for v in row):
            raise ValueError(f"givens must hold 0..{n}")
        if self.box is not None and self.box[0] * self.box[1] != n:
            raise ValueError("box rows × columns must equal size")
        return self


class _Sudoku(LogicVerifier):
    reference_type: ClassVar[Any] = SudokuSpec

    def judge(self, answer: str, prepared: SudokuSpec) -> Check:
        n = prepared.size
        rows = grid_rows(answer, n)
        _shape(rows, n, "cells")
        grid = [[_digit(cell, n) for cell in row] for row in rows]
        for r in range(n):
            for c in range(n):
                given = prepared.givens[r][c]
                if given and grid[r][c] != given:
                    raise Invalid(f"cell ({r + 1},{c + 1}) changes the given {given}")
        full = set(range(1, n + 1))
        for i in range(n):
            if set(grid[i]) != full:
                raise Invalid(f"row {i + 1} repeats a digit")
            if {grid[r][i] for r in range(n)} != full:
                raise Invalid(f"column {i + 1} repeats a digit")
        br, bc = prepared.box or box_shape(n)
        for top in range(0, n, br):
            for left in range(0, n, bc):
                box = {grid[r][c] for r in range(top, top + br) for c in range(left, left + bc)}
                if box != full:
                    raise Invalid(f"the box at row {top + 1}, column {left + 1} repeats a digit")
        return passed("valid completed grid")


def _digit(cell: str, n: int) -> int:
    if not cell.isascii() or not cell.isdigit() or len(cell) > 2:
        raise Invalid(f"cell {cell[:10]!r} is not a digit (grid incomplete?)")
    value = int(cell)
    if not 1 <= value <= n:
        raise Invalid(f"digit {value} out of range 1..{n}")
    return value


_SUDOKU_GIVENS_4 = [[0, 4, 1, 2], [0, 2, 0, 0], [0, 1, 0, 0], [2, 0, 0, 1]]


class Sudoku4x4(_Sudoku):
    name = "logic.sudoku_4x4"
    description = (
        "4x4 sudoku (2x2 boxes): any completion that keeps the givens and has 1-4 once per row, "
        "column and box scores 1; grid as lines of digits or a JSON list of rows."
    )
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>fill the forced cells</think>"
        "<answer>\n3 4 1 2\n1 2 3 4\n4 1 2 3\n2 3 4 1\n</answer>",
        "reference": {"size": 4, "givens": _SUDOKU_GIVENS_4},
        "expected_score": 1.0,
    }


class Sudoku9x9(_Sudoku):
    name = "logic.sudoku_9x9"
    description = (
        "9x9 sudoku (3x3 boxes): any completion that keeps the givens and has 1-9 once per row, "
        "column and box scores 1; grid as lines of digits or a JSON list of rows."
    )
    example: ClassVar[dict[str, Any]] = {
        "response": "<answer>\n"
        + "\n".join(" ".join(str((r * 3 + r // 3 + c) % 9 + 1) for c in range(9)) for r in range(9))
        + "\n</answer>",
        "reference": {
            "size": 9,
            "givens": [[1, 2, 3, 4, 5, 6, 7, 8, 9]] + [[0] * 9 for _ in range(8)],
        },
        "expected_score": 1.0,
    }


# --- n-queens ------------------------------------------------------------------------------

_QUEEN = frozenset("Qq♛♕")
_EMPTY = frozenset("_.-0·○□")


class QueensSpec(PuzzleSpec):
    n: int = Field(ge=1, le=32)
    given_queens: list[tuple[int, int]] = Field(
        default_factory=list, description="(row, column), 0-based, queens that must stay"
    )
    reference_solution: str | None = None
    num_valid_completions: int | None = None
    valid_completions: list[str] | None = None
    format: str | None = None

    @model_validator(mode="after")
    def _in_range(self) -> QueensSpec:
        if any(not (0 <= r < self.n and 0 <= c < self.n) for r, c in self.given_queens):
            raise ValueError("given_queens must lie on the board")
        return self


class NQueens(LogicVerifier):
    name = "logic.n_queens"
    description = (
        "n-queens completion: a full n×n board ('Q' queen, '_' or '.' empty; lines or JSON rows) "
        "with one queen per row and column, none on a shared diagonal, keeping the given queens."
    )
    reference_type: ClassVar[Any] = QueensSpec
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>try columns 1,3,0,2</think>"
        "<answer>\n_ Q _ _\n_ _ _ Q\nQ _ _ _\n_ _ Q _\n</answer>",
        "reference": {"n": 4, "given_queens": [[0, 1]]},
        "expected_score": 1.0,
    }

    def judge(self, answer: str, prepared: QueensSpec) -> Check:
        n = prepared.n
        rows = grid_rows(answer, n)
        _shape(rows, n, "cells")
        cells = {cell for row in rows for cell in row}
        binary = cells <= {"0", "1"} and "1" in cells  # a 0/1 board: 1 marks a queen
        queens: list[tuple[int, int]] = []
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                if cell in _QUEEN or (binary and cell == "1"):
                    queens.append((r, c))
                elif cell not in _EMPTY:
                    raise Invalid(f"cell {cell[:10]!r} is neither a queen nor empty")
        if len(queens) != n:
            raise Invalid(f"{len(queens)} queens on the board, expected {n}")
        if len({r for r, _ in queens}) != n or len({c for _, c in queens}) != n:
            raise Invalid("two queens share a row or column")
        if len({r - c for r, c in queens}) != n or len({r + c for r, c in queens}) != n:
            raise Invalid("two queens share a diagonal")
        missing = [list(q) for q in prepared.given_queens if tuple(q) not in set(queens)]
        if missing:
            raise Invalid(f"given queens moved or removed: {missing}")
        return passed("valid placement")
