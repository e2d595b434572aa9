"""True, false and malformed cases per verifier, with alternative solutions built here."""

from __future__ import annotations

from typing import Any

import pytest
from logic_helpers import judge, wrap
from pydantic import ValidationError

from referee.verifiers.base import VerifierError

# --- extraction policy (shared by every logic verifier) -----------------------------------

TOPO = {"nodes": ["A", "B", "C"], "edges": [["A", "B"]]}


@pytest.mark.parametrize(
    ("response", "score"),
    [
        (wrap("A, B, C"), 1.0),
        ("<answer>A, B, C</answer>", 1.0),  # no think block at all
        ("<think>x</think>prose<answer>A, B, C</answer>more prose", 1.0),
        ("<think>x</think><answer>B, A, C</answer><answer>A, B, C</answer>", 1.0),  # last counts
        ("<think>x</think><answer>A, B, C</answer><answer>B, A, C</answer>", 0.0),
        ("<think>x</think><answer>A, B, C</answer> then <answer>B, A", 0.0),  # truncated last
        ("<think>x <answer>A, B, C</answer>", 0.0),  # think never closed
        ("<think><answer>A, B, C</answer></think>", 0.0),  # answer only inside reasoning
        ("<think>x</think><answer>   </answer>", 0.0),
        ("<think>x</think><answer><answer>A, B, C</answer></answer>", 0.0),
        ("<think>x</think><ANSWER>A, B, C</ANSWER>", 0.0),
        ("<think>x</think>\\boxed{A, B, C}", 0.0),
        ("<think>x</think><answer>`A, B, C`</answer>", 1.0),  # one layer of quoting is format
        ("<think>x</think><answer>A,\x00B, C</answer>", 0.0),
    ],
)
def test_extraction_policy(response: str, score: float) -> None:
    assert judge("logic.toposort", response, TOPO).score == score


# --- sudoku -------------------------------------------------------------------------------

EMPTY4 = {"size": 4, "givens": [[0] * 4 for _ in range(4)]}
GRID_A = "1 2 3 4\n3 4 1 2\n2 1 4 3\n4 3 2 1"
GRID_B = "4 3 2 1\n2 1 4 3\n3 4 1 2\n1 2 3 4"


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        (GRID_A, 1.0),
        (GRID_B, 1.0),  # any valid completion
        ("1,2,3,4\n3,4,1,2\n2,1,4,3\n4,3,2,1", 1.0),
        ("1234\n3412\n2143\n4321", 1.0),
        ("[[1,2,3,4],[3,4,1,2],[2,1,4,3],[4,3,2,1]]", 1.0),
        ("1 2 | 3 4\n3 4 | 1 2\n----+----\n2 1 | 4 3\n4 3 | 2 1", 1.0),
        ("1 2 3 4 3 4 1 2 2 1 4 3 4 3 2 1", 1.0),  # one line, row by row
        ("1 2 3 4\n3 4 1 2\n2 1 4 3", 0.0),  # missing row
        ("1 2 3 4\n3 4 1 2\n2 1 4 3\n4 3 2 1\n1 2 3 4", 0.0),  # extra row
        ("1 2 3 4\n3 4 1 2\n2 1 4 3\n4 3 2 _", 0.0),
        ("1 2 3 4\n2 1 4 3\n3 4 1 2\n4 3 2 1", 0.0),  # rows and columns fine, boxes not
        ("1 2 3 5\n3 4 1 2\n2 1 4 3\n4 3 2 1", 0.0),
        ("1 2 3 4\n3 4 1 2\n2 1 4 3\n4 3 2 1 or maybe 4 3 1 2", 0.0),
    ],
)
def test_sudoku_4x4(answer: str, score: float) -> None:
    assert judge("logic.sudoku_4x4", wrap(answer), EMPTY4).score == score


def test_sudoku_keeps_givens() -> None:
    ref = {"size": 4, "givens": [[4, 0, 0, 0]] + [[0] * 4 for _ in range(3)]}
    assert judge("logic.sudoku_4x4", wrap(GRID_B), ref).score == 1.0
    check = judge("logic.sudoku_4x4", wrap(GRID_A), ref)
    assert check.score == 0.0 and "given" in (check.reason or "")


