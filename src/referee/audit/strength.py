"""Code test-suite strength: do a problem's tests tell right programs from wrong ones?

Per problem with a reference solution: the reference must pass every test (else the problem is
*broken*); trivial programs (empty, constant outputs, the most frequent expected output, echo
of the input) and mutants of the reference (`mutate.py`) run in the sandbox through the `code`
verifier. A problem is flagged *weak tests* when a trivial program passes or when more than
`max_survival` of its mutants pass every test. Some mutants are equivalent to the reference
(no test could kill them), so a survival share above 0 is not by itself a defect.
"""

from __future__ import annotations

import ast
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from referee.audit.backend import ScoreGroups
from referee.audit.data import LabelledFileError
from referee.audit.mutate import mutants
from referee.models import GroupSpec

MAX_SURVIVAL = 0.25
MAX_MUTANTS = 25


@dataclass(frozen=True, slots=True)
class Problem:
    id: str
    reference: Any  # a `code` reference in any accepted form
    solution: str  # the reference program
    language: str = "python"


@dataclass(frozen=True, slots=True)
class _Shape:
    """What trivial programs need to know about a problem's tests."""

    format: str  # stdio | function | assert
    functions: tuple[str, ...]  # names the tests call (function/assert)
    expected: tuple[Any, ...]  # expected outputs or return values, as the tests give them


class ProgramResult(BaseModel):
    name: str
    kind: str  # reference | trivial | mutant
    passed: bool
    score: float | None
    status: str
    verdict: str | None = None
    tests_passed: int | None = None
    tests_total: int | None = None
    description: str = ""


class ProblemStrength(BaseModel):
    id: str
    format: str
    language: str
    tests: int | None
    broken: bool
    reference_verdict: str | None
    trivial_passing: list[str]
    mutants: int
    killed: int
    kill_rate: float | None
    surviving: list[str]
    weak: bool
    why: list[str]
    programs: list[ProgramResult]


class StrengthReport(BaseModel):
    source: str
    created: str
    max_survival: float
    problems: list[ProblemStrength]
    wall_s: float

    @property
    def weak(self) -> list[str]:
        return [p.id for p in self.problems if p.weak]

    @property
    def broken(self) -> list[str]:
        return [p.id for p in self.problems if p.broken]

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


