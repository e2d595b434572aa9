"""String-level clean-up of one answer before tokenising.

Everything here is a bounded linear pass (plain `str` methods and regexes without nested
quantifiers). It removes what the policy says to ignore (spacing macros, `\\left`/`\\right`,
degrees, currency, thousands separators, text/bold wrappers) and maps Unicode math symbols to
their LaTeX spelling, so the tokenizer only has to know one spelling of each thing.
"""

from __future__ import annotations

import re

from referee.verifiers.math._tokens import UNITS

# Commands whose braced argument is kept and the command dropped.
# Text-mode wrappers: a purely alphabetic argument is prose or a unit ("\\text{ cm}",
# "\\text{Monday}", "\\text{ or }"), never a product of one-letter symbols.
_TEXT_WRAPPERS = ("text", "textrm", "textit", "textsf", "texttt", "textnormal", "mbox", "hbox", "emph")
# Math-mode wrappers: `\\mathrm{e}` is the constant e, `\\mathbf{12}` is 12. `\\boxed` is here
# because a box nested in a box (`\\boxed{x = \\boxed{4}}`) is still just the answer.
_MATH_WRAPPERS = (
    "textbf", "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "boldsymbol", "bm", "operatorname",
    "boxed", "fbox", "underline",
)  # fmt: skip
_WRAPPERS = _TEXT_WRAPPERS + _MATH_WRAPPERS
# A word the tokenizer must read as one word, even a single letter: \x01word\x01.
WORD_MARK = "\x01"
# A degree sign, kept for the tokenizer: `\sin 30^\circ` is sin(pi/6), and a bare `90^\circ`
# is 90 (policy 7); dropping the sign would read `\cos(60^\circ)` as `\cos(60)` in radians.
DEGREE_MARK = "\x03"
_ALPHA_ARG = re.compile(r"\s*[A-Za-z][A-Za-z '-]*")
# \color{red}, \textcolor{red}{x}: the colour argument is dropped, the text kept.
_COLOR_RE = re.compile(r"\\(?:color|textcolor)\s*\{[A-Za-z!0-9]{0,30}\}")

_UNICODE = {
    "−": "-",
    "–": "-",
    "—": "-",
    "×": "\\times ",
    "·": "\\cdot ",
    "⋅": "\\cdot ",
    "÷": "\\div ",
    "°": DEGREE_MARK,
    "π": "\\pi ",
    "∞": "\\infty ",
    "√": "\\sqrt ",
    "≤": "\\le ",
    "≥": "\\ge ",
    "≠": "\\ne ",
    "≈": "\\approx ",
    "∪": "\\cup ",
    "∩": "\\cap ",
    "∅": "\\emptyset ",
    "∈": "\\in ",
    "±": "\\pm ",
    "∓": "\\mp ",
    "ℝ": "\\mathbb{R}",
    "½": "\\frac{1}{2}",
    "⅓": "\\frac{1}{3}",
    "⅔": "\\frac{2}{3}",
    "¼": "\\frac{1}{4}",
    "¾": "\\frac{3}{4}",
    "²": "^{2}",
    "³": "^{3}",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))