def test_sudoku_6x6_uses_2x3_boxes() -> None:
    rows = [[(r * 3 + r // 2 + c) % 6 + 1 for c in range(6)] for r in range(6)]
    ref = {"size": 6, "givens": [[0] * 6 for _ in range(6)]}
    grid = "\n".join(" ".join(map(str, row)) for row in rows)
    assert judge("logic.sudoku_9x9", wrap(grid), ref).score == 1.0


def test_sudoku_reference_is_validated() -> None:
    with pytest.raises(ValidationError):
        judge("logic.sudoku_4x4", wrap(GRID_A), {"size": 4, "givens": [[0, 0]]})


# --- n-queens -----------------------------------------------------------------------------

Q4 = {"n": 4, "given_queens": []}


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("_ Q _ _\n_ _ _ Q\nQ _ _ _\n_ _ Q _", 1.0),
        ("_ _ Q _\nQ _ _ _\n_ _ _ Q\n_ Q _ _", 1.0),  # the other solution
        (".Q..\n...Q\nQ...\n..Q.", 1.0),
        ("0 1 0 0\n0 0 0 1\n1 0 0 0\n0 0 1 0", 1.0),
        ('[["_","Q","_","_"],["_","_","_","Q"],["Q","_","_","_"],["_","_","Q","_"]]', 1.0),
        ("_ Q _ _\n_ _ _ Q\nQ _ _ _\n_ _ _ _", 0.0),  # missing queen
        ("Q _ _ _\n_ _ _ Q\nQ _ _ _\n_ _ Q _", 0.0),  # shared column
        ("Q _ _ _\n_ Q _ _\n_ _ _ Q\n_ _ Q _", 0.0),  # diagonal
        ("_ Q _ _\n_ _ _ Q\nQ _ _ _", 0.0),
        ("_ Q _ _\n_ _ _ Q\nQ _ _ _\n_ _ Q X", 0.0),
        ("[1, 3, 0, 2]", 0.0),  # not a board
    ],
)
def test_n_queens(answer: str, score: float) -> None:
    assert judge("logic.n_queens", wrap(answer), Q4).score == score


def test_n_queens_keeps_given_queens() -> None:
    ref = {"n": 4, "given_queens": [[0, 2]]}
    assert judge("logic.n_queens", wrap("_ _ Q _\nQ _ _ _\n_ _ _ Q\n_ Q _ _"), ref).score == 1.0
    assert judge("logic.n_queens", wrap("_ Q _ _\n_ _ _ Q\nQ _ _ _\n_ _ Q _"), ref).score == 0.0


# --- knights and knaves -------------------------------------------------------------------

# A says "B is a knight", B says "A is a knight": both knights or both knaves are consistent.
KK_TWO = {"names": ["Ann", "Bo"], "statements": [["is", 1, True], ["is", 0, True]], "solution": [True, True]}


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("Ann is a knight, Bo is a knight", 1.0),
        ("Ann is a knave, Bo is a knave", 1.0),  # the other consistent assignment
        ("bo is a KNAVE and ann is a knave.", 1.0),
        ("Ann: knave\nBo: knave", 1.0),
        ('{"Ann": "knave", "Bo": "knave"}', 1.0),
        ("Ann is a knight, Bo is a knave", 0.0),
        ("Ann is a knight", 0.0),
        ("Ann is a knight, Bo is a knight, Ann is a knight", 0.0),  # duplicated
        ("Ann is a knight, Bo is a knight or a knave", 0.0),  # hedged
        ("Ann is a knight, Bo is a knight, Cy is a knave", 0.0),  # extra person
        ("Ann is probably a knight, Bo is a knight", 0.0),
        ('{"Ann": "knight", "Bo": 7}', 0.0),
    ],
)
def test_knights_knaves(answer: str, score: float) -> None:
    assert judge("logic.knights_knaves", wrap(answer), KK_TWO).score == score


