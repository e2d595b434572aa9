"""`code`: run a model's program against test cases in the Docker sandbox and judge it exactly.

The program runs only inside hardened sandbox containers (referee.sandbox); the comparison with
the expected outputs happens here, in the trusted service process (referee.sandbox.judge).
Every test is run; the score is 1.0 when every test passes, else 0.0 (`reward="fraction"`:
passed/total), and the overall verdict is the verdict of the first failing test in list order.
An assert that involves no program expression (`assert True`) is not a test: it is not run
nor counted. The stdout cap per test is the reference's `output_limit_bytes`, else the
option's, else the service's (1 MiB); a problem whose expected output exceeds it is refused.
A stdio problem may carry a `checker` program that judges each output instead of the text
comparison (several outputs can be right): see referee.sandbox.checker_format; a checker that
fails is no verdict (status error, masked), never a 0.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from referee.sandbox import judge
from referee.sandbox.checker_format import (
    CheckedAnswer,
    CheckerConvention,
    CheckerLanguage,
    CheckerProgram,
    checker_outcome,
)
from referee.sandbox.judge import StdioConvention
from referee.sandbox.languages import LANGUAGES, Language
from referee.sandbox.multi_file import with_extra_sources
from referee.sandbox.protocol import (
    Job,
    Judgement,
    RunResult,
    SandboxUnavailable,
    TestInput,
    TestRun,
    TestVerdict,
)
from referee.sandbox.run_limits import Limits, for_language
from referee.sandbox.script_format import ScriptTest, judge_script, plan_script
from referee.sandbox.settings import SandboxSettings
from referee.sandbox.typed_harness import function_language, supports_functions, with_harness
from referee.verifiers import code_formats, extract
from referee.verifiers.base import AsyncVerifier, Check, CodeSandbox, Lane, Resources, Verifier, VerifierError

MAX_TESTS = 1000
SHOWN_BYTES = 512
# A test the node's load kept from a CPU past its wall-clock backstop (in_container/supervisor.py):
# it is run again (`starved_retries`), then the response gets no verdict (status error,
# masked), never a 0.
STARVED = "the node kept the program from a CPU past its wall-clock backstop"
# Pause before running a starved program again (times the attempt): the load that starved it
# (a burst of compiles, a neighbour) often passes within seconds.
STARVED_PAUSE_S = 1.0
MAX_OUTPUT_LIMIT = 16 << 20
MAX_SETUP_CHARS = 1 << 20
MAX_CHECKER_CHARS = 1 << 20
# A problem's extra files (headers, data files): plain names in the work dir, bounded in number
# and size like the rest of a reference.
MAX_EXTRA_FILES = 16
MAX_EXTRA_FILES_BYTES = 1 << 20
EXTRA_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
NOT_COUNTED = "these asserts do not involve the program (only literals and builtins): they are no test of it"


class StdioTest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: str = ""
    output: str


class FunctionTest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fn_name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    args: list[Any] = Field(default_factory=list)
    expected: Any


class ProblemProgram(BaseModel):
    """A trusted program of the problem, run in the sandbox apart from the candidate: its
    checker or its interactor (referee.sandbox.checker_format)."""

    model_config = ConfigDict(extra="forbid")
    language: CheckerLanguage = Field(description="cpp (testlib.h is on the include path) or python.")
    source: str = Field(min_length=1, max_length=MAX_CHECKER_CHARS)


class CheckerSpec(ProblemProgram):
    """A problem's checker program (referee.sandbox.checker_format has the conventions)."""

    convention: CheckerConvention = Field(
        default="testlib",
        description=(
            "testlib: `checker <input> <output> <answer>`, exit 0 accepted, 1/2 wrong answer, 7 "
            "points (`points <p>`, p in [0, 1]), 3 the checker's failure (no verdict); open-r1: "
            "open-r1/codeforces' generated_checker, `checker.py <input> <answer> <output>` "
            "printing 1 (accepted) or 0."
        ),
    )


class InteractorSpec(ProblemProgram):
    """An interactive problem's interactor (referee.sandbox.checker_format, in_container/
    interactor_runner.py): testlib's `interactor <input> <output> <answer>`, talking to the
    program through its stdin and stdout while it runs."""