# ---- reading problems ---------------------------------------------------------------------


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def problems_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Problems from rows of any of these shapes:

    - `{"id", "reference", "solution"}`: a `code` reference and its reference program;
    - HumanEval (`prompt`, `test`, `entry_point`, `canonical_solution`), MBPP (`test_list`, `code`);
    - APPS/TACO (`input_output` JSON, `solutions` list or JSON text);
    - the project's code dev set (`tests`, `candidate`, `expected_verdict`): rows share a problem
      when their ids share the part before `__`; its reference program is an accepted
      candidate, Python first.
    """
    problems: list[Problem] = []
    devset: dict[str, list[Mapping[str, Any]]] = {}
    for index, row in enumerate(rows):
        rid = str(row.get("id", row.get("task_id", index)))
        if "solution" in row and "reference" in row:
            ref = _decode(row["reference"])
            language = ref.get("language", "python") if isinstance(ref, dict) else "python"
            problems.append(Problem(rid, ref, row["solution"], language))
        elif {"canonical_solution", "entry_point", "test"} <= row.keys():
            problems.append(Problem(rid, dict(row), row.get("prompt", "") + row["canonical_solution"]))
        elif "test_list" in row and "code" in row:
            problems.append(Problem(rid, dict(row), row["code"]))
        elif "input_output" in row and row.get("solutions"):
            solutions = _decode(row["solutions"])
            first = solutions[0] if isinstance(solutions, list) else solutions
            problems.append(Problem(rid, _decode(row["input_output"]), first))
        elif "tests" in row and "candidate" in row:
            devset.setdefault(rid.split("__")[0], []).append(row)
    for key, group in devset.items():
        accepted = [r for r in group if r.get("expected_verdict") == "accepted"]
        if not accepted:
            continue
        best = min(accepted, key=lambda r: (r.get("language") != "python", r.get("category") != "correct"))
        ref = {k: best[k] for k in ("language", "test_format", "tests") if k in best}
        problems.append(Problem(key, ref, best["candidate"], best.get("language", "python")))
    return problems


def load_problems(path: str | Path) -> list[Problem]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise LabelledFileError(f"{path}:{number}: {exc}") from None
        if isinstance(row, dict) and "_policy" not in row:
            rows.append(row)
    problems = problems_from_rows(rows)
    if not problems:
        raise LabelledFileError(f"{path}: no code problem with a reference solution")
    return problems


# ---- trivial programs -----------------------------------------------------------------------


def _called_names(test_code: str) -> list[str]:
    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in names:
            names.append(node.func.id)
    return names


def _assert_expectations(test_code: str) -> list[Any]:
    """The literal side of `assert f(...) == LITERAL` lines."""
    values: list[Any] = []
    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return values
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            for side in (node.comparators[0], node.left):
                try:
                    values.append(ast.literal_eval(side))
                    break
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
    return values


def _defined(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def shape(problem: Problem) -> _Shape:
    ref = problem.reference
    if not isinstance(ref, dict):
        ref = _decode(ref)
    if isinstance(ref, dict) and "inputs" in ref and "outputs" in ref:  # APPS/TACO form
        outputs = [o[0] if isinstance(o, list) and len(o) == 1 else o for o in ref["outputs"]]
        if ref.get("fn_name"):
            return _Shape("function", (ref["fn_name"],), tuple(outputs))
        texts = ["\n".join(map(str, o)) if isinstance(o, list) else str(o) for o in outputs]
        return _Shape("stdio", (), tuple(texts))
    if isinstance(ref, dict) and "entry_point" in ref and "test" in ref:  # HumanEval
        return _Shape("assert", (ref["entry_point"],), ())
    if isinstance(ref, dict) and "test_list" in ref:  # MBPP
        code = "\n".join(ref["test_list"])
        called = [n for n in _called_names(code) if n in _defined(problem.solution)] or _defined(
            problem.solution
        )
        return _Shape("assert", tuple(called), tuple(_assert_expectations(code)))
    fmt = ref.get("test_format", "stdio")
    tests = ref.get("tests")
    if fmt == "function":
        return _Shape(
            "function",
            tuple(dict.fromkeys(t["fn_name"] for t in tests)),
            tuple(t.get("expected") for t in tests),
        )
    if fmt == "assert":
        names = (ref.get("entry_point") and [ref["entry_point"]]) or []
        called = [n for n in _called_names(tests) if n in _defined(problem.solution)]
        return _Shape(
            "assert", tuple(names or called or _defined(problem.solution)), tuple(_assert_expectations(tests))
        )
    return _Shape("stdio", (), tuple(str(t.get("output", "")) for t in tests))


def _most_frequent(values: Sequence[Any]) -> Any:
    counts = Counter(json.dumps(v, sort_keys=True) for v in values)
    if not counts:
        return None
    text, _ = counts.most_common(1)[0]
    return json.loads(text)


CONSTANTS: tuple[Any, ...] = (None, 0, 1, -1, True, False, "", [])
STDIO_CONSTANTS = ("0", "1", "-1", "YES", "NO")


def trivial_programs(problem: Problem) -> list[tuple[str, str]]:
    """(name, Python program) pairs that a sound test suite must all reject."""
    s = shape(problem)
    programs: list[tuple[str, str]] = [("empty", "")]
    if s.format == "stdio":
        programs += [(f"prints {c}", f"print({c!r})\n") for c in STDIO_CONSTANTS]
        if s.expected:
            frequent = _most_frequent(list(s.expected))
            programs.append(
                ("prints the most frequent output", f"import sys\nsys.stdout.write({frequent!r})\n")
            )
        programs.append(("echoes the input", "import sys\nsys.stdout.write(sys.stdin.read())\n"))
        return programs

    def returning(expr: str) -> str:
        return "".join(f"def {name}(*args, **kwargs):\n    return {expr}\n" for name in s.functions)

    if not s.functions:
        return programs
    programs += [(f"returns {c!r}", returning(repr(c))) for c in CONSTANTS]
    if s.expected:
        frequent = _most_frequent(list(s.expected))
        if repr(frequent) not in {repr(c) for c in CONSTANTS}:
            programs.append(("returns the most frequent expected value", returning(repr(frequent))))
    programs.append(("echoes its first argument", returning("args[0] if args else None")))
    return programs


# ---- running ------------------------------------------------------------------------------


def _python_reference(problem: Problem) -> Any:
    """The reference with Python as the candidates' language (trivial programs and mutants
    are Python; a stdio problem's tests do not depend on the language)."""
    ref = problem.reference
    if isinstance(ref, dict) and "tests" in ref and ref.get("language", "python") != "python":
        return {**ref, "language": "python"}
    return ref