_SIZING = re.compile(
    r"\\(?:left|right|middle|mleft|mright|[bB]igg?[lrm]?)(?![A-Za-z])\s*(?:\.(?![0-9]))?"
    r"|\\(?:displaystyle|textstyle|scriptstyle|limits|nolimits)(?![A-Za-z])"
)
_SPACING = re.compile(r"\\[,;:! ]|\\(?:thinspace|enspace|medspace|thickspace)(?![A-Za-z])|~")
# `\\quadx_{2}`: a quad glued to a one-letter name is still a quad.
_QUAD = re.compile(r"\\q?quad(?![A-Za-z])|\\q?quad(?=[A-Za-z](?![A-Za-z]))")
_DEGREES = re.compile(
    r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![A-Za-z])|\\circ(?![A-Za-z])|\\degree(?![A-Za-z])"
)
_FRAC_VARIANTS = re.compile(r"\\[dtc]frac(?![A-Za-z])")
_BINOM_VARIANTS = re.compile(r"\\[dt]binom(?![A-Za-z])")
# `{16 \\choose 2}`, TeX's spelling of `\\binom{16}{2}` (a group with no braces inside).
_CHOOSE = re.compile(r"\{([^{}]{1,100}?)\\choose(?![A-Za-z])([^{}]{1,100})\}")
_MATH_DELIMS = re.compile(r"\\[()\[\]]|\$")
# Explicit thousands separators: `1{,}000`, `1,\!000` (after `\!` removal it is a plain comma,
# so handle it first while it is still unambiguous).
_EXPLICIT_THOUSANDS = re.compile(r"(?<=\d)(?:\{,\}|,\\!)\s*(?=\d{3}(?!\d))")
# `\\\\frac`, `\\\\left`: a backslash escaped once more (JSON or Python source) before a command;
# never the row break `\\\\` before a command (`1 \\\\\\end{pmatrix}`).
_ESCAPED_COMMAND = re.compile(
    r"(?<!\\)\\\\(?=(?:[dtc]?frac|sqrt|left|right|le|leq|ge|geq|neq|cdot|times|boxed|infty|text|"
    r"mathrm|pm|circ|pi|in|notin|cup|cap|setminus|begin|end|mathbb|ln|log|sin|cos|tan|exp)(?![A-Za-z]))"
)
# In a text whose commands are escaped once more, so is the row break: `\\\\` is `\\`.
_ESCAPED_ROW_BREAK = "\\" * 4
# `14 {, }916`: a braced comma, spaced, between digit groups.
_BRACED_COMMA = re.compile(r"(?<=\d)\s*\{\s*,\s*\}\s*(?=\d)")
# A line break between two numbers separates them ("11\n5/6" is not the mixed number 11 5/6).
_LINE_BETWEEN_NUMBERS = re.compile(r"(?<=\d)[ \t]*(?:\r?\n[ \t]*)+(?=[-+.]?\d)")
# "28 percent", "4 4/9pct": the word is the percent sign (policy 6).
_PERCENT_WORD = re.compile(r"(?<=[\d}])\s*(?:percentage|percent|pct)(?![A-Za-z])")
# `W(x)=1orW(x)=-1`: "or"/"and" glued between two equations of the same label (policy rule 31).
_GLUED_CONNECTOR = re.compile(r"(?<![A-Za-z\\])(or|and)(?=[A-Za-z])")
_LABEL_HEAD = re.compile(r"\s*([A-Za-z](?:_\{?[A-Za-z0-9]{1,4}\}?)?(?:\([A-Za-z0-9]{1,3}\))?)\s*=")
# Chinese and Hindi words that negate, hedge or ask ("不是 5", "可能是 5", "5 吗", "शायद 5"):
# a concluding sentence with one states no result (the English ones are `denial`'s and
# `_extract._BOUND_BEFORE`'s).
# A bound is no value either ("小于6", "至少6个", "超过6个", "6 से कम"; policy rule 52).
OTHER_SCRIPT_DOUBT = re.compile(
    r"不|错|误|并非|可能|也许|或许|大概|吗|？|नहीं|शायद|गलत"
    r"|小于|大于|少于|多于|低于|高于|至少|至多|最多|最少|超过|不到|以上|以下|से कम|से अधिक|से ज्यादा"
)
# Chinese or Devanagari words glued to a number are its unit ("858颗", "3页", "67 कमीजें"),
# as glued English words are (policy rule 22); a word that doubts the number is not.
_SCRIPT_UNIT = re.compile(r"(?<=[\d}])[ \t]*([\u3400-\u9fff\u0900-\u0963\u0966-\u097f]+)")
# Times of day (policy rule 48): `20:34:00` is 20:34, and `08:34 P.M.` (also `\\text{P.M.}`,
# `pm`) is 20:34; seconds other than :00 stay, so `20:34:30` is not 20:34.
_CLOCK_SECONDS = re.compile(r"(?<![\d:.])(\d{1,2}:[0-5]\d):00(?![\d:.])")
_CLOCK_12H = re.compile(
    r"(?<![\d:.])(?P<h>\d{1,2}):(?P<m>[0-5]\d)\s*(?P<w>\\(?:text|mathrm|textrm)\s*\{\s*)?"
    r"(?P<half>[AaPp])\.?\s*[Mm]\.?(?(w)\s*\})(?![A-Za-z])"
)
_PLAIN_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d])")
_SPACE_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?: \d{3})+(?![\d.])")