class CodeReference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str
    test_format: Literal["stdio", "function", "assert"] = "stdio"
    tests: list[StdioTest] | list[FunctionTest] | str
    output_limit_bytes: int | None = Field(
        default=None,
        ge=1024,
        le=MAX_OUTPUT_LIMIT,
        description="This problem's stdout cap per test; wins over the option and the service's 1 MiB.",
    )
    setup: str | None = Field(
        default=None,
        max_length=MAX_SETUP_CHARS,
        description=(
            "Python assert tests: trusted code (the prompt's helpers and imports, MBPP's "
            "test_setup_code) run before the program, so it may use them, and separately for "
            "the tests, which see these definitions whatever the program redefines. Python "
            "function tests: code run before the program (the imports LeetCode-style "
            "programs assume, as LiveCodeBench's and TACO's harnesses do)."
        ),
    )
    entry_point: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description=(
            "Python assert tests: the program's function the tests call as `candidate` "
            "(HumanEval: `check(candidate)` is called with it)."
        ),
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        max_length=MAX_EXTRA_FILES,
        description=(
            "Extra files of the problem (headers the program includes, data files it reads): "
            "name -> text, written read-only into the program's working directory beside its "
            f"source, for the compile and every test. At most {MAX_EXTRA_FILES}, "
            f"{MAX_EXTRA_FILES_BYTES} bytes in all; plain names (letters, digits, `._-`)."
        ),
    )
    checker: CheckerSpec | None = Field(
        default=None,
        description=(
            "stdio tests: a program that judges each output instead of comparing it with the "
            "test's output (which becomes the checker's answer file), run in the sandbox apart "
            "from the program; its failure is no verdict (status error)."
        ),
    )
    interactor: InteractorSpec | None = Field(
        default=None,
        description=(
            "Interactive stdio problems: a testlib-style program that talks to the program while "
            "it runs (each test's input is the interactor's secret, its output the interactor's "
            "answer file) and decides by its exit status: 0 accepted, 1/2/8 wrong answer, 3 its "
            "own failure (no verdict, status error)."
        ),
    )

    def _check_files(self, lang: Language) -> None:
        if (
            sum(len(text.encode("utf-8", "surrogatepass")) for text in self.files.values())
            > MAX_EXTRA_FILES_BYTES
        ):
            raise ValueError(f"files: at most {MAX_EXTRA_FILES_BYTES} bytes in all")
        # The program's own files keep their names; the checker's folder is its own.
        taken = {lang.source_file, *lang.artifacts, *([lang.code_cache] if lang.code_cache else [])}
        for name in self.files:
            if not EXTRA_FILE_NAME.match(name) or name.startswith("checker"):
                raise ValueError(f"files: {name[:80]!r} is no plain file name (letters, digits, `._-`)")
            if name in taken:
                raise ValueError(f"files: {name!r} is the program's own file in {lang.name}")

    @model_validator(mode="before")
    @classmethod
    def _stored_rows(cls, data: Any) -> Any:
        """Rows of HumanEval, MBPP, APPS/TACO, CodeContests, LiveCodeBench and open-r1's
        Codeforces as stored, and the `{"inputs", "outputs", "fn_name"?}` form of verl's
        code-RL data sources: see referee.verifiers.code_formats."""
        return code_formats.canonical(data)

    @model_validator(mode="after")
    def _consistent(self) -> CodeReference:
        lang = LANGUAGES.get(self.language)
        if lang is None:
            raise ValueError(f"language must be one of {sorted(LANGUAGES)}")
        formats = lang.formats | ({"function"} if supports_functions(lang) else set())
        if self.test_format not in formats:
            raise ValueError(f"{self.language} supports the formats {sorted(formats)}")
        want = {"stdio": StdioTest, "function": FunctionTest, "assert": str}[self.test_format]
        if self.entry_point and self.test_format != "assert":
            raise ValueError("entry_point belongs to Python assert tests")
        if self.setup and not (
            self.test_format == "assert" or (self.test_format, self.language) == ("function", "python")
        ):
            raise ValueError("setup belongs to Python assert and function tests: stdio has no setup")
        if self.checker is not None and self.test_format != "stdio":
            raise ValueError("checker belongs to stdio tests: it judges a program's output")
        if self.interactor is not None and (self.test_format != "stdio" or self.checker is not None):
            raise ValueError("interactor belongs to stdio tests without a checker: it is the judge")
        self._check_files(lang)
        if want is str:
            if not isinstance(self.tests, str):
                raise ValueError("assert tests must be a string of assert statements")
            try:
                planned = plan_python_tests(self)
            except SyntaxError as exc:
                raise ValueError(f"the test code or setup does not parse: {exc}") from None
            if not planned:
                raise ValueError("assert tests contain no assert statement")
            for test in planned:
                if isinstance(test, ScriptTest):
                    continue  # judged by the tester: a trivial one is only left uncounted
                why = judge.trivial_failure(test) if test.trivial else None
                if why is not None:
                    raise ValueError(
                        f"the assert on line {test.line} involves no function of the program and fails "
                        f"whatever the program does: {why}"
                    )
            count = sum(not t.trivial for t in planned)
            if not count:
                raise ValueError(
                    "no assert involves the program: each uses only literals and builtins (like "
                    "`assert True`), so none tests it"
                )
        else:
            if not isinstance(self.tests, list) or not all(isinstance(t, want) for t in self.tests):
                raise ValueError(f"{self.test_format} tests must be a list of {want.__name__} objects")
            count = len(self.tests)
        if not 1 <= count <= MAX_TESTS:
            raise ValueError(f"between 1 and {MAX_TESTS} tests are needed")
        return self


