"""Seeded puzzles: deterministic, accepted by their checker, and solvable (each is solved here by
brute force and the solution is checked by the real checker, so "solvable by construction" is
tested, not assumed)."""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import pytest

from referee.environments import GENERATORS, generate
from referee.verifiers import builtin_index

SEEDS = range(6)


def check(verifier: str, puzzle: dict[str, Any], answer: str) -> float:
    checker = builtin_index().get(verifier)
    reference = checker.validate_reference(puzzle)
    options = checker.validate_options({})
    return checker.check(f"<answer>{answer}</answer>", checker.prepare(reference, options), options).score


def test_every_logic_checker_but_zebra_has_a_generator() -> None:
    logic = {n for n in builtin_index().names() if n.startswith("logic.")}
    assert set(GENERATORS) == logic - {"logic.zebra"}
    assert generate("logic.zebra", 1) is None


@pytest.mark.parametrize("verifier", sorted(GENERATORS))
def test_same_seed_same_puzzle_other_seeds_vary(verifier: str) -> None:
    assert generate(verifier, 42) == generate(verifier, 42)
    puzzles = [generate(verifier, s) for s in range(8)]
    assert len({repr(p) for p in puzzles}) > 1
    checker = builtin_index().get(verifier)
    for puzzle in puzzles:
        checker.validate_reference(puzzle)


def _sudoku(givens: list[list[int]]) -> list[list[int]]:
    n = len(givens)
    grid = [row[:] for row in givens]
    box = int(n**0.5)

    def ok(r: int, c: int, d: int) -> bool:
        if d in grid[r] or any(grid[i][c] == d for i in range(n)):
            return False
        br, bc = r - r % box, c - c % box
        return all(grid[i][j] != d for i in range(br, br + box) for j in range(bc, bc + box))

    def solve() -> bool:
        for r, c in itertools.product(range(n), range(n)):
            if grid[r][c] == 0:
                for d in range(1, n + 1):
                    if ok(r, c, d):
                        grid[r][c] = d
                        if solve():
                            return True
                        grid[r][c] = 0
                return False
        return True

    assert solve()
    return grid


@pytest.mark.parametrize("seed", SEEDS)
def test_sudoku_4x4_puzzles_are_solvable(seed: int) -> None:
    puzzle = generate("logic.sudoku_4x4", seed)
    assert puzzle is not None
    grid = _sudoku(puzzle["givens"])
    assert check("logic.sudoku_4x4", puzzle, "\n".join(" ".join(map(str, row)) for row in grid)) == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_sat_puzzles_are_satisfiable(seed: int) -> None:
    puzzle = generate("logic.sat_cnf", seed)
    assert puzzle is not None
    n = puzzle["num_vars"]
    for values in itertools.product([False, True], repeat=n):
        if all(any(values[abs(lit) - 1] == (lit > 0) for lit in clause) for clause in puzzle["clauses"]):
            answer = ", ".join(f"x{i + 1}={int(v)}" for i, v in enumerate(values))
            assert check("logic.sat_cnf", puzzle, answer) == 1.0
            return
    pytest.fail("no satisfying assignment")


@pytest.mark.parametrize("seed", SEEDS)
def test_graph_coloring_puzzles_have_a_proper_colouring(seed: int) -> None:
    puzzle = generate("logic.graph_coloring", seed)
    assert puzzle is not None
    vertices, k = puzzle["vertices"], puzzle["k"]
    for colors in itertools.product(range(1, k + 1), repeat=len(vertices)):
        if all(colors[a] != colors[b] for a, b in puzzle["edges"]):
            answer = ", ".join(f"{v}: {c}" for v, c in zip(vertices, colors, strict=True))
            assert check("logic.graph_coloring", puzzle, answer) == 1.0
            return
    pytest.fail("no proper colouring")


@pytest.mark.parametrize("seed", SEEDS)
def test_knights_and_knaves_puzzles_are_consistent(seed: int) -> None:
    puzzle = generate("logic.knights_knaves", seed)
    assert puzzle is not None
    assert "solution" not in puzzle  # the game must not carry its answer
    names = puzzle["names"]
    scores = []
    for roles in itertools.product([True, False], repeat=len(names)):
        answer = ", ".join(
            f"{n} is a {'knight' if r else 'knave'}" for n, r in zip(names, roles, strict=True)
        )
        scores.append(check("logic.knights_knaves", puzzle, answer))
    assert 1.0 in scores and 0.0 in scores


@pytest.mark.parametrize("seed", SEEDS)
def test_toposort_maze_and_hanoi_puzzles_are_solvable(seed: int) -> None:
    topo = generate("logic.toposort", seed)
    assert topo is not None
    order, left = [], {n: sum(1 for _, b in topo["edges"] if b == n) for n in topo["nodes"]}
    ready = deque(n for n, d in left.items() if d == 0)
    while ready:
        node = ready.popleft()
        order.append(node)
        for a, b in topo["edges"]:
            if a == node:
                left[b] -= 1
                if left[b] == 0:
                    ready.append(b)
    assert check("logic.toposort", topo, ", ".join(order)) == 1.0

    maze = generate("logic.maze_path", seed)
    assert maze is not None
    grid = maze["grid"]
    size = len(grid)
    moves = {(1, 0): "down", (-1, 0): "up", (0, 1): "right", (0, -1): "left"}
    path: dict[tuple[int, int], list[str]] = {(0, 0): []}
    queue = deque([(0, 0)])
    while queue:
        r, c = queue.popleft()
        for (dr, dc), word in moves.items():
            nxt = (r + dr, c + dc)
            if 0 <= nxt[0] < size and 0 <= nxt[1] < size and nxt not in path and grid[nxt[0]][nxt[1]] != "X":
                path[nxt] = [*path[(r, c)], word]
                queue.append(nxt)
    assert check("logic.maze_path", maze, " ".join(path[(size - 1, size - 1)])) == 1.0

    hanoi = generate("logic.tower_of_hanoi", seed)
    assert hanoi is not None
    steps: list[str] = []

    def move(n: int, src: int, dst: int, via: int) -> None:
        if n:
            move(n - 1, src, via, dst)
            steps.append(f"Move disk {n} from Peg {src} to Peg {dst}")
            move(n - 1, via, dst, src)

    start, target = hanoi["start_peg"], hanoi["target_peg"]
    move(hanoi["disks"], start, target, 6 - start - target)
    assert check("logic.tower_of_hanoi", hanoi, "\n".join(steps)) == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_arithmetic_and_queens_puzzles_validate(seed: int) -> None:
    game24 = generate("logic.game24", seed)
    assert game24 is not None and game24["target"] == 24 and len(game24["numbers"]) == 4
    countdown = generate("logic.countdown", seed)
    assert countdown is not None and 10 <= countdown["target"] <= 999
    queens = generate("logic.n_queens", seed)
    assert queens is not None and len(queens["given_queens"]) == 1
    numbers = generate("logic.number_sorting", seed)
    assert numbers is not None
    ordered = sorted(numbers["numbers"], key=float, reverse=numbers["direction"] == "descending")
    assert check("logic.number_sorting", numbers, ", ".join(ordered)) == 1.0
