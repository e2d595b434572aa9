"""The language table without Docker: fence tags name one language each, every language is
documented with its time factor, and the factor scales a test's time limit and nothing else."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from referee.sandbox.languages import LANGUAGES, image_packages
from referee.sandbox.run_limits import Limits, for_language, host_wait_s
from referee.sandbox.settings import SandboxSettings
from referee.verifiers.code import CodeOptions, CodeVerifier, extract_program

DOC = Path(__file__).resolve().parents[2] / "docs" / "verifiers" / "code.md"
LIMITS = Limits(time_s=2.0, memory_mb=256, stdout_bytes=1 << 20, stderr_bytes=1 << 16, compile_timeout_s=10.0)


def documented_languages() -> dict[str, list[str]]:
    """The rows of the Languages table in docs/verifiers/code.md: name -> its cells."""
    text = DOC.read_text()
    section = text.split("## Languages\n", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `([a-z]+)` \|", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in line.strip("|").split("|")]
    return rows


def test_every_fence_tag_names_one_language() -> None:
    tags = Counter(tag for lang in LANGUAGES.values() for tag in lang.fence_tags)
    assert [tag for tag, n in tags.items() if n > 1] == []
    assert all(tag == tag.lower() and tag.strip() == tag and tag for tag in tags)


def test_every_language_is_documented_with_its_tags_and_time_factor() -> None:
    rows = documented_languages()
    assert sorted(rows) == sorted(LANGUAGES)
    for name, lang in LANGUAGES.items():
        tags, factor = rows[name][1].split(), rows[name][-1]
        assert tags == list(lang.fence_tags), name
        assert float(factor) == lang.time_factor, name


def test_every_language_is_accepted_by_the_code_verifier() -> None:
    for name in LANGUAGES:
        reference = CodeVerifier().validate_reference(
            {"language": name, "tests": [{"input": "", "output": "1"}]}
        )
        assert reference.language == name


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_the_program_is_the_last_block_fenced_with_a_tag_of_its_language(name: str) -> None:
    lang = LANGUAGES[name]
    other = next(tag for other in LANGUAGES.values() if other is not lang for tag in other.fence_tags)
    response = f"```{lang.fence_tags[-1]}\nfirst\n```\n```{other}\nnot this one\n```\n```{lang.fence_tags[0]}\nlast\n```\n"
    assert extract_program(response, lang, "auto").strip() == "last"


def test_every_language_compiles_or_checks_its_own_source_file() -> None:
    """An interpreted language's syntax check names the source file too (else a syntax error
    would only show when the first test runs), except TypeScript's, whose script reads it."""
    for name, lang in LANGUAGES.items():
        assert lang.compile is not None, name
        command = " ".join(lang.compile)
        assert lang.source_file in command, name
        assert set(lang.packages) <= set(image_packages()), name


def test_time_factors_are_tiers_of_at_least_one() -> None:
    assert {lang.time_factor for lang in LANGUAGES.values()} <= {1.0, 2.0, 3.0, 5.0}
    assert LANGUAGES["cpp"].time_factor == LANGUAGES["c"].time_factor == 1.0
    # slower runtimes never get less time than faster ones of the same program
    assert (
        LANGUAGES["python"].time_factor
        >= LANGUAGES["javascript"].time_factor
        >= LANGUAGES["java"].time_factor
    )


def test_for_language_scales_the_test_time_limit_only() -> None:
    python = for_language(LIMITS, LANGUAGES["python"])
    assert python == replace(LIMITS, time_s=10.0)
    assert python.compile_timeout_s == LIMITS.compile_timeout_s  # compilers are no slower
    assert for_language(LIMITS, LANGUAGES["cpp"]) is LIMITS
    # the host waits for the scaled limit too: a slow language's last test is not cut short
    assert host_wait_s(python, 3) - host_wait_s(LIMITS, 3) == pytest.approx(3 * 8.0)


@pytest.mark.parametrize("name", ["python", "cpp", "kotlin"])
def test_the_code_verifier_scales_the_limit_only_when_asked(name: str) -> None:
    """`time_limits: per_language` gives the language's factor times the limit; the default
    keeps the policy's single limit for every language."""
    verifier = CodeVerifier()
    reference = verifier.validate_reference({"language": name, "tests": [{"input": "", "output": "1"}]})
    pool = SimpleNamespace(settings=SandboxSettings(time_limit_s=2.0))
    for options, want in [
        (CodeOptions(), 2.0),
        (CodeOptions(time_limit_s=1.5), 1.5),
        (CodeOptions(time_limits="per_language"), 2.0 * LANGUAGES[name].time_factor),
        (CodeOptions(time_limit_s=1.5, time_limits="per_language"), 1.5 * LANGUAGES[name].time_factor),
    ]:
        prepared = verifier.prepare(reference, options)
        assert verifier._limits(pool, prepared, options).time_s == want  # type: ignore[arg-type]