_SCAN = re.compile(r"\\([A-Za-z]+)\s*|\\.|[{}]", re.S)
_TEXT_SET = frozenset(_TEXT_WRAPPERS)
_WRAPPER_SET = frozenset(_WRAPPERS)


def _unwrap(text: str) -> str:
    """Drop wrapper commands (`\\text{...}` and friends) keeping their argument, padded with
    spaces so that a wrapped word never glues onto a neighbouring letter. One pass with a stack
    of open braces: linear in the length of the text."""
    out: list[str] = []
    stack: list[tuple[str | None, int]] = []  # (wrapper name or None, index of its opening in out)
    pos = 0
    while (match := _SCAN.search(text, pos)) is not None:
        out.append(text[pos : match.start()])
        pos = match.end()
        token = match.group(0)
        name = match.group(1)
        if name is not None:
            if name in _WRAPPER_SET and pos < len(text) and text[pos] == "{":
                stack.append((name, len(out)))
                out.append(" ")
                pos += 1
            else:
                out.append(token)
        elif token == "{":
            stack.append((None, len(out)))
            out.append("{")
        elif token == "}":
            if not stack:
                out.append("}")
                continue
            name, at = stack.pop()
            if name is None:
                out.append("}")
                continue
            arg = "".join(out[at + 1 :]).strip()
            # `\\mathrm{sgn}(x)`: a roman name right before its bracket is an operator too
            applied = name == "mathrm" and arg.lower() not in UNITS and text[pos:].lstrip().startswith("(")
            if name == "operatorname" or applied:
                if len(arg) > 1 and arg.isascii() and arg.isalpha():
                    # An operator's name is a command (`\\operatorname{floor}` is `\\floor`):
                    # the lexer knows it or refuses it, never drops it as a word.
                    del out[at + 1 :]
                    out.append("\\" + arg)
            elif name in _TEXT_SET or name == "mathrm":
                pieces = out[at + 1 :]
                if sum(map(len, pieces)) <= 80:
                    arg = "".join(pieces)
                    if _ALPHA_ARG.fullmatch(arg) and (name != "mathrm" or len(arg.strip()) > 1):
                        del out[at + 1 :]
                        out.append(WORD_MARK + arg.strip() + WORD_MARK)
            out.append(" ")
        else:
            out.append(token)
    out.append(text[pos:])
    return "".join(out)


def _collapse_groups(text: str) -> str:
    """((x)) -> (x) and {{x}} -> {x}: redundant nesting costs parser depth but means nothing.
    One pass to match brackets with a stack, one to drop the redundant outer pairs."""
    match: dict[int, int] = {}
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch in "({" and (i == 0 or text[i - 1] != "\\"):
            stack.append(i)
        elif ch in ")}" and (i == 0 or text[i - 1] != "\\"):
            if stack and text[stack[-1]] == ("(" if ch == ")" else "{"):
                match[stack.pop()] = i
            else:
                stack.clear()
    if not match:
        return text
    drop: set[int] = set()
    for open_at, close_at in match.items():
        inner = open_at + 1
        while inner < close_at and text[inner] == " ":
            inner += 1
        inner_close = match.get(inner)
        if inner_close is None or text[inner] != text[open_at]:
            continue
        after = inner_close + 1
        while after < close_at and text[after] == " ":
            after += 1
        if after == close_at:
            drop.add(open_at)
            drop.add(close_at)
    if not drop:
        return text
    return "".join(ch for i, ch in enumerate(text) if i not in drop)


