"""How a typed program and its function-test harness become one compilation unit
(referee.sandbox.typed_harness), without Docker: the program's own `main` and `Main` step
aside, Java's public classes and Go's package fit one file, and what cannot run is refused.
The harnesses themselves run in tests/sandbox/test_typed_functions.py."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from referee.sandbox.languages import LANGUAGES
from referee.sandbox.typed_harness import function_language, supports_functions, with_harness
from referee.verifiers.code import CodeReference

TESTS = [{"fn_name": "f", "args": [1], "expected": 2}]


def test_cpp_calls_solution_members_or_free_functions_and_renames_main() -> None:
    member = with_harness(
        "cpp", "class Solution { public: int f(int x) { return x; } };\nint main() {}", ["f"]
    )
    assert "call(&::Solution::f, args)" in member and "int referee_program_main(" in member
    assert "int main() {}" not in member and member.count("int main()") == 1  # the harness's
    free = with_harness("cpp", "int f(int x) { return 2 * x; }", ["f"])
    assert "call(&::f, args)" in free


def test_java_classes_fit_one_file_beside_the_harness_main() -> None:
    source = with_harness(
        "java", "public final class Solution { int f(int x) { return x; } }\nclass Main {}", ["f"]
    )
    assert "\nfinal class Solution" in "\n" + source and "public final class Solution" not in source
    assert "class ProgramMain {}" in source and source.count("class Main {") == 1


def test_go_is_package_main_with_the_harness_imports_first() -> None:
    source = with_harness(
        "go",
        'package solution\n\nimport "fmt"\n\nfunc f(x int) int { return x }\nfunc main() { fmt.Println() }',
        ["f"],
    )
    assert source.startswith("package main\nimport (\n\trefereeJSON")
    assert "func refereeProgramMain()" in source and '"f": f,' in source


def test_function_names_are_identifiers_only() -> None:
    with pytest.raises(ValueError, match="no function name"):
        with_harness("cpp", "int f();", ['f"); system("x'])


def test_which_languages_take_function_tests() -> None:
    assert {name for name, lang in LANGUAGES.items() if supports_functions(lang)} >= {
        "cpp",
        "java",
        "go",
        "rust",
    }
    assert function_language(LANGUAGES["cpp"]).harness == LANGUAGES["cpp"].run
    java = function_language(LANGUAGES["java"]).harness
    assert java is not None and "--add-opens=java.base/java.io=ALL-UNNAMED" in java and java[-1] == "main.jar"
    for language in ("cpp", "java", "go", "rust"):
        assert CodeReference.model_validate({"language": language, "test_format": "function", "tests": TESTS})
    with pytest.raises(ValidationError, match="supports the formats"):
        CodeReference.model_validate({"language": "c", "test_format": "function", "tests": TESTS})


def test_rust_calls_are_written_from_the_signature() -> None:
    program = (
        "impl Solution {\n    pub fn f(mut v: Vec<i32>, s: &str, m: &mut Vec<i64>, t: &[(i32, String)]) -> i32 { 0 }\n}\n"
        "fn g() -> bool { true }\nfn main() {}\n"
    )
    source = with_harness("rust", program, ["f", "g"])
    assert "let mut a0: Vec<i32> = referee_harness::arg(args, 0)?;" in source
    assert "let mut a1: String = referee_harness::arg(args, 1)?;" in source
    assert "let mut a2: Vec<i64> = referee_harness::arg(args, 2)?;" in source
    assert "let mut a3: Vec<(i32, String)> = referee_harness::arg(args, 3)?;" in source
    assert "Solution::f(a0, &a1, &mut a2, &a3)" in source and "referee_harness::value(g())" in source
    assert "pub struct Solution;" in source and "fn referee_program_main(" in source
