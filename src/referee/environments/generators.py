"""Puzzles made from a seed: the same seed, the same puzzle, on any replica (a `random.Random`
seeded with the game's name and the seed; Python keeps its sequences stable across releases).

Every puzzle made here has a solution by construction (a planted assignment, a permuted valid
grid, an expression that reaches the target), so an episode started from a seed is always
winnable; the checkers accept any valid solution, so uniqueness is not needed. Zebra puzzles
have no generator (a fair one needs a solver to pick clues): their episodes need a task.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction
from itertools import permutations
from typing import Any

Generator = Callable[[random.Random], dict[str, Any]]


def sudoku(size: int, blanks: int) -> Generator:
    def make(rng: random.Random) -> dict[str, Any]:
        box = {4: 2, 9: 3}[size]
        # The pattern grid (a valid sudoku), then symmetries that keep it valid: digits
        # relabelled, rows moved within their band, bands moved, the same for columns.
        base = [[(box * (r % box) + r // box + c) % size + 1 for c in range(size)] for r in range(size)]
        digits = list(range(1, size + 1))
        rng.shuffle(digits)

        def order() -> list[int]:
            bands = list(range(box))
            rng.shuffle(bands)
            out = []
            for band in bands:
                inner = list(range(box))
                rng.shuffle(inner)
                out += [band * box + i for i in inner]
            return out

        rows, cols = order(), order()
        grid = [[digits[base[r][c] - 1] for c in cols] for r in rows]
        cells = [(r, c) for r in range(size) for c in range(size)]
        for r, c in rng.sample(cells, blanks):
            grid[r][c] = 0
        return {"size": size, "givens": grid}

    return make


def n_queens(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(5, 8)
    columns: list[int] = []

    def place(row: int) -> bool:
        if row == n:
            return True
        options = list(range(n))
        rng.shuffle(options)
        for c in options:
            if all(c != pc and abs(c - pc) != row - pr for pr, pc in enumerate(columns)):
                columns.append(c)
                if place(row + 1):
                    return True
                columns.pop()
        return False

    place(0)
    row = rng.randrange(n)
    return {"n": n, "given_queens": [[row, columns[row]]]}


_OPS: dict[str, Callable[[Fraction, Fraction], Fraction | None]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if b else None,
}


def countdown(rng: random.Random) -> dict[str, Any]:
    pool = [*range(1, 11), *range(1, 11), 25, 50, 75, 100]
    while True:
        numbers = rng.sample(pool, 6)
        used = rng.sample(numbers, rng.randint(3, 4))
        value = Fraction(used[0])
        for n in used[1:]:
            result = _OPS[rng.choice("+-*/")](value, Fraction(n))
            if result is None:
                break
            value = result
        else:
            if value.denominator == 1 and 10 <= value <= 999:
                return {"numbers": sorted(numbers), "target": int(value), "rule": "at_most_once"}


def _reaches(values: list[Fraction], target: Fraction) -> bool:
    """Some expression over all of `values` (each once) equals `target`."""
    if len(values) == 1:
        return values[0] == target
    for i, j in permutations(range(len(values)), 2):
        rest = [v for k, v in enumerate(values) if k not in (i, j)]
        for op in _OPS.values():
            result = op(values[i], values[j])
            if result is not None and _reaches([*rest, result], target):
                return True
    return False


def game24(rng: random.Random) -> dict[str, Any]:
    while True:
        numbers = sorted(rng.randint(1, 13) for _ in range(4))
        if _reaches([Fraction(n) for n in numbers], Fraction(24)):
            return {"numbers": numbers, "target": 24}


def number_sorting(rng: random.Random) -> dict[str, Any]:
    numbers = []
    for _ in range(rng.randint(5, 8)):
        whole = rng.random() < 0.5
        numbers.append(str(rng.randint(-99, 99)) if whole else f"{rng.randint(-9999, 9999) / 100:.2f}")
    return {"numbers": numbers, "direction": rng.choice(["ascending", "descending"])}


def sat_cnf(rng: random.Random) -> dict[str, Any]:
    num_vars = rng.randint(5, 8)
    planted = {v: rng.random() < 0.5 for v in range(1, num_vars + 1)}
    clauses: list[list[int]] = []
    while len(clauses) < 4 * num_vars:
        chosen = rng.sample(range(1, num_vars + 1), 3)
        clause = [v if rng.random() < 0.5 else -v for v in chosen]
        if any(planted[abs(lit)] == (lit > 0) for lit in clause):
            clauses.append(clause)
    return {"num_vars": num_vars, "clauses": clauses, "satisfiable": True}


def graph_coloring(rng: random.Random) -> dict[str, Any]:
    n, k = rng.randint(6, 9), 3
    colors = [rng.randint(1, k) for _ in range(n)]
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if colors[a] != colors[b]]
    edges = sorted(rng.sample(pairs, min(len(pairs), int(n * 1.6))))
    return {"vertices": list(range(n)), "edges": [list(e) for e in edges], "k": k}


_NAMES = ["Ada", "Finn", "Ivo", "Mira", "Oskar", "Rhea", "Tomas", "Uma"]


def knights_knaves(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(3, 4)
    names = rng.sample(_NAMES, n)
    knights = [rng.random() < 0.5 for _ in range(n)]
    truth = {
        "is": lambda a, b: knights[a] == b,
        "and": lambda a, b: knights[a] and knights[b],
        "or": lambda a, b: knights[a] or knights[b],
        "imp": lambda a, b: (not knights[a]) or (not knights[b]),
        "diff": lambda a, b: knights[a] != knights[b],
    }
    statements: list[list[Any]] = []
    for speaker in range(n):
        while True:  # a knight says something true, a knave something false
            kind = rng.choice(["is", "and", "or", "imp", "diff", "count"])
            if kind == "count":
                statement: list[Any] = ["count", rng.randint(0, n)]
                holds = sum(knights) == statement[1]
            else:
                a, b = rng.sample([p for p in range(n) if p != speaker] or [speaker], 1)[0], rng.randrange(n)
                second: Any = rng.random() < 0.5 if kind == "is" else b
                statement = [kind, a, second]
                holds = bool(truth[kind](a, second))
            if holds == knights[speaker]:
                statements.append(statement)
                break
    return {"names": names, "statements": statements}


def toposort(rng: random.Random) -> dict[str, Any]:
    nodes = list("ABCDEFGH"[: rng.randint(5, 8)])
    order = nodes[:]
    rng.shuffle(order)
    pairs = [(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))]
    edges = rng.sample(pairs, len(nodes))
    return {"nodes": nodes, "edges": [list(e) for e in edges]}


def tower_of_hanoi(rng: random.Random) -> dict[str, Any]:
    start, target = rng.sample([1, 2, 3], 2)
    return {"disks": rng.randint(2, 4), "pegs": 3, "start_peg": start, "target_peg": target}


def maze_path(rng: random.Random) -> dict[str, Any]:
    size = rng.randint(4, 6)
    grid = [["X" if rng.random() < 0.25 else "O" for _ in range(size)] for _ in range(size)]
    # A carved staircase keeps the goal reachable; the walls elsewhere make it a search.
    r = c = 0
    while (r, c) != (size - 1, size - 1):
        grid[r][c] = "O"
        if c == size - 1 or (r < size - 1 and rng.random() < 0.5):
            r += 1
        else:
            c += 1
    grid[0][0], grid[size - 1][size - 1] = "*", "#"
    return {"grid": grid}


GENERATORS: dict[str, Generator] = {
    "logic.sudoku_4x4": sudoku(4, 8),
    "logic.sudoku_9x9": sudoku(9, 40),
    "logic.n_queens": n_queens,
    "logic.countdown": countdown,
    "logic.game24": game24,
    "logic.number_sorting": number_sorting,
    "logic.sat_cnf": sat_cnf,
    "logic.graph_coloring": graph_coloring,
    "logic.knights_knaves": knights_knaves,
    "logic.toposort": toposort,
    "logic.tower_of_hanoi": tower_of_hanoi,
    "logic.maze_path": maze_path,
}


def generate(verifier: str, seed: int) -> dict[str, Any] | None:
    """The puzzle of `seed` for `verifier`'s game, or None when it has no generator."""
    make = GENERATORS.get(verifier)
    return None if make is None else make(random.Random(f"{verifier}:{seed}"))