def test_knights_knaves_statement_kinds() -> None:
    # count, diff, imp, and, or all evaluated: this puzzle has the unique solution [F, T, F].
    ref = {
        "names": ["Cleo", "Ada", "Esme"],
        "statements": [["count", 0], ["is", 1, True], ["and", 2, 0]],
    }
    assert (
        judge("logic.knights_knaves", wrap("Cleo is a knave, Ada is a knight, Esme is a knave"), ref).score
        == 1
    )
    assert (
        judge("logic.knights_knaves", wrap("Cleo is a knave, Ada is a knave, Esme is a knave"), ref).score
        == 0
    )
    ref2 = {"names": ["P", "Q"], "statements": [["diff", 0, 1], ["imp", 0, 1]]}
    # P: "we differ" (false when both knaves), Q: "if P is a knight then Q is a knave".
    assert judge("logic.knights_knaves", wrap("P is a knave, Q is a knave"), ref2).score == 0.0
    assert judge("logic.knights_knaves", wrap("P is a knight, Q is a knave"), ref2).score == 0.0
    ref3 = {"names": ["P", "Q"], "statements": [["or", 0, 1], ["is", 0, False]]}
    assert judge("logic.knights_knaves", wrap("P is a knight, Q is a knave"), ref3).score == 1.0


def test_knights_knaves_unknown_statement_kind_falls_back_to_solution() -> None:
    ref = {"names": ["Ann", "Bo"], "statements": [["riddle", 1], ["is", 0, True]], "solution": [True, True]}
    assert judge("logic.knights_knaves", wrap("Ann is a knight, Bo is a knight"), ref).score == 1.0
    assert judge("logic.knights_knaves", wrap("Ann is a knave, Bo is a knave"), ref).score == 0.0
    with pytest.raises(VerifierError):
        judge("logic.knights_knaves", wrap("Ann is a knave, Bo is a knave"), {**ref, "solution": None})


# --- countdown and game24 ---------------------------------------------------------------

CD = {"numbers": [7, 25, 9, 10, 2, 2], "target": 198}
G24 = {"numbers": [3, 3, 8, 8], "target": 24}


@pytest.mark.parametrize(
    ("name", "ref", "answer", "score"),
    [
        ("logic.countdown", CD, "((2 * 2) + (25 * 7)) + (9 + 10)", 1.0),
        ("logic.countdown", CD, "9 * (2 + (2 * 10))", 1.0),  # a subset is fine
        ("logic.countdown", CD, "9 * (2 + (2 * 10)) + 7 - 7", 0.0),  # 7 twice
        ("logic.countdown", CD, "198", 0.0),
        ("logic.countdown", CD, "9 * (2 + 2 * 10) = 198", 0.0),
        ("logic.game24", G24, "8/(3-8/3)", 1.0),
        ("logic.game24", G24, "8 ÷ (3 − 8 ÷ 3)", 1.0),
        ("logic.game24", G24, "8 * 3", 0.0),  # must use every number
        ("logic.game24", G24, "8 * 3 * (8 / 8)", 0.0),  # 8 three times
        ("logic.game24", {"numbers": [1, 2, 3, 4], "target": 24}, "1 * 2 * 3 * 4", 1.0),
        ("logic.game24", {"numbers": [1, 2, 3, 4], "target": 24}, "(1 + 2 + 3) * 4", 1.0),
        ("logic.game24", {"numbers": [1, 2, 3, 4], "target": 24}, "4 * 3 * 2 - 1 + 1", 0.0),
    ],
)
def test_arithmetic_puzzles(name: str, ref: dict[str, Any], answer: str, score: float) -> None:
    assert judge(name, wrap(answer), ref).score == score


def test_rule_in_reference_wins() -> None:
    ref = {**G24, "rule": "at_most_once"}
    assert judge("logic.game24", wrap("8 * 3"), ref).score == 1.0


# --- SAT ------------------------------------------------------------------------------------

SAT = {"num_vars": 3, "clauses": [[1, 2], [-1, -3], [2, 3]], "satisfiable": True}
UNSAT = {"num_vars": 1, "clauses": [[1], [-1]], "satisfiable": False}