async def _judge(
    score_groups: ScoreGroups, reference: Any, programs: Sequence[str], options: Mapping[str, Any]
) -> list[tuple[float | None, str, dict[str, Any], str | None]]:
    [result] = await score_groups(
        [GroupSpec(verifier="code", reference=reference, responses=list(programs), options=dict(options))]
    )
    return [(v.score, v.status.value, v.details, v.reason) for v in result.verdicts]


def _result(
    name: str, kind: str, outcome: tuple[float | None, str, dict[str, Any], str | None], description: str = ""
) -> ProgramResult:
    score, status, details, reason = outcome
    return ProgramResult(
        name=name,
        kind=kind,
        passed=status == "ok" and score is not None and score >= 1.0 - 1e-9,
        score=score,
        status=status,
        verdict=details.get("verdict") if status == "ok" else (reason or "error")[:200],
        tests_passed=details.get("passed"),
        tests_total=details.get("total"),
        description=description,
    )


async def assess_problem(
    problem: Problem,
    score_groups: ScoreGroups,
    *,
    max_survival: float = MAX_SURVIVAL,
    max_mutants: int = MAX_MUTANTS,
    options: Mapping[str, Any] | None = None,
) -> ProblemStrength:
    # Programs go in as they are (no fenced-block extraction): a reference may hold backticks.
    opts = {"reward": "binary", **(options or {}), "extract": "none"}
    s = shape(problem)
    reference = problem.reference
    [ref_outcome] = await _judge(score_groups, reference, [problem.solution], opts)
    ref_result = _result("reference", "reference", ref_outcome)
    programs = [ref_result]
    why: list[str] = []
    if ref_result.status != "ok":  # no verdict (the sandbox failed): nothing can be said
        why.append(f"no verdict on the reference solution: {ref_result.verdict}")
    broken = ref_result.status == "ok" and not ref_result.passed
    if broken:
        why.append(f"the reference solution does not pass its tests ({ref_result.verdict})")
    trivials = trivial_programs(problem)
    mutated = mutants(problem.solution, limit=max_mutants) if problem.language == "python" else []
    python_ref = _python_reference(problem)
    sources = [src for _, src in trivials] + [m.source for m in mutated]
    outcomes = await _judge(score_groups, python_ref, sources, opts) if sources else []
    trivial_results = [_result(name, "trivial", o) for (name, _), o in zip(trivials, outcomes, strict=False)]
    mutant_results = [
        _result(f"mutant {i + 1}", "mutant", o, f"line {m.line}: {m.operator} ({m.description})")
        for i, (m, o) in enumerate(zip(mutated, outcomes[len(trivials) :], strict=True))
    ]
    programs += trivial_results + mutant_results
    passing = [r.name for r in trivial_results if r.passed]
    judged = [r for r in mutant_results if r.status == "ok"]
    surviving = [r for r in judged if r.passed]
    kill_rate = (len(judged) - len(surviving)) / len(judged) if judged else None
    if passing:
        why.append("trivial programs pass: " + ", ".join(passing))
    if kill_rate is not None and 1.0 - kill_rate > max_survival:
        why.append(f"{len(surviving)}/{len(judged)} mutants survive (more than {max_survival:.0%})")
    tests = None
    if ref_result.tests_total is not None:
        tests = ref_result.tests_total
    return ProblemStrength(
        id=problem.id,
        format=s.format,
        language=problem.language,
        tests=tests,
        broken=broken,
        reference_verdict=ref_result.verdict,
        trivial_passing=passing,
        mutants=len(judged),
        killed=len(judged) - len(surviving),
        kill_rate=kill_rate,
        surviving=[f"{r.name}: {r.description}" for r in surviving],
        weak=bool(passing) or (kill_rate is not None and 1.0 - kill_rate > max_survival),
        why=why,
        programs=programs,
    )


async def run_strength(
    problems: Sequence[Problem],
    score_groups: ScoreGroups,
    *,
    progress: Callable[[int, int], None] | None = None,
    max_survival: float = MAX_SURVIVAL,
    max_mutants: int = MAX_MUTANTS,
    options: Mapping[str, Any] | None = None,
    source: str = "",
) -> StrengthReport:
    """Assess every problem, one after another; `progress(done, total)` after each."""
    from datetime import UTC, datetime

    start = time.perf_counter()
    results = []
    if progress is not None:
        progress(0, len(problems))
    for i, problem in enumerate(problems):
        results.append(
            await assess_problem(
                problem, score_groups, max_survival=max_survival, max_mutants=max_mutants, options=options
            )
        )
        if progress is not None:
            progress(i + 1, len(problems))
    return StrengthReport(
        source=source,
        created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        max_survival=max_survival,
        problems=results,
        wall_s=round(time.perf_counter() - start, 3),
    )
