"""No eval/exec/compile/parse_expr/sympify anywhere in src/ unless the line says why it is safe.

Model text must never reach a code evaluator (reasoning-gym's scorers ran an injected
`len([print(...)])` through sympy's parse_expr). The scan works on Python tokens, so words in
comments and strings do not count, and a name is flagged whether it is called or passed around.
`eval`, `exec` and `compile` are flagged as the builtins only (not `re.compile`, not a torch
module's `.eval()`, not a keyword argument named `compile`).
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
# Flagged wherever they appear, attribute or not (sympy.parse_expr, sympy.sympify).
ANYWHERE = {"parse_expr", "sympify"}
# Flagged as the builtins: a bare name or `builtins.<name>`, but not a method such as torch's
# `module.eval()` or `re.compile`, nor a keyword argument or field called `compile`.
BUILTINS = {"eval", "exec", "compile"}
SAFE_MARK = "# safe:"
_SKIP = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)


def offending_lines(source: str) -> list[tuple[int, str]]:
    lines = source.splitlines()
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in _SKIP]
    found = []
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or tok.string not in ANYWHERE | BUILTINS:
            continue
        before = tokens[i - 1].string if i >= 1 else ""
        owner = tokens[i - 2].string if i >= 2 else ""
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if tok.string in BUILTINS:
            if before == "." and owner not in ("builtins", "__builtins__"):
                continue
            if after in ("=", ":"):
                continue
        line = lines[tok.start[0] - 1]
        if SAFE_MARK not in line:
            found.append((tok.start[0], line.strip()))
    return found


def test_scanner_catches_what_it_should() -> None:
    bad = (
        "x = eval(s)\nexec(code)\nsympy.sympify(t)\nparse_expr(t)\ncompile(s, 'f', 'exec')\nf = eval\n"
        "builtins.eval(s)\n"
    )
    assert [n for n, _ in offending_lines(bad)] == [1, 2, 3, 4, 5, 6, 7]
    fine = (
        "import re\np = re.compile('x')\n# eval(x) in a comment\ns = 'exec(x)'\n"
        "y = ast.literal_eval(s)\nz = eval(s)  # safe: s is a constant above\n"
        "model.eval()\nspec = Lang(compile=('gcc',))\nclass L:\n    compile: tuple[str, ...] = ()\n"
    )
    assert offending_lines(fine) == []


def test_src_has_no_unmarked_evaluators() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert files, f"no sources under {SRC}"
    problems = [
        f"{path.relative_to(SRC.parent)}:{line}: {text}"
        for path in files
        for line, text in offending_lines(path.read_text(encoding="utf-8"))
    ]
    assert not problems, "unmarked evaluator calls:\n" + "\n".join(problems)
