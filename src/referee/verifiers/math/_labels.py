"""Names on the left of `=` (policy rule 14): `AB`, `f(x)`, `|AB|`, `a_n`, `\\angle ABC`, and
ratios of names `\\frac{NO}{BO}`. `label = value` states the value; an equation whose sides
both involve the unknowns is not a label (`_values`)."""

from __future__ import annotations

from referee.verifiers.math._tree import Node, free_symbols


def is_label(node: Node) -> bool:
    """A name on the left of `=` rather than an expression: `AB`, `f(x)`, `|AB|`, `a_n`, `ABC`
    (of `\\angle ABC`): symbols side by side, possibly in absolute value bars."""
    if node[0] == "s":
        return True
    if node[0] == "f" and node[1] == "abs":
        return is_label(node[2])
    return node[0] == "*" and len(node) <= 9 and all(child[0] == "s" for child in node[1:])


def is_ratio_label(node: Node) -> bool:
    """`\\frac{NO}{BO}`, `\\frac{a}{b}`: a ratio of two names. Only on the left of `=` with a
    constant right side: `\\frac{NO}{BO} = \\frac{1}{\\sqrt6}` states 1/sqrt(6)."""
    return node[0] == "/" and is_label(node[1]) and is_label(node[2])


def label_name(node: Node) -> str:
    if node[0] == "s":
        return str(node[1])
    if node[0] == "f":
        return f"|{label_name(node[2])}|"
    if node[0] == "/":
        return f"{label_name(node[1])}/{label_name(node[2])}"
    return "".join(label_name(child) for child in node[1:])


def is_function_head(lhs: Node, rhs: Node) -> bool:
    """`f(x)` on the left of `=`: a symbol applied to a symbol that the right side uses."""
    return (
        lhs[0] == "*"
        and len(lhs) == 3
        and lhs[1][0] == "s"
        and lhs[2][0] == "s"
        and lhs[2][1] in free_symbols(rhs)
        and lhs[1][1] not in free_symbols(rhs)
    )
