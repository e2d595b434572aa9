"""`files` in a code reference (the problem's headers and data files): what is refused with a
422 naming the field, what travels to the sandbox, and the compile cache's key."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from referee.sandbox.compile_cache import program_key
from referee.sandbox.languages import LANGUAGES
from referee.sandbox.multi_file import with_extra_sources
from referee.sandbox.protocol import Job, encode_request
from referee.sandbox.run_limits import Limits
from referee.sandbox.settings import SandboxSettings
from referee.verifiers.code import MAX_EXTRA_FILES, MAX_EXTRA_FILES_BYTES, CodeReference, CodeVerifier

TESTS = [{"input": "1\n", "output": "1\n"}]
LIMITS = Limits.from_settings(SandboxSettings())


def ref(files: dict[str, Any], language: str = "cpp") -> dict[str, Any]:
    return {"language": language, "tests": TESTS, "files": files}


@pytest.mark.parametrize(
    ("files", "language", "why"),
    [
        ({"../x.h": "a"}, "cpp", "no plain file name"),
        ({"dir/x.h": "a"}, "cpp", "no plain file name"),
        ({".hidden": "a"}, "cpp", "no plain file name"),
        ({"checker-1": "a"}, "cpp", "no plain file name"),
        ({"sol.cpp": "a"}, "cpp", "the program's own file"),
        ({"sol": "a"}, "cpp", "the program's own file"),
        ({"main.jar": "a"}, "java", "the program's own file"),
        ({"x.txt": "a" * (MAX_EXTRA_FILES_BYTES + 1)}, "cpp", "bytes in all"),
        ({f"f{i}.txt": "a" for i in range(MAX_EXTRA_FILES + 1)}, "cpp", "at most 16"),
        ({"x.txt": 3}, "cpp", "valid string"),
    ],
)
def test_bad_files_are_refused(files: dict[str, Any], language: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        CodeReference.model_validate(ref(files, language))


def test_files_travel_with_the_job_and_shape_the_cache_key() -> None:
    verifier = CodeVerifier()
    options = verifier.validate_options({})
    with_header = verifier.prepare(ref({"b.h": "int b;", "a.txt": "data"}), options)
    assert with_header.files == (("a.txt", b"data"), ("b.h", b"int b;"))
    assert verifier.prepare(ref({}), options).files == ()

    def job(files: tuple[tuple[str, bytes], ...]) -> Job:
        return Job(with_header.language, "stdio", b"int main(){}", with_header.inputs, LIMITS, files=files)

    request = encode_request(job(with_header.files), [0])
    assert b'"files":{"a.txt":"ZGF0YQ==","b.h":"aW50IGI7"}' in request
    keys = {program_key(job(files), "image:1") for files in [(), with_header.files, (("b.h", b"int c;"),)]}
    assert len(keys) == 3


def test_the_problems_source_files_are_compiled_with_the_program() -> None:
    names = ["grader.cpp", "solve.h", "data.txt", "util.cc", "helper.go", "Lib.ml"]
    cpp = with_extra_sources(LANGUAGES["cpp"], names).compile
    assert cpp is not None and cpp[-3:] == ("sol.cpp", "grader.cpp", "util.cc")
    c = with_extra_sources(LANGUAGES["c"], ["grader.c", "x.h"]).compile
    assert c is not None and c[-3:] == ("sol.c", "grader.c", "-lm")  # the library after the sources
    go = with_extra_sources(LANGUAGES["go"], names).compile
    assert go is not None and go[-2:] == ("main.go", "helper.go")
    ocaml = with_extra_sources(LANGUAGES["ocaml"], names).compile
    assert ocaml is not None and ocaml[-2:] == ("Lib.ml", "sol.ml")  # dependencies first
    # Languages that find their modules themselves, and problems without sources, are unchanged.
    for language, files in (("python", ["helper.py"]), ("rust", ["util.rs"]), ("cpp", ["solve.h"])):
        assert with_extra_sources(LANGUAGES[language], files) is LANGUAGES[language]
