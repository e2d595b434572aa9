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
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from referee.sandbox.languages import Language

HARNESS_DIR = Path(__file__).resolve().with_name("harnesses")
HARNESS_FILES = {"cpp": "harness.cpp", "java": "Harness.java", "go": "harness.go"}
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
