"""Logic and puzzle verifiers: checkers that validate a candidate against the puzzle's rules.

One verifier per task (`logic.<task>`); the reference is the puzzle record (`answer_spec`) as a
dataset stores it. The shared policy (answer extraction, size guards, leniency) is in `common`,
the no-eval arithmetic grammar in `arith`, and each family of puzzles in its own module.
"""

from referee.verifiers.base import Verifier
from referee.verifiers.logic.deduction import KnightsKnaves, SatCnf
from referee.verifiers.logic.graphs import GraphColoring, Toposort
from referee.verifiers.logic.grids import NQueens, Sudoku4x4, Sudoku9x9
from referee.verifiers.logic.numbers import Countdown, Game24, NumberSorting
from referee.verifiers.logic.planning import MazePath, TowerOfHanoi
from referee.verifiers.logic.zebra import Zebra

VERIFIERS: list[type[Verifier]] = [
    Sudoku4x4,
    Sudoku9x9,
    NQueens,
    KnightsKnaves,
    Countdown,
    Game24,
    SatCnf,
    GraphColoring,
    Zebra,
    NumberSorting,
    Toposort,
    TowerOfHanoi,
    MazePath,
]

__all__ = ["VERIFIERS"]
