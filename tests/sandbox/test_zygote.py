"""Python tests are forks of a warm template (zygote.py), not fresh interpreters: a program must
not be able to tell the difference that matters, and the template must hold nothing secret.

Each case is run twice in the same container: once forked from the template and once, for
comparison, spawned as `python3 -I -E sol.py` (a command the template does not take: `-E`
changes nothing under -I but is not a flag the template accepts). Both must agree.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from referee.sandbox import LANGUAGES, Job, Limits, SandboxPool, TestInput
from referee.sandbox.in_container.supervisor import ZYGOTE, zygote_eligible

pytestmark = pytest.mark.docker

PYTHON = LANGUAGES["python"]
# Spawned, not forked: same interpreter and flags, but an argv the template refuses.
SPAWNED = replace(PYTHON, run=("python3", "-I", "-E", "sol.py"))

PROBE = r"""
import json, os, signal, sys, threading, atexit
def parent_cmdline():
    ppid = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[1])
    try:
        return open(f'/proc/{ppid}/cmdline', 'rb').read().decode()
    except OSError as exc:
        return type(exc).__name__
facts = {
    "name": __name__, "argv": sys.argv, "isolated": sys.flags.isolated, "path0": sys.path[0],
    "file": __file__, "main_is_module": sys.modules['__main__'].__dict__ is globals(),
    "sigpipe": signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN,
    "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
    "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
    "stdin": [sys.stdin.encoding, sys.stdin.errors], "stdout": [sys.stdout.encoding, sys.stdout.errors],
    "stderr_line_buffering": sys.stderr.line_buffering, "stdout_tty": sys.stdout.isatty(),
    "cwd": os.getcwd(), "input": input(), "exit_builtin": callable(exit),
    "seekable": [sys.stdin.seekable(), sys.stdout.seekable(), sys.stderr.seekable()],
    "buffer_sizes": [s.buffer.raw._blksize for s in (sys.stdin, sys.stdout, sys.stderr)],
    "open_fds": sorted(os.listdir('/proc/self/fd')), "work_dir": sorted(os.listdir('.')),
    "environ": dict(os.environ),
    "parent": parent_cmdline(),
}
print(json.dumps(facts))
def late():
    print("atexit ran")
