"""Programs of several files: the candidate's source and source files of the problem.

A reference's `files` (headers, data files) are written beside the program. Most languages then
find the other source files by themselves: Python's and Node's imports, Ruby's
`require_relative`, PHP's `include`, Lua's `require`, Rust's `mod`, GHC's `import`. A C, C++,
Go, C# or OCaml compiler is given every file it compiles, so the problem's source files of the
language are added to its compile command: IOI-style problems ship a grader (`grader.cpp` with
`main`, calling the function the candidate writes, declared in a header), or a Go driver in
`package main` beside the candidate's function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from referee.sandbox.languages import Language

# The suffixes of the source files each compiler is given, and whether they go before the
# program's own source (OCaml links modules in dependency order: the problem's come first).
COMPILED_WITH: dict[str, tuple[tuple[str, ...], bool]] = {
    "c": ((".c",), False),
    "cpp": ((".cpp", ".cc", ".cxx"), False),
    "go": ((".go",), False),
    "csharp": ((".cs",), False),
    "ocaml": ((".ml",), True),
}


def extra_sources(language: Language, names: Iterable[str]) -> tuple[str, ...]:
    """The problem's files that `language`'s compiler must be given, sorted."""
    suffixes, _ = COMPILED_WITH.get(language.name, ((), False))
    return tuple(sorted(name for name in names if suffixes and name.endswith(suffixes)))


def with_extra_sources(language: Language, names: Iterable[str]) -> Language:
    """`language` compiling the problem's source files among `names` with the program."""
    extra = extra_sources(language, names)
    if not extra or language.compile is None or language.source_file not in language.compile:
        return language
    command = list(language.compile)
    at = command.index(language.source_file)
    before = COMPILED_WITH[language.name][1]
    compiled = [*extra, language.source_file] if before else [language.source_file, *extra]
    return dataclasses.replace(language, compile=(*command[:at], *compiled, *command[at + 1 :]))