def plan_python_tests(ref: CodeReference) -> list[judge.AssertTest] | list[ScriptTest]:
    """Python assert tests: judged by the host's assert evaluator when it can express every
    assert and the reference has no setup or entry point, else by the in-sandbox tester
    (referee.sandbox.script_format). Raises SyntaxError, or ValueError when nothing can be run."""
    assert isinstance(ref.tests, str)
    if not ref.setup and not ref.entry_point:
        try:
            return judge.plan_asserts(ref.tests)
        except judge.UnsupportedAssert:
            pass
    return plan_script(ref.tests, ref.setup, ref.entry_point)


class CodeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    time_limit_s: float | None = Field(default=None, gt=0, le=30, description="Wall clock per test.")
    memory_limit_mb: int | None = Field(default=None, ge=32, le=4096, description="Process tree.")
    output_limit_bytes: int | None = Field(
        default=None,
        ge=1024,
        le=MAX_OUTPUT_LIMIT,
        description="stdout cap per test (default: the service's, 1 MiB); a reference's own wins.",
    )
    reward: Literal["fraction", "binary"] = Field(
        default="binary", description="binary: 1.0 when every test passes, else 0.0; fraction: passed/total."
    )
    extract: Literal["auto", "none"] = Field(
        default="auto", description="auto: the last fenced block of the language, else the whole text."
    )
    time_limits: Literal["policy", "per_language"] = Field(
        default="policy",
        description=(
            "policy: every language gets time_limit_s; per_language: time_limit_s times the "
            "language's time factor (docs/verifiers/code.md, Per-language time limits)."
        ),
    )
    stdio_convention: StdioConvention = Field(
        default="policy",
        description=(
            "How stdout is compared. policy: trailing whitespace ignored, floats within 1e-6 where "
            "the expected token is a float; apps: as verl's APPS-derived checkers (lines stripped, "
            "blank lines dropped, numbers within 1e-8 + 1e-5*|expected|), without their "
            "any-order token-set fallback."
        ),
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    language: Language
    mode: str
    inputs: tuple[TestInput, ...]
    expected: tuple[Any, ...]  # stdio: str; function: JSON value; assert: judge.AssertTest
    output_limit_bytes: int | None = None  # the reference's own stdout cap
    largest_output: int = 0  # bytes of the largest expected stdout (what a correct program prints)
    setup: str | None = None  # function tests: run before the program (code_formats.with_setup)
    fn_names: tuple[str, ...] = ()
    checker: CheckerProgram | None = None  # stdio: judges each output (expected: CheckedAnswer)
    files: tuple[tuple[str, bytes], ...] = ()  # the problem's extra files (CodeReference.files)
    notes: dict[str, Any] = field(default_factory=dict)  # added to every verdict's details


def service_output_limit(resources: Resources | None) -> int:
    """The service's stdout cap per test: its sandbox's (`sandbox.stdout_limit_bytes`,
    REFEREE_SANDBOX_STDOUT_LIMIT_BYTES), the one `check_group` will run under; without a
    sandbox, the default (such a request's verdict is an error anyway)."""
    if resources is not None and resources.sandbox is not None:
        return resources.sandbox.settings.stdout_limit_bytes
    return int(SandboxSettings.model_fields["stdout_limit_bytes"].default)


def largest_expected_output(reference: CodeReference) -> tuple[int, int]:
    """(bytes, 1-based test number) of the largest expected stdout, without trailing whitespace
    (which the judge ignores); (0, 0) for the function and assert formats."""
    if (
        reference.test_format != "stdio"
        or not isinstance(reference.tests, list)
        or reference.checker
        or reference.interactor
    ):
        return 0, 0  # with a checker, the expected output is its answer, not what is printed
    best = (0, 0)
    for i, test in enumerate(reference.tests, 1):
        if isinstance(test, StdioTest) and 4 * len(test.output) > best[0]:  # <= 4 bytes a char
            size = judge.stdio_bytes(test.output)
            if size > best[0]:
                best = (size, i)
    return best


def output_limit(reference: CodeReference, options: CodeOptions) -> int | None:
    """The stdout cap a reference's tests run under; None: the service's."""
    return reference.output_limit_bytes or options.output_limit_bytes


def extract_program(response: str, language: Language, how: str) -> str:
    if how == "none":
        return response
    text = extract.final_part(response)
    text = response if text is None else text
    blocks = extract.fenced_blocks(text)
    for tags in (language.fence_tags, ("",)):
        for tag, code in reversed(blocks):
            if tag in tags:
                return code
    # A block tagged as something else (```c for a C++ task) beats prose that cannot compile.
    return blocks[-1][1] if blocks else text


def _memory_error(run: TestRun, language: Language) -> bool:
    """The program died of its language's out-of-memory failure: the final stderr line is the
    uncaught error's own (not just any mention of it) and the process ended as that failure does."""
    if language.memory_error_line is None:
        return False
    if language.memory_error_signal is not None:
        if run.signal != language.memory_error_signal:
            return False
    elif run.status != "exited" or run.exit_code != language.memory_error_exit_code:
        return False
    lines = [line.rstrip() for line in run.stderr[-4096:].splitlines() if line.strip()]
    trace = language.memory_error_trace
    while trace is not None and lines and re.fullmatch(trace, lines[-1]) is not None:
        lines.pop()
    if not lines or re.fullmatch(language.memory_error_line, lines[-1]) is None:
        return False
    header = language.memory_error_after
    return header is None or any(line.startswith(header) for line in lines[:-1])


def _cpu_limit_kill(run: TestRun) -> bool:
    """SIGXCPU sent by the kernel at the CPU-time limit, not by the program to itself."""
    if run.signal != signal.SIGXCPU or run.cpu_s is None or run.cpu_limit_s is None:
        return False
    return run.cpu_s >= run.cpu_limit_s - 0.05


def classify(
    run: TestRun | None, language: Language, mode: str, expected: Any, convention: StdioConvention = "policy"
) -> Judgement:
    """The verdict of one test from how its process ended and what it produced."""
    if run is None:
        return "runtime_error", "the test did not run"
    if run.status == "lost":
        return "runtime_error", run.note
    if run.status == "starved":  # no verdict: _run_program makes the response an error
        return "runtime_error", STARVED
    # Over the memory limit first: a memory hog that also ran out of time (paging, a
    # collector thrashing near its heap limit) was over the limit all the same.
    if run.memory_exceeded:
        peak = max(p for p in (run.max_rss_kb, run.tree_peak_kb, 0) if p is not None)
        return "memory_limit_exceeded", f"peak memory {peak // 1024} MB" if peak else "killed out of memory"
    if run.status == "timeout":
        return "time_limit_exceeded", None
    if run.status == "output_limit":
        return "output_limit_exceeded", None
    if run.status == "result_limit":
        return "output_limit_exceeded", "the function's result is larger than the result channel's cap"
    failed = run.status == "signaled" or run.exit_code != 0
    if isinstance(expected, CheckedAnswer) and expected.interactive:
        # The interactor's verdict first: a program it stopped answering dies of its closed
        # pipe (SIGPIPE) or of reading EOF, and that is the wrong answer it was.
        outcome = checker_outcome(run.checker)
        if not outcome.accepted:
            return "wrong_answer", f"interactor: {outcome.failure or outcome.message}"
    if failed:
        if run.oom or _memory_error(run, language):
            return "memory_limit_exceeded", None
        if _cpu_limit_kill(run):
            return "time_limit_exceeded", None
        if run.signal is not None:
            return "runtime_error", f"killed by {signal.Signals(run.signal).name}"
        return "runtime_error", f"exit status {run.exit_code}"
    if isinstance(expected, CheckedAnswer):  # a failed checker makes the response an error instead
        outcome = checker_outcome(run.checker, expected.convention)
        if outcome.accepted:
            return "accepted", None
        return (
            "wrong_answer",
            f"{'interactor' if expected.interactive else 'checker'}: {outcome.failure or outcome.message}",
        )
    if mode == "stdio":
        ok, reason = judge.compare_stdio(run.stdout, expected, convention=convention)
        return ("accepted", None) if ok else ("wrong_answer", reason)
    payload = judge.parse_payload(run.result)
    if mode == "assert":
        return judge.judge_assert(expected, payload)
    if mode == "script":
        return judge_script(expected, payload)
    if not isinstance(payload, dict):
        return "wrong_answer", "the program exited before the function was called"
    if not payload.get("ok"):
        return "wrong_answer", f"return value is not plain JSON: {str(payload.get('error'))[:200]}"
    try:
        equal = judge.values_equal(payload.get("value"), expected)
    except RecursionError:
        return "wrong_answer", "the return value is nested too deeply"
    if equal:
        return "accepted", None
    return "wrong_answer", f"returned {json.dumps(payload.get('value'))[:120]}"


def _failed_before_starving(run: RunResult, prep: Prepared, options: CodeOptions) -> bool:
    """True when a test that ran to its own end (not starved, not lost) failed: under the
    binary reward the program's 0 does not depend on the tests the node kept from a CPU."""
    for test_run, expected in zip(run.tests, prep.expected, strict=True):
        if test_run is None or test_run.status in ("starved", "lost"):
            continue
        if test_run.verdict is not None:
            verdict = test_run.verdict[0]
        else:
            verdict = classify_safely(test_run, prep.language, prep.mode, expected, options.stdio_convention)[
                0
            ]
        if verdict != "accepted":
            return True
    return False


def classify_safely(
    run: TestRun | None, language: Language, mode: str, expected: Any, convention: StdioConvention = "policy"
) -> Judgement:
    """classify(), never raising: whatever the candidate produced only decides its own test."""
    try:
        return classify(run, language, mode, expected, convention)
    except Exception as exc:
        return "runtime_error", f"the judge could not evaluate the result: {type(exc).__name__}"


def _partial_credit(
    run: RunResult, prep: Prepared, verdicts: list[TestVerdict], per_test: list[dict[str, Any]]
) -> float:
    """The points a checker gave the tests it did not accept (testlib's `points`, in [0, 1]),
    noted in their entries; 0 without a checker."""
    total = 0.0
    if prep.checker is None or not run.compile_ok:
        return total
    for test_run, expected, verdict, entry in zip(run.tests, prep.expected, verdicts, per_test, strict=True):
        if verdict == "accepted" or test_run is None or test_run.checker is None:
            continue
        credit = checker_outcome(test_run.checker, expected.convention).credit
        if credit > 0:
            entry["points"] = credit
            total += credit
    return total


def checker_failure(run: RunResult, prep: Prepared) -> str | None:
    """Why the problem's checker gave no verdict on some test (it failed, timed out, did not
    compile), or None: such a response is an error, whatever its other tests did."""
    if prep.checker is None:
        return None
    for index, (test_run, expected) in enumerate(zip(run.tests, prep.expected, strict=True), 1):
        if test_run is not None and test_run.checker is not None:
            failure = checker_outcome(test_run.checker, expected.convention).failure
            if failure is not None:
                return f"test {index}: {failure}"
    return None


def _shown(data: bytes) -> str:
    text = data[:SHOWN_BYTES].decode("utf-8", "replace")
    return text + ("…" if len(data) > SHOWN_BYTES else "")


def _shared(result: Check | VerifierError, source_index: int, index: int) -> Check | VerifierError:
    """Response `index`'s verdict when it is the same program as response `source_index`."""
    if index == source_index or not isinstance(result, Check):
        return result
    return Check(
        result.score, reason=result.reason, details={**result.details, "same_program_as": source_index}
    )


class CodeVerifier(AsyncVerifier):
    name: ClassVar[str] = "code"
    version: ClassVar[str] = "1"
    description: ClassVar[str] = (
        "Runs the program (Python, C, C++, Java, JavaScript, Go, Rust) against stdio tests (Python also "
        "function/assert tests, JavaScript function tests) in a hardened Docker "
        "sandbox; score = 1 if every test passes, else 0 (reward=fraction: passed/total); "
        "details.verdict is the first failing test's, details.passed/total the counts."
    )
    reference_type: ClassVar[Any] = CodeReference
    options_model: ClassVar[type[BaseModel]] = CodeOptions
    lane: ClassVar[Lane] = "sandbox"
    # Each test has the pool's host-side deadline (limits + slack), getting a container has
    # acquire_timeout_s, and admission bounds the queue: no 600-s budget over all of that.
    bounds_itself: ClassVar[bool] = True
    example: ClassVar[dict[str, Any]] = {
        "response": "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
        "reference": {
            "language": "python",
            "test_format": "stdio",
            "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "-5 5\n", "output": "0\n"}],
        },
        "expected_score": 1.0,
    }

    @classmethod
    def validate_inputs(cls, reference: Any, options: Any, resources: Resources | None = None) -> None:
        """A problem whose own expected output exceeds the stdout cap it would run under is
        refused (422): every correct program would be judged output_limit_exceeded."""
        ref = reference if isinstance(reference, CodeReference) else CodeReference.model_validate(reference)
        opts = options if isinstance(options, CodeOptions) else CodeOptions.model_validate(options or {})
        size, test = largest_expected_output(ref)
        if not size:
            return
        cap = output_limit(ref, opts) or service_output_limit(resources)
        if size > cap:
            raise ValueError(
                f"the expected output of test {test} is {size} bytes, more than the {cap}-byte stdout "
                f"cap it would run under: set output_limit_bytes (in the reference or the options, "
                f"at most {MAX_OUTPUT_LIMIT})"
            )

    def prepare(self, reference: Any, options: Any) -> Prepared:
        ref = reference if isinstance(reference, CodeReference) else CodeReference.model_validate(reference)
        prepared = self._prepare_tests(ref)
        if ref.files:
            files = tuple(
                (name, text.encode("utf-8", "surrogatepass")) for name, text in sorted(ref.files.items())
            )
            prepared = replace(prepared, files=files)
        return prepared

    def _prepare_tests(self, ref: CodeReference) -> Prepared:
        lang = LANGUAGES[ref.language]
        if ref.test_format == "assert":
            planned = plan_python_tests(ref)
            skipped = [t.line for t in planned if t.trivial]
            notes: dict[str, Any] = {"not_counted": {"lines": skipped, "why": NOT_COUNTED}} if skipped else {}
            scripts = [t for t in planned if isinstance(t, ScriptTest) and not t.trivial]
            if scripts:
                specs = (json.dumps(t.spec(ref.setup, ref.entry_point)).encode() for t in scripts)
                notes["judged_by"] = "tester"  # a trusted process in the sandbox (sandbox/scripts.py)
                inputs = tuple(TestInput(spec=spec) for spec in specs)
                return Prepared(lang, "script", inputs, tuple(scripts), ref.output_limit_bytes, notes=notes)
            counted = [t for t in planned if isinstance(t, judge.AssertTest) and not t.trivial]
            inputs = tuple(
                TestInput(
                    spec=json.dumps({"mode": "assert", "setup": t.setup, "exprs": list(t.exprs)}).encode()
                )
                for t in counted
            )
            return Prepared(lang, "assert", inputs, tuple(counted), ref.output_limit_bytes, notes=notes)
        if ref.test_format == "function":
            ftests = [t for t in ref.tests if isinstance(t, FunctionTest)]
            inputs = tuple(
                TestInput(
                    spec=json.dumps({"mode": "function", "fn_name": t.fn_name, "args": t.args}).encode()
                )
                for t in ftests
            )
            return Prepared(
                lang,
                "function",
                inputs,
                tuple(t.expected for t in ftests),
                ref.output_limit_bytes,
                setup=ref.setup,
                fn_names=tuple(sorted({t.fn_name for t in ftests})),
            )
        stests = [t for t in ref.tests if isinstance(t, StdioTest)]
        if ref.interactor is not None:  # each test's input and output are the interactor's files
            source = ref.interactor.source.encode("utf-8", "surrogatepass")
            return Prepared(
                lang,
                "stdio",
                tuple(TestInput(stdin=t.input.encode(), answer=t.output.encode()) for t in stests),
                tuple(CheckedAnswer(t.output, interactive=True) for t in stests),
                ref.output_limit_bytes,
                checker=CheckerProgram(ref.interactor.language, source, interactive=True),
                notes={"judged_by": f"interactor ({ref.interactor.language})"},
            )
        if ref.checker is not None:
            spec = ref.checker
            checker = CheckerProgram(
                spec.language, spec.source.encode("utf-8", "surrogatepass"), spec.convention
            )
            return Prepared(
                lang,
                "stdio",
                tuple(TestInput(stdin=t.input.encode(), answer=t.output.encode()) for t in stests),
                tuple(CheckedAnswer(t.output, spec.convention) for t in stests),
                ref.output_limit_bytes,
                checker=checker,
                notes={"judged_by": f"checker ({spec.language}, {spec.convention})"},
            )
        return Prepared(
            lang,
            "stdio",
            tuple(TestInput(stdin=t.input.encode()) for t in stests),
            tuple(t.output for t in stests),
            ref.output_limit_bytes,
            largest_expected_output(ref)[0],
        )

    def _limits(self, pool: CodeSandbox, prep: Prepared, options: CodeOptions) -> Limits:
        base = Limits.from_settings(pool.settings)
        limits = Limits(
            time_s=options.time_limit_s or base.time_s,
            memory_mb=options.memory_limit_mb or base.memory_mb,
            stdout_bytes=prep.output_limit_bytes or options.output_limit_bytes or base.stdout_bytes,
            stderr_bytes=base.stderr_bytes,
            compile_timeout_s=base.compile_timeout_s,
            open_files=base.open_files,
            file_size_mb=base.file_size_mb,
            result_bytes=base.result_bytes,
        )
        return for_language(limits, prep.language) if options.time_limits == "per_language" else limits

    def _check(
        self, run: RunResult, prep: Prepared, options: CodeOptions, limits: Limits | None = None
    ) -> Check:
        total = len(prep.inputs)
        per_test: list[dict[str, Any]] = []
        verdicts: list[TestVerdict]
        if not run.compile_ok:
            verdicts = ["compile_error"] * total
            per_test = [{"verdict": "compile_error"} for _ in range(total)]
        else:
            verdicts = []
            for test_run, expected in zip(run.tests, prep.expected, strict=True):
                if test_run is not None and test_run.verdict is not None:
                    verdict, why = test_run.verdict  # judged by the pool as the test arrived
                else:
                    verdict, why = classify_safely(
                        test_run, prep.language, prep.mode, expected, options.stdio_convention
                    )
                verdicts.append(verdict)
                entry: dict[str, Any] = {"verdict": verdict}
                if why:
                    entry["reason"] = why
                if test_run is not None:
                    entry.update(
                        time_ms=round(test_run.time_s * 1000, 1),
                        memory_kb=test_run.max_rss_kb,
                        stdout=_shown(test_run.stdout),
                        stderr=_shown(test_run.stderr[-SHOWN_BYTES:]),
                    )
                per_test.append(entry)
        passed = verdicts.count("accepted")
        first_fail: TestVerdict = next((v for v in verdicts if v != "accepted"), "accepted")
        credit = passed + _partial_credit(run, prep, verdicts, per_test)
        score = credit / total if options.reward == "fraction" else float(passed == total)
        details: dict[str, Any] = {
            "verdict": first_fail,
            "passed": passed,
            "total": total,
            "language": prep.language.name,
            "test_format": prep.mode,
            "compile": {
                "ok": run.compile_ok,
                "time_ms": round(run.compile_time_s * 1000, 1),
                "cached": run.compile_cached,  # from the compile cache: not compiled again
            },
            "tests": per_test,
            **prep.notes,
        }
        if limits is not None:  # the effective one: per_language scales it
            details["time_limit_s"] = limits.time_s
        if not run.compile_ok:
            details["compile"]["output"] = run.compile_output[-2000:]
        reason = None if first_fail == "accepted" else f"{first_fail}: {passed}/{total} tests passed"
        return Check(score, reason=reason, details=details)

    async def _run_program(
        self, pool: CodeSandbox, program: str, prep: Prepared, options: CodeOptions
    ) -> Check | VerifierError:
        if prep.setup is not None:
            program = code_formats.with_setup(prep.setup, program, list(prep.fn_names))
        if prep.files:  # the problem's source files of the language are compiled with the program
            prep = replace(prep, language=with_extra_sources(prep.language, [name for name, _ in prep.files]))
        if prep.mode == "function" and supports_functions(prep.language):
            # A typed language's function tests: the program and its harness, compiled together.
            program = with_harness(prep.language.name, program, list(prep.fn_names))
            prep = replace(prep, language=function_language(prep.language))
        source = program.encode("utf-8", "surrogatepass")
        if len(source) > pool.settings.max_source_bytes:
            return Check(
                0.0,
                reason="program too large",
                details={"verdict": "compile_error", "passed": 0, "total": len(prep.inputs), **prep.notes},
            )
        limits = self._limits(pool, prep, options)
        if prep.largest_output > limits.stdout_bytes:  # validated against another service cap
            return VerifierError(
                f"an expected output ({prep.largest_output} bytes) exceeds the {limits.stdout_bytes}-byte "
                "stdout cap: set output_limit_bytes"
            )

        def judge_one(index: int, test_run: TestRun) -> Judgement:
            return classify_safely(
                test_run, prep.language, prep.mode, prep.expected[index], options.stdio_convention
            )

        job = Job(
            prep.language,
            prep.mode,
            source,
            prep.inputs,
            limits,
            judge=judge_one,
            checker=prep.checker,
            files=prep.files,
        )
        retries = pool.settings.starved_retries
        for attempt in range(retries + 1):
            if attempt:  # a starved run says the node is saturated now: give it a moment
                await asyncio.sleep(STARVED_PAUSE_S * attempt)
            try:
                run = await pool.run(job)
            except SandboxUnavailable as exc:
                return VerifierError(f"code sandbox unavailable: {exc}")
            failure = checker_failure(run, prep)
            if failure is not None:  # the problem's checker, not the program: no verdict
                judge_name = (
                    "interactor" if prep.checker is not None and prep.checker.interactive else "checker"
                )
                return VerifierError(f"the problem's {judge_name} failed on {failure}"[:500])
            if not any(test is not None and test.status == "starved" for test in run.tests):
                return await asyncio.to_thread(self._check, run, prep, options, limits)
            if options.reward == "binary" and await asyncio.to_thread(
                _failed_before_starving, run, prep, options
            ):
                # Its 0 is decided by a test it did run: masking it would spare a wrong or
                # too slow program its negative advantage whenever the node is busy.
                return await asyncio.to_thread(self._check, run, prep, options, limits)
        return VerifierError(f"code sandbox overloaded: {STARVED} ({retries + 1} runs)")

    async def check_group(
        self, responses: Sequence[str], prepared: Any, options: Any, resources: Resources
    ) -> list[Check | VerifierError]:
        pool = resources.sandbox
        if pool is None:
            raise VerifierError("code sandbox is not configured in this service")
        healthy, why = pool.health()
        if not healthy:
            raise VerifierError(f"code sandbox unavailable: {why}")
        opts = options if isinstance(options, CodeOptions) else CodeOptions.model_validate(options or {})
        # Identical programs in a group (common once a policy converges) run once and share
        # the verdict: the same source on the same tests is the same sample of its behaviour,
        # and the group's advantages stay consistent (equal responses, equal rewards).
        programs = [extract_program(r, prepared.language, opts.extract) for r in responses]
        first = {program: i for i, program in reversed(list(enumerate(programs)))}
        unique = sorted(set(first.values()))
        results = await asyncio.gather(
            *(self._run_program(pool, programs[i], prepared, opts) for i in unique), return_exceptions=True
        )
        # One response's failure never touches another's verdict.
        by_index = {
            i: r
            if isinstance(r, Check | VerifierError)
            else VerifierError(f"code judge failed: {type(r).__name__}: {r}"[:300])
            for i, r in zip(unique, results, strict=True)
        }
        return [_shared(by_index[first[p]], first[p], i) for i, p in enumerate(programs)]


VERIFIERS: list[type[Verifier]] = [CodeVerifier]