atexit.register(late)
threading.Thread(target=lambda: print("thread joined")).start()
sys.stdout.write("unflushed tail")
"""


def job(pool: SandboxPool, source: str, stdins: list[bytes], language: object = PYTHON) -> Job:
    tests = tuple(TestInput(stdin=s) for s in stdins)
    return Job(language, "stdio", source.encode(), tests, Limits.from_settings(pool.settings))  # type: ignore[arg-type]


def test_which_commands_the_template_runs() -> None:
    assert zygote_eligible(PYTHON.run) and zygote_eligible(PYTHON.harness or ())
    assert PYTHON.compile is not None and zygote_eligible(PYTHON.compile)
    assert not zygote_eligible(SPAWNED.run)
    assert not zygote_eligible(("python3", "sol.py"))  # not isolated: not what the template is
    assert not zygote_eligible(("./sol",)) and not zygote_eligible(("python3", "-I", "-m", "x"))


async def test_a_forked_program_sees_what_a_fresh_interpreter_shows(one_container: SandboxPool) -> None:
    forked = await one_container.run(job(one_container, PROBE, [b"hello\n"]))
    spawned = await one_container.run(job(one_container, PROBE, [b"hello\n"], SPAWNED))
    runs = {}
    for name, result in (("forked", forked), ("spawned", spawned)):
        [run] = result.tests
        assert run is not None and run.status == "exited" and run.exit_code == 0, (name, run)
        first, *rest = run.stdout.decode().split("\n", 1)
        runs[name] = json.loads(first), rest
    (facts, tail), (reference, reference_tail) = runs["forked"], runs["spawned"]
    assert facts["parent"] == "\x00".join(ZYGOTE) + "\x00"  # it really was forked
    assert reference["parent"] != facts["parent"]
    for key in facts:
        if key not in ("parent", "argv"):
            assert facts[key] == reference[key], key
    assert facts["argv"] == ["sol.py"] and facts["name"] == "__main__" and facts["input"] == "hello"
    # Shutdown as the interpreter does it: non-daemon threads, atexit, flushed stdout.
    assert sorted(tail[0].split("\n")) == sorted(reference_tail[0].split("\n"))
    assert "atexit ran" in tail[0] and "thread joined" in tail[0] and "unflushed tail" in tail[0]


@pytest.mark.parametrize(
    ("source", "exit_code", "stderr_end"),
    [
        ("raise ValueError('boom')\n", 1, b"ValueError: boom\n"),
        ("import sys\nsys.exit('bye')\n", 1, b"bye\n"),
        ("import sys\nsys.exit(3)\n", 3, b""),
        ("import os\nos._exit(4)\n", 4, b""),
        ("def f():\n    f()\nf()\n", 1, b"RecursionError: maximum recursion depth exceeded\n"),
    ],
)
async def test_exits_match_the_interpreter(
    one_container: SandboxPool, source: str, exit_code: int, stderr_end: bytes
) -> None:
    for language in (PYTHON, SPAWNED):
        [run] = (await one_container.run(job(one_container, source, [b""], language))).tests
        assert run is not None and run.status == "exited" and run.exit_code == exit_code, (language.run, run)
        assert run.stderr.endswith(stderr_end), (language.run, run.stderr)
        assert b"zygote" not in run.stderr  # the template's frames never show in a traceback


async def test_the_template_holds_no_test_and_tests_are_independent(one_container: SandboxPool) -> None:
    """Test k's input is nowhere in test k+1's memory, and per-process state (the random seed)
    is not shared by the forks."""
    source = (
        "import gc, random, sys\n"
        "mine = sys.stdin.read()\n"
        "seen = sorted({o for o in gc.get_objects() if isinstance(o, str) and o.startswith('SECRET-') and o != mine}\n"
        "              | {s for o in gc.get_objects() if isinstance(o, dict) for s in o.values()\n"
        "                 if isinstance(s, str) and s.startswith('SECRET-') and s != mine})\n"
        "print(seen, random.getrandbits(64))\n"
    )
    stdins = [f"SECRET-{i}".encode() for i in range(4)]
    result = await one_container.run(job(one_container, source, stdins))
    outputs = [t.stdout.decode().split() for t in result.tests if t is not None]
    assert len(outputs) == 4
    assert all(out[0] == "[]" for out in outputs), outputs
    assert len({out[1] for out in outputs}) == 4  # four different random streams


async def test_tests_load_the_compiled_code_and_run_the_same_without_it(one_container: SandboxPool) -> None:
    """The compile step leaves the program's compiled code for its tests (a sealed memfd the
    program never sees, see PROBE's open_fds). When it cannot (here: the marshalled code is over
    the file size limit), each test compiles the source itself, with the same outcome."""
    big = "x" * (1536 << 10)
    source = f"BIG = {big!r}\nimport os\nprint(len(BIG), sorted(os.listdir('.')), input())\n"
    limits = replace(Limits.from_settings(one_container.settings), file_size_mb=1)
    for stdins, lim in (([b"a\n", b"b\n"], limits), ([b"c\n"], Limits.from_settings(one_container.settings))):
        tests = tuple(TestInput(stdin=s) for s in stdins)
        result = await one_container.run(Job(PYTHON, "stdio", source.encode(), tests, lim))
        assert result.compile_ok
        for run, stdin in zip(result.tests, stdins, strict=True):
            assert run is not None and run.status == "exited" and run.exit_code == 0, run
            assert run.stdout.decode() == f"{len(big)} ['sol.py'] {stdin.decode().strip()}\n"


async def test_a_syntax_error_is_reported_as_before(one_container: SandboxPool) -> None:
    result = await one_container.run(job(one_container, "print(1\n", [b""]))
    assert not result.compile_ok
    assert "SyntaxError" in result.compile_output and result.tests == [None]