@pytest.mark.parametrize(
    ("ref", "answer", "score"),
    [
        (SAT, "x1=0, x2=1, x3=0", 1.0),
        (SAT, "x1=1, x2=1, x3=0", 1.0),  # another model
        (SAT, "x1 = true; x2 = true; x3 = false", 1.0),
        (SAT, "-1 2 -3", 1.0),
        (SAT, '{"x1": 0, "x2": 1, "x3": 1}', 1.0),
        (SAT, "x1=1, x2=0, x3=1", 0.0),  # clause -1 -3 violated
        (SAT, "x1=0, x2=1", 0.0),
        (SAT, "x1=0, x2=1, x3=0, x4=1", 0.0),
        (SAT, "x1=0, x2=1, x3=0, x3=1", 0.0),
        (SAT, "x1=0, x2=1, x3=0 (or x1=1)", 0.0),
        (SAT, "UNSAT", 0.0),
        (UNSAT, "UNSAT", 1.0),
        (UNSAT, "unsatisfiable.", 1.0),
        (UNSAT, "x1=1", 0.0),
        (SAT, '{"x1": 0.0, "x2": 1, "x3": 0}', 0.0),
    ],
)
def test_sat(ref: dict[str, Any], answer: str, score: float) -> None:
    assert judge("logic.sat_cnf", wrap(answer), ref).score == score


# --- graph colouring ------------------------------------------------------------------------

GC = {"vertices": [0, 1, 2, 3], "edges": [[0, 1], [1, 2], [0, 2], [2, 3]], "k": 3}


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ('{"0": 1, "1": 2, "2": 3, "3": 1}', 1.0),
        ('{"0": 3, "1": 1, "2": 2, "3": 3}', 1.0),  # permuted colours
        ("0: 1, 1: 2, 2: 3, 3: 2", 1.0),
        ("vertex 0 = color 1\nvertex 1 = color 2\nvertex 2 = color 3\nvertex 3 = color 1", 1.0),
        ('{"0": 1, "1": 1, "2": 3, "3": 1}', 0.0),  # edge 0-1 clash
        ('{"0": 1, "1": 2, "2": 4, "3": 1}', 0.0),  # colour out of range
        ('{"0": 0, "1": 2, "2": 3, "3": 1}', 0.0),
        ('{"0": 1, "1": 2, "2": 3}', 0.0),
        ('{"0": 1, "1": 2, "2": 3, "3": 1, "0": 1}', 0.0),  # duplicate key
        ('{"0": 1, "1": 2, "2": 3, "3": 1, "4": 2}', 0.0),
        ('{"0": true, "1": 2, "2": 3, "3": 1}', 0.0),
        ("0: 1, 1: 2, 2: 3, 3: 1 or 2", 0.0),
    ],
)
def test_graph_coloring(answer: str, score: float) -> None:
    assert judge("logic.graph_coloring", wrap(answer), GC).score == score


# --- zebra ------------------------------------------------------------------------------------

ZEBRA = {
    "houses": 3,
    "attributes": {
        "name": ["alice", "bruno", "chidi"],
        "color": ["red", "green", "blue"],
        "pet": ["cat", "dog", "parrot"],
    },
    "clues": [["left", "alice", "blue"], ["next", "blue", "bruno"], ["same", "cat", "chidi"],
              ["same", "bruno", "green"], ["left", "dog", "blue"]],
}  # fmt: skip
ZEBRA_OK = "House 1: Alice, red, dog\nHouse 2: Chidi, blue, cat\nHouse 3: Bruno, green, parrot"


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        (ZEBRA_OK, 1.0),
        ("House 3: parrot, Bruno, green\nHouse 1: dog, alice, RED\nHouse 2: cat, Chidi, blue", 1.0),
        ("| House | Name | Color | Pet |\n|---|---|---|---|\n| 1 | Alice | red | dog |\n"
         "| 2 | Chidi | blue | cat |\n| 3 | Bruno | green | parrot |", 1.0),
        ('{"1": {"name": "alice", "color": "red", "pet": "dog"}, "2": {"name": "chidi", "color": "blue", '
         '"pet": "cat"}, "3": {"name": "bruno", "color": "green", "pet": "parrot"}}', 1.0),
        ("House 1: name=Alice, color=red, pet=dog\nHouse 2: name=Chidi, color=blue, pet=cat\n"
         "House 3: name=Bruno, color=green, pet=parrot", 1.0),
        ("House 1: Alice, red, cat\nHouse 2: Chidi, blue, dog\nHouse 3: Bruno, green, parrot", 0.0),
        ("House 1: Alice, red, dog\nHouse 2: Chidi, blue, cat", 0.0),
        (ZEBRA_OK + "\nHouse 3: Bruno, green, parrot", 0.0),
        ("House 1: Alice, red, dog, cat\nHouse 2: Chidi, blue\nHouse 3: Bruno, green, parrot", 0.0),
        ("House 1: Alice, red, dog (or cat)\nHouse 2: Chidi, blue, cat\nHouse 3: Bruno, green, parrot", 0.0),
        ("The table:\n" + ZEBRA_OK, 0.0),
    ],
)  # fmt: skip
def test_zebra(answer: str, score: float) -> None:
    assert judge("logic.zebra", wrap(answer), ZEBRA).score == score


