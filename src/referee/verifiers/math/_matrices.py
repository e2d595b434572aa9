"""Matrix arithmetic on parse trees: `A + B`, `A - B`, `2A`, `A/2`, products written side by
side or with `\\cdot` / `\\times` (`AB`), whole powers `A^3` and the transpose `A^T`.

The result is the tree of every entry (`_values` makes them scalars). Entries that are exact
rationals are folded to one number, so a product of numeric matrices stays small; symbolic
entries are built as sums of products, within a node budget. Shapes are checked: adding or
multiplying matrices whose shapes do not fit raises `ShapeMismatch`, which the caller turns into
an answer equal to nothing (never an error). Anything else we do not interpret (a matrix in a
function, a matrix inverse, a scalar plus a matrix) raises `MatrixError`.
"""

from __future__ import annotations

from fractions import Fraction

from referee.verifiers.math._exact import exact_value
from referee.verifiers.math._tree import STRUCT_TAGS, Node, contains_tag

Rows = tuple[tuple[Node, ...], ...]

MAX_ENTRY_NODES = 20_000  # symbolic entries of one answer together
MAX_WORK = 20_000  # entry operations of one answer (m*n*p per product, m*n per sum or scaling)
MAX_POWER = 16
_MATRIX_TAG = frozenset({"matrix"})
_ONE: Node = ("n", Fraction(1), None)


class MatrixError(ValueError):
    """Matrix arithmetic we do not interpret."""


class ShapeMismatch(MatrixError):
    """Matrices whose shapes do not fit the operation: the expression has no value."""


def is_matrix_expression(node: Node) -> bool:
    return contains_tag(node, _MATRIX_TAG)


class _Budget:
    """What one answer may spend: a 25x25 matrix to the 16th power is refused, not computed."""

    def __init__(self) -> None:
        self.nodes = MAX_ENTRY_NODES
        self.work = MAX_WORK

    def spend(self, work: int) -> None:
        self.work -= work
        if self.work < 0:
            raise MatrixError("matrix arithmetic too large")


def matrix_entries(node: Node) -> Rows:
    """The entries of the matrix a tree of matrix arithmetic denotes."""
    return _evaluate(node, _Budget())


def _shape(rows: Rows) -> tuple[int, int]:
    return len(rows), len(rows[0])


def _entry(node: Node, budget: _Budget) -> Node:
    """One entry, folded to a number when it is an exact rational."""
    value = exact_value(node)
    if value is not None:
        return ("n", value, None)
    size, stack = 0, [node]
    while stack:
        item = stack.pop()
        size += 1
        stack.extend(child for child in item[1:] if isinstance(child, tuple) and child)
    budget.nodes -= size
    if budget.nodes < 0:
        raise MatrixError("matrix entries too large")
    return node


def _scalar_factor(node: Node) -> Node:
    if contains_tag(node, STRUCT_TAGS):
        raise MatrixError("structure inside matrix arithmetic")
    return node


def _evaluate(node: Node, budget: _Budget) -> Rows:
    tag = node[0]
    if tag == "matrix":
        rows: Rows = node[1]
        if any(contains_tag(cell, STRUCT_TAGS) for row in rows for cell in row):
            raise MatrixError("structure inside a matrix entry")
        return rows
    if tag == "neg":
        return _scale(_evaluate(node[1], budget), ("n", Fraction(-1), None), budget)
    if tag == "+":
        return _add([_matrix_term(term, budget) for term in node[1:]], budget)
    if tag == "*":
        return _product(node[1:], budget)
    if tag == "/":
        if is_matrix_expression(node[2]):
            raise MatrixError("division by a matrix")
        return _scale(_evaluate(node[1], budget), ("/", _ONE, _scalar_factor(node[2])), budget)
    if tag == "^":
        return _power(_evaluate(node[1], budget), node[2], budget)
    raise MatrixError(f"{tag} of a matrix")


def _matrix_term(term: Node, budget: _Budget) -> Rows:
    if not is_matrix_expression(term):
        raise ShapeMismatch("a number added to a matrix")
    return _evaluate(term, budget)


def _add(terms: list[Rows], budget: _Budget) -> Rows:
    shape = _shape(terms[0])
    if any(_shape(t) != shape for t in terms[1:]):
        raise ShapeMismatch("adding matrices of different shapes")
    m, n = shape
    budget.spend(m * n * len(terms))
    return tuple(tuple(_entry(("+", *(t[i][j] for t in terms)), budget) for j in range(n)) for i in range(m))


def _scale(rows: Rows, factor: Node, budget: _Budget) -> Rows:
    budget.spend(len(rows) * len(rows[0]))
    return tuple(tuple(_entry(("*", factor, cell), budget) for cell in row) for row in rows)


def _product(factors: tuple[Node, ...], budget: _Budget) -> Rows:
    """Scalars commute with everything; the matrices multiply in the order written."""
    scalars = [_scalar_factor(f) for f in factors if not is_matrix_expression(f)]
    result: Rows | None = None
    for factor in factors:
        if is_matrix_expression(factor):
            rows = _evaluate(factor, budget)
            result = rows if result is None else _matmul(result, rows, budget)
    if result is None:  # unreachable: the caller saw a matrix in the product
        raise MatrixError("no matrix in the product")
    if not scalars:
        return result
    return _scale(result, scalars[0] if len(scalars) == 1 else ("*", *scalars), budget)


def _matmul(a: Rows, b: Rows, budget: _Budget) -> Rows:
    (m, n), (n2, p) = _shape(a), _shape(b)
    if n != n2:
        raise ShapeMismatch(f"multiplying a {m}x{n} matrix by a {n2}x{p} matrix")
    budget.spend(m * n * p)
    return tuple(
        tuple(_entry(("+", *(("*", a[i][k], b[k][j]) for k in range(n))), budget) for j in range(p))
        for i in range(m)
    )


def _power(rows: Rows, exponent: Node, budget: _Budget) -> Rows:
    if exponent == ("s", "T"):  # the transpose
        return tuple(zip(*rows, strict=True))
    k = exact_value(exponent)
    if k is None or k.denominator != 1 or not 1 <= k <= MAX_POWER:
        raise MatrixError("only whole powers 1..16 and the transpose of a matrix")
    m, n = _shape(rows)
    if m != n:
        raise ShapeMismatch("a power of a matrix that is not square")
    result = rows
    for _ in range(int(k) - 1):
        result = _matmul(result, rows, budget)
    return result