def _split_glued_connectors(text: str) -> str:
    """`W(x)=1orW(x)=-1` -> `W(x)=1 or W(x)=-1`: a glued "or"/"and" is the word only where the
    same label and `=` follow it as open the answer; elsewhere letters stay symbols."""
    head = _LABEL_HEAD.match(text)
    if head is None or ("or" not in text and "and" not in text):
        return text
    label = head.group(1)
    out: list[str] = []
    pos = 0
    for match in _GLUED_CONNECTOR.finditer(text, head.end()):
        after = _LABEL_HEAD.match(text, match.end())
        if after is not None and after.group(1) == label:
            out.append(text[pos : match.start()])
            out.append(f" {WORD_MARK}{match.group(1)}{WORD_MARK} ")
            pos = match.end()
    out.append(text[pos:])
    return "".join(out)


def _clock_24h(match: re.Match[str]) -> str:
    hour = int(match.group("h"))
    if not 1 <= hour <= 12:
        return match.group(0)
    hour = hour % 12 + (12 if match.group("half") in "Pp" else 0)
    return f"{hour}:{match.group('m')}"


def _script_unit(match: re.Match[str]) -> str:
    word = match.group(1)
    return match.group(0) if OTHER_SCRIPT_DOUBT.search(word) else f" {WORD_MARK}{word}{WORD_MARK} "


def clean(answer: str) -> str:
    """Normalise the spelling of one extracted answer (no semantics beyond the policy)."""
    # A matrix row break `\\` must survive the removal of `\ ` and `\[`: park it first.
    text = answer.replace("\x00", "").replace(WORD_MARK, "").replace(DEGREE_MARK, "")
    escaped = _ESCAPED_COMMAND.search(text) is not None
    text = _ESCAPED_COMMAND.sub(lambda _: "\\", text)
    if escaped:
        text = text.replace(_ESCAPED_ROW_BREAK, "\\\\")
    text = text.replace("\\\\", "\x00")
    text = _CLOCK_SECONDS.sub(r"\1", _CLOCK_12H.sub(_clock_24h, text))
    text = _LINE_BETWEEN_NUMBERS.sub(", ", text)
    text = _UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], text)
    text = _COLOR_RE.sub("", text)
    text = _unwrap(text)
    text = _BRACED_COMMA.sub("{,}", text)
    text = _EXPLICIT_THOUSANDS.sub("", text)
    text = _PERCENT_WORD.sub("%", text)
    text = _SCRIPT_UNIT.sub(_script_unit, text)
    text = text.replace("{,}", ",").replace("{:}", ":")
    text = _SIZING.sub("", text)
    text = _QUAD.sub(",", text)
    # `1\,000\,000`: a thin space between digit groups is a thousands separator.
    text = re.sub(r"(?<=\d)\\,(?=\d{3}(?!\d))", "", text)
    text = _SPACING.sub(" ", text)
    text = _DEGREES.sub(DEGREE_MARK, text)
    text = _FRAC_VARIANTS.sub(r"\\frac", text)
    text = _BINOM_VARIANTS.sub(r"\\binom", text)
    text = _CHOOSE.sub(r"\\binom{\1}{\2}", text)
    text = text.replace("\\%", "%").replace("\\$", " ")
    text = _MATH_DELIMS.sub(" ", text)
    text = _split_glued_connectors(text)
    text = _collapse_groups(text)
    text = text.replace("\\&", " and ")
    if not any(ch in text for ch in "([{"):
        # Plain `1,200` is a thousands separator only where it cannot be a list or a tuple.
        text = _PLAIN_THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
        text = _SPACE_THOUSANDS.sub(lambda m: m.group(0).replace(" ", ""), text)
    text = text.replace("\x00", " \\\\ ").strip()
    # A lone backslash at the very end (`185\\`, a cut escape) means nothing (policy rule 25).
    while text and (text[-1] in ".;:," or (text[-1] == "\\" and text[-2:-1] != "\\")):
        text = text[:-1].rstrip()
    return text


_TEXT_STRIP = re.compile(r"[\s.,;:!*_`\"'{}]+")


def normalize_text(answer: str) -> str:
    """Comparable form of a text answer: wrappers, punctuation and case removed."""
    text = clean(answer).replace(WORD_MARK, " ").replace(DEGREE_MARK, " ").casefold()
    text = text.replace("\\", " ")
    text = _TEXT_STRIP.sub(" ", text).strip()
    for article in ("the ", "a ", "an "):
        if text.startswith(article):
            text = text[len(article) :]
    return text