def test_zebra_accepts_any_assignment_satisfying_the_clues() -> None:
    # Only "alice next to bruno": many tables satisfy it, all score 1.
    ref = {"houses": 2, "attributes": {"name": ["alice", "bruno"], "pet": ["cat", "dog"]},
           "clues": [["next", "alice", "bruno"]]}  # fmt: skip
    assert judge("logic.zebra", wrap("House 1: bruno, cat\nHouse 2: alice, dog"), ref).score == 1.0
    assert judge("logic.zebra", wrap("House 1: alice, cat\nHouse 2: bruno, dog"), ref).score == 1.0
    at = {**ref, "clues": [["at", "alice", 2], ["right", "dog", "cat"]]}
    assert judge("logic.zebra", wrap("House 1: bruno, cat\nHouse 2: alice, dog"), at).score == 1.0
    assert judge("logic.zebra", wrap("House 1: bruno, dog\nHouse 2: alice, cat"), at).score == 0.0


# --- number sorting -------------------------------------------------------------------------

NS = {"numbers": ["43", "-75", "94.87", "-61.08", "24", "24"], "direction": "ascending"}


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("['-75', '-61.08', '24', '24', '43', '94.87']", 1.0),
        ("[-75, -61.08, 24, 24, 43, 94.87]", 1.0),
        ("-75, -61.08, 24, 24.0, 43, 94.870", 1.0),  # equal values, other spelling
        ("-75 −61.08 24 24 43 94.87", 1.0),
        ("[-75, -61.08, 24, 43, 94.87]", 0.0),  # a duplicate dropped
        ("[-75, -61.08, 24, 24, 43, 94.87, 100]", 0.0),
        ("[-75, -61.08, 24, 24, 43.3, 94.87]", 0.0),  # no tolerance
        ("[-75, -61.08, 24, 24, 43, 94.87] or [94.87, 43, 24, 24, -61.08, -75]", 0.0),
        ("[94.87, 43, 24, 24, -61.08, -75]", 0.0),
        ("[-75, -61.08, 24, 24, 43, 9.487e1]", 0.0),
    ],
)
def test_number_sorting(answer: str, score: float) -> None:
    assert judge("logic.number_sorting", wrap(answer), NS).score == score


def test_number_sorting_descending() -> None:
    ref = {**NS, "direction": "descending"}
    assert judge("logic.number_sorting", wrap("94.87, 43, 24, 24, -61.08, -75"), ref).score == 1.0


# --- toposort -------------------------------------------------------------------------------

TS = {"nodes": ["A", "B", "C", "D"], "edges": [["A", "B"], ["A", "C"], ["C", "D"]]}


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("A, B, C, D", 1.0),
        ("A, C, D, B", 1.0),
        ("a -> c -> b -> d", 1.0),
        ('["A", "C", "B", "D"]', 1.0),
        ("A B C D", 1.0),
        ("B, A, C, D", 0.0),
        ("A, B, C", 0.0),
        ("A, B, C, D, D", 0.0),
        ("A, B, C, D, E", 0.0),
        ("A, B, C, D (or A, C, B, D)", 0.0),
        ("ACBD", 1.0),  # single-letter nodes without separators
        ("ABCDD", 0.0),
        ("ABXD", 0.0),
    ],
)
def test_toposort(answer: str, score: float) -> None:
    assert judge("logic.toposort", wrap(answer), TS).score == score


