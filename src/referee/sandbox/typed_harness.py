"""Function tests for compiled, typed languages: the program and a harness, compiled together.

Datasets store many problems as function calls (`{"fn_name", "args", "expected"}`: LeetCode,
TACO/APPS with `fn_name`, LiveCodeBench's functional split, MultiPL-E's translated problems).
Python and JavaScript load the program into a harness process (in_container/call_harness.*).
A C++, Java or Go program cannot be loaded that way, so its harness is source code appended to
the program (harnesses/harness.*) and compiled with it: the compiled program *is* the harness.
It speaks the JavaScript harness's protocol: the spec `{"fn_name", "args"}` on fd 3, the value
as `{"ok": true, "value": ...}` on fd 4, compared with the expected value outside the container.

No signature is parsed. Each harness learns the parameter types from the language itself and
converts every JSON argument to its parameter's type: C++ deduces them from the function's
pointer (templates), Java and Go read them by reflection. A value that does not fit its
parameter (a float for an `int`, an array of the wrong size) is that test's wrong answer, with
the reason; a parameter type the harness cannot read (a pointer, a user class) is a compile
error of the program, as it would be on a judge that expects another signature.

Where the function is looked up, by language:
- C++: a free function `name`, or a member of `class Solution` / `struct Solution` when the
  program declares one (LeetCode's convention), called on a default-constructed object. An
  overloaded name is ambiguous (compile error). A `main` of the program is renamed: unused.
- Java: a method `name` of any top-level class of the program, `Solution` first (static or
  called on an instance made with the no-argument constructor). `public` is dropped from
  top-level classes (one file holds them all), and a class `Main` is renamed (the harness is
  the jar's `Main`).
- Go: a package-level function `name`. The program's `func main` is renamed: unused.
- Rust: a free function `name`, or an associated function of `impl Solution` (LeetCode's Rust
  convention; `struct Solution;` is declared when the program only has the `impl`). Rust has
  no reflection, so here the host reads the function's parameter types from its signature and
  writes them into the call; traits in the harness convert JSON to and from each type
  (integers, floats, `bool`, `char`, `String`/`&str`, `Vec`/`&[T]`, `VecDeque`, sets, maps,
  arrays, tuples, `Option`). A signature it cannot read is a compile error.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from referee.sandbox.languages import Language

HARNESS_DIR = Path(__file__).resolve().with_name("harnesses")
HARNESS_FILES = {"cpp": "harness.cpp", "java": "Harness.java", "go": "harness.go", "rust": "harness.rs"}
TYPED_LANGUAGES = frozenset(HARNESS_FILES)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CPP_MAIN = re.compile(r"\bint\s+main\s*\(")
_CPP_SOLUTION = re.compile(r"\b(?:class|struct)\s+Solution\b")
_JAVA_PUBLIC_CLASS = re.compile(
    r"(?m)^(\s*)public\s+((?:(?:final|abstract)\s+)*(?:class|interface|enum|record)\s)"
)
_JAVA_MAIN_CLASS = re.compile(r"\bMain\b")
_GO_MAIN = re.compile(r"(?m)^func\s+main\s*\(\s*\)")
_GO_PACKAGE = re.compile(r"(?m)^package\s+\w+[ \t]*$")


@cache
def _harness(language: str) -> str:
    return (HARNESS_DIR / HARNESS_FILES[language]).read_text(encoding="utf-8")


def supports_functions(language: Language) -> bool:
    """Whether `function` tests of this language run through a compiled harness."""
    return language.name in TYPED_LANGUAGES


def function_language(language: Language) -> Language:
    """`language` as a function test runs it: the compiled program (with its harness) is the
    harness command, run like the program itself (Java's with java.io opened to the harness,
    which reads and writes fd 3 and 4 by number: see harnesses/Harness.java)."""
    run = language.run
    if language.name == "java":
        run = (run[0], "--add-opens=java.base/java.io=ALL-UNNAMED", *run[1:])
    return dataclasses.replace(language, harness=run, formats=language.formats | {"function"})


def with_harness(language: str, program: str, fn_names: Sequence[str]) -> str:
    """The program and its harness, one compilation unit that calls any of `fn_names`."""
    names = sorted(set(fn_names))
    for name in names:  # FunctionTest checks this; the harness is code, so check again
        if not _NAME.match(name):
            raise ValueError(f"{name!r} is no function name")
    if language == "cpp":
        return _cpp(program, names)
    if language == "java":
        return _java(program, names)
    if language == "go":
        return _go(program, names)
    if language == "rust":
        return _rust(program, names)
    raise ValueError(f"{language} has no compiled function harness")


def _cpp(program: str, names: list[str]) -> str:
    owner = "::Solution::" if _CPP_SOLUTION.search(program) else "::"
    cases = "".join(f'    if (name == "{n}") return call(&{owner}{n}, args);\n' for n in names)
    dispatch = (
        "namespace referee_harness {\n"
        "std::string dispatch(const std::string& name, const Json& args) {\n"
        f"{cases}"
        '    throw Unfit("the test calls no function of the program: " + name);\n'
        "}\n"
        "}  // namespace referee_harness\n"
    )
    renamed = _CPP_MAIN.sub("int referee_program_main(", program)
    return f"{renamed}\n{_harness('cpp')}\n{dispatch}"


def _java(program: str, names: list[str]) -> str:
    # One file holds every class: a public one would have to be named after the file.
    source = _JAVA_PUBLIC_CLASS.sub(r"\1\2", program)
    source = _JAVA_MAIN_CLASS.sub("ProgramMain", source)
    return f"{source}\n{_harness('java')}"


def _go(program: str, names: list[str]) -> str:
    source = _GO_MAIN.sub("func refereeProgramMain()", program)
    # An executable is package main, whatever the program called its package.
    source, found = _GO_PACKAGE.subn("package main", source, count=1)
    if not found:
        source = "package main\n" + source
    calls = "".join(f'\t"{n}": {n},\n' for n in names)
    table = f"\nvar refereeFunctions = map[string]interface{{}}{{\n{calls}}}\n"
    return (
        _GO_IMPORTS.sub(lambda m: m.group(0) + _GO_HARNESS_IMPORTS, source, count=1) + table + _harness("go")
    )


# The harness's imports, aliased (a program may import the same packages under their own names,
# which Go allows) and placed right after the package clause, where Go wants every import.
_GO_IMPORTS = re.compile(r"(?m)^package\s+\w+[ \t]*\n")
_GO_HARNESS_IMPORTS = 'import (\n\trefereeJSON "encoding/json"\n\trefereeIO "io"\n\trefereeOS "os"\n\trefereeReflect "reflect"\n)\n'


_RUST_MAIN = re.compile(r"\bfn\s+main\s*\(")
_RUST_SOLUTION_IMPL = re.compile(r"\bimpl\s+Solution\b")
_RUST_SOLUTION_STRUCT = re.compile(r"\bstruct\s+Solution\b")
_RUST_SELF = re.compile(r"^&?\s*(?:'\w+\s+)?(?:mut\s+)?self$")


def _rust_parameters(program: str, name: str) -> tuple[list[str], bool] | None:
    """The parameter types of `fn name(...)` (the first one found) and whether it is declared
    in `impl Solution` (an associated function); None when there is no such function."""
    found = re.search(rf"\bfn\s+{name}\s*(?:<[^>{{(]*>)?\s*\(", program)
    if found is None:
        return None
    depth, start, parts, i = 1, found.end(), [], found.end()
    while i < len(program) and depth:
        c = program[i]
        if c in "(<[":
            depth += 1
        elif c in ")>]" and not (c == ">" and program[i - 1] == "-"):
            depth -= 1
        if (c == "," and depth == 1) or depth == 0:
            parts.append(program[start:i])
            start = i + 1
        i += 1
    params = [p.strip() for p in parts if p.strip()]
    types = [p.split(":", 1)[1].strip() for p in params if ":" in p and not _RUST_SELF.match(p)]
    return types, any(start < found.start() < end for start, end in _impl_blocks(program))


def _impl_blocks(program: str) -> list[tuple[int, int]]:
    """The spans of the program's `impl Solution { ... }` blocks (braces counted; a brace in a
    string or comment can mislead it, and then the call does not compile: a compile error)."""
    spans = []
    for impl in _RUST_SOLUTION_IMPL.finditer(program):
        opening = program.find("{", impl.end())
        depth, i = 0, opening
        while opening >= 0 and i < len(program):
            depth += {"{": 1, "}": -1}.get(program[i], 0)
            if depth == 0:
                spans.append((opening, i))
                break
            i += 1
    return spans


def _rust_argument(index: int, declared: str) -> tuple[str, str]:
    """(the `let` that converts argument `index`, how it is passed) for a declared type."""
    base, passed = declared, f"a{index}"
    if base.startswith("&"):
        base = re.sub(r"^&\s*(?:'\w+\s+)?", "", base)
        passed = f"&a{index}"
        if base.startswith("mut "):
            base, passed = base[4:].strip(), f"&mut a{index}"
    if base == "str":
        base = "String"
    elif base.startswith("[") and base.endswith("]") and ";" not in base:
        base = f"Vec<{base[1:-1]}>"
    return f"let mut a{index}: {base} = referee_harness::arg(args, {index})?;", passed


def _rust(program: str, names: list[str]) -> str:
    source = _RUST_MAIN.sub("fn referee_program_main(", program)
    if _RUST_SOLUTION_IMPL.search(source) and not _RUST_SOLUTION_STRUCT.search(source):
        source += "\n#[allow(dead_code)]\npub struct Solution;\n"
    arms = []
    for name in names:
        signature = _rust_parameters(source, name)
        if signature is None:  # no such function: the name is unresolved, a compile error
            arms.append(f'        "{name}" => referee_harness::value({name}()),\n')
            continue
        types, associated = signature
        lets, passed = (
            zip(*(_rust_argument(i, t) for i, t in enumerate(types)), strict=True) if types else ((), ())
        )
        call = f"{'Solution::' if associated else ''}{name}({', '.join(passed)})"
        arms.append(
            f'        "{name}" => {{\n'
            f"            if args.len() != {len(types)} {{\n"
            f'                return Err(format!("the test passes {{}} arguments; the function takes {len(types)}", args.len()));\n'
            "            }\n"
            + "".join(f"            {line}\n" for line in lets)
            + f"            referee_harness::value({call})\n"
            "        }\n"
        )
    dispatch = (
        "#[allow(unused_mut)]\n"
        "fn referee_dispatch(name: &str, args: &[referee_harness::Json]) -> referee_harness::Fit<String> {\n"
        "    match name {\n"
        + "".join(arms)
        + '        _ => Err(format!("the test calls no function of the program: {}", name)),\n'
        "    }\n"
        "}\n\n"
        "fn main() {\n    referee_harness::run(referee_dispatch);\n}\n"
    )
    return f"{source}\n{_harness('rust')}\n{dispatch}"
