"""Which `|` opens an absolute value and which closes one (policy rule 37).

A bar is written the same at both ends, so `|x||y|`, `||x||y||` and `||a|-|b||` cannot be read
left to right by looking at one token: the bar after `|x|` may close an outer bar or open a new
factor. This pass gives every `|` a role before parsing, `lbar` or `rbar`: a bar closes only
after the end of an operand and the last bar opened in the same bracket (`|{|x|}|`, never
`|{|x}|`), and the bars must balance. Where both roles fit, a bar right before the start of an
operand is tried as an opening first (`||x||y||` is |(|x||y|)|), any other as a closing first
(`||a|-|b||`). The search is memoised on (bar, open bars, role of the bar before).
"""

from __future__ import annotations

from functools import cache

from referee.verifiers.math._tokens import Token

MAX_BARS = 200  # beyond this many bars an answer is refused rather than searched
# Tokens after which a `|` may close: the end of an operand.
_OPERAND_END = frozenset(
    {"num", "sym", "const", "inf", "empty", "reals", ")", "]", "}", "rset", "rfloor", "rceil", "end"}
)
_POSTFIX = frozenset({"!", "%", "deg"})
# Tokens that start an operand: a bar right before one more likely opens than closes.
_OPERAND_START = frozenset({
    "num", "sym", "const", "inf", "func", "multi", "frac", "sqrt", "binom", "overline", "bigop",
    "(", "[", "{", "lset", "lfloor", "lceil", "begin",
})  # fmt: skip
_OPENERS = frozenset({"(", "[", "{", "lset", "lfloor", "lceil", "begin"})
_CLOSERS = frozenset({")", "]", "}", "rset", "rfloor", "rceil", "end"})


class BarError(ValueError):
    """The bars of an answer pair up in no way (`a|b`, `\\{x | x > 0\\}`)."""


def _ends_operand(tok: Token) -> bool:
    return tok.kind in _OPERAND_END or (tok.kind == "op" and tok.val in _POSTFIX)


def pair_bars(tokens: list[Token]) -> list[Token]:
    """The tokens with every `|` replaced by `lbar` or `rbar`; raises BarError."""
    bars = [i for i, tok in enumerate(tokens) if tok.kind == "|"]
    if not bars:
        return tokens
    if len(bars) % 2 or len(bars) > MAX_BARS:
        raise BarError("unbalanced |")
    # Whether the token before each bar ends an operand, when that token is not itself a bar.
    after_operand = [i > 0 and _ends_operand(tokens[i - 1]) for i in bars]
    follows_bar = [i > 0 and tokens[i - 1].kind == "|" for i in bars]
    groups = _bracket_groups(tokens, bars)
    opens_first = [i + 1 < len(tokens) and tokens[i + 1].kind in _OPERAND_START for i in bars]

    @cache
    def roles_from(k: int, open_in: tuple[int, ...], previous_closed: bool) -> tuple[bool, ...] | None:
        """Roles (True = closes) of bars k.. given the groups of the open bars and the role of
        bar k-1."""
        if k == len(bars):
            return () if not open_in else None
        if len(open_in) > len(bars) - k:  # too many open bars left to close
            return None
        closes_here = previous_closed if follows_bar[k] else after_operand[k]
        roles = (False, True) if opens_first[k] else (True, False)
        for closes in roles:
            if closes and not (closes_here and open_in and open_in[-1] == groups[k]):
                continue
            rest = roles_from(k + 1, open_in[:-1] if closes else (*open_in, groups[k]), closes)
            if rest is not None:
                return (closes, *rest)
        return None

    roles = roles_from(0, (), False)
    if roles is None:
        raise BarError("the | bars do not pair up")
    out = list(tokens)
    for index, closes in zip(bars, roles, strict=True):
        out[index] = Token("rbar" if closes else "lbar")
    return out


def _bracket_groups(tokens: list[Token], bars: list[int]) -> list[int]:
    """For each bar, the position of the innermost bracket open around it (-1: none)."""
    groups: list[int] = []
    stack: list[int] = []
    next_bar = 0
    for i, tok in enumerate(tokens):
        if tok.kind in _OPENERS:
            stack.append(i)
        elif tok.kind in _CLOSERS and stack:
            stack.pop()
        elif next_bar < len(bars) and i == bars[next_bar]:
            groups.append(stack[-1] if stack else -1)
            next_bar += 1
    return groups