# --- tower of Hanoi -------------------------------------------------------------------------

H3 = {"disks": 2, "pegs": 3, "start_peg": 1, "target_peg": 3}
HANOI_OK = "Move disk 1 from Peg 1 to Peg 2\nMove disk 2 from Peg 1 to Peg 3\nMove disk 1 from Peg 2 to Peg 3"


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        (HANOI_OK, 1.0),
        ("1. Move disk 1 from Peg 1 to Peg 2\n2. Move disk 2 from Peg 1 to Peg 3\n"
         "3. move disk 1 from peg 2 to peg 3", 1.0),
        ("Move disk 1 from Peg 1 to Peg 2; Move disk 2 from Peg 1 to Peg 3; "
         "Move disk 1 from Peg 2 to Peg 3", 1.0),
        # legal but longer: 5 moves instead of 3
        ("Move disk 1 from Peg 1 to Peg 3\nMove disk 1 from Peg 3 to Peg 2\n"
         "Move disk 2 from Peg 1 to Peg 3\nMove disk 1 from Peg 2 to Peg 1\n"
         "Move disk 1 from Peg 1 to Peg 3", 0.0),
        ("Move disk 2 from Peg 1 to Peg 3\nMove disk 1 from Peg 1 to Peg 3", 0.0),  # disk 2 not on top
        ("Move disk 1 from Peg 1 to Peg 3\nMove disk 2 from Peg 1 to Peg 3", 0.0),  # larger on smaller
        ("Move disk 1 from Peg 1 to Peg 2\nMove disk 2 from Peg 1 to Peg 3", 0.0),  # unfinished
        (HANOI_OK + "\nMove disk 1 from Peg 3 to Peg 4", 0.0),
        (HANOI_OK + "\nDone, I think", 0.0),
    ],
)  # fmt: skip
def test_hanoi(answer: str, score: float) -> None:
    assert judge("logic.tower_of_hanoi", wrap(answer), H3).score == score


def test_hanoi_four_pegs_uses_frame_stewart() -> None:
    ref = {"disks": 3, "pegs": 4, "start_peg": 1, "target_peg": 4}
    five = "\n".join(
        f"Move disk {d} from Peg {a} to Peg {b}"
        for d, a, b in [(1, 1, 2), (2, 1, 3), (3, 1, 4), (2, 3, 4), (1, 2, 4)]
    )
    assert judge("logic.tower_of_hanoi", wrap(five), ref).score == 1.0


# --- maze -----------------------------------------------------------------------------------

MAZE = {"grid": [["*", "X", "O"], ["O", "X", "O"], ["O", "O", "#"]]}
WALLED = {"grid": [["*", "X", "O"], ["O", "X", "O"], ["O", "X", "#"]]}


@pytest.mark.parametrize(
    ("ref", "answer", "score"),
    [
        (MAZE, "down down right right", 1.0),
        (MAZE, "D D R R", 1.0),
        (MAZE, "DDRR", 1.0),
        (MAZE, "down, down, right, right", 1.0),
        (MAZE, "south south east east", 1.0),
        (MAZE, "right down", 0.0),  # into the wall
        (MAZE, "down down right", 0.0),  # stops short
        (MAZE, "down up down down right right", 0.0),  # legal but longer
        (MAZE, "down down down", 0.0),  # leaves the grid
        (MAZE, "infeasible", 0.0),
        (WALLED, "infeasible", 1.0),
        (WALLED, "No path exists.", 1.0),
        (WALLED, "down down", 0.0),
        (MAZE, "down down right right or right right down down", 0.0),
    ],
)
def test_maze(ref: dict[str, Any], answer: str, score: float) -> None:
    assert judge("logic.maze_path", wrap(answer), ref).score == score


def test_maze_shortest_length_is_recomputed_not_trusted() -> None:
    ref = {**MAZE, "shortest_length": 6}
    assert judge("logic.maze_path", wrap("down down right right"), ref).score == 1.0
