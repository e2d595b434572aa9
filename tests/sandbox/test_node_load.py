"""An overloaded node never turns a right answer into a 0 (issue 27, 2).

The host is saturated for the length of each test by busy loops in containers of their own
with a large CPU weight (`--cpu-shares`): busy loops on the host itself would share one CPU
group and leave a sandbox container half the machine, while the node this models ran dozens
of containers at once. Under it, honest programs compile and run to `accepted` or come back
as no verdict (masked, retried); a sleeping program still gets its time_limit_exceeded."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from referee.sandbox import SandboxPool
from referee.verifiers import Check, Resources
from referee.verifiers.base import VerifierError
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.sandbox.helpers import make_sandbox_settings

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "20 22\n", "output": "42\n"}]
RUST_IO = (
    "let mut s = String::new(); std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();"
)
HONEST = {
    # About 0.3 s of CPU on a quiet machine: several times its 2 s limit in wall-clock time here.
    "python": "s = 0\nfor i in range(3_000_000):\n    s += i\na, b = map(int, input().split())\nprint(a + b)\n",
    "javascript": 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
    "console.log(a + b);\n",
    "cpp": "#include <bits/stdc++.h>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
    "rust": f'fn main() {{ {RUST_IO} println!("{{}}", v[0] + v[1]); }}\n',
    "java": "public class Main { public static void main(String[] x) { java.util.Scanner s = new "
    "java.util.Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }\n",
}
# Each hog container forks into 8 busy loops. Two of them at 16x a sandbox container's CPU
# weight leave each of the five sandbox containers about 1/37 of the machine: on the code
# before these tests a 0 came every time (time-outs, compile errors), and on a slow CI node
# most compiles outlast even the 3x backstop, so only "never a 0" is asserted there. At 8x
# (about 1/21 each) a test still outlasts its limit in wall-clock time (Python's 2.3 s of 2 s
# here, compiles 5-6 s) but ends well inside the backstop: there most programs get a verdict.
HOG_CONTAINERS = 2
SATURATED_SHARES = 16384
LOADED_SHARES = 8192
HOG = "import os\nfor _ in range(3):\n    os.fork()\nwhile True:\n    pass\n"


def _hogs(sandbox_image: str, shares: int) -> Iterator[None]:
    names = [f"referee-test-hog-{uuid.uuid4().hex[:8]}" for _ in range(HOG_CONTAINERS)]
    base = ["docker", "run", "-d", "--rm", "--network", "none", "--cpu-shares", str(shares)]
    try:
        for name in names:
            subprocess.run([*base, "--name", name, sandbox_image, "python3", "-c", HOG], check=True)
        yield
    finally:
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True, check=False)


@pytest.fixture
def saturated_node(sandbox_image: str) -> Iterator[None]:
    yield from _hogs(sandbox_image, SATURATED_SHARES)


@pytest.fixture
def loaded_node(sandbox_image: str) -> Iterator[None]:
    yield from _hogs(sandbox_image, LOADED_SHARES)


async def _judge(pool: SandboxPool, language: str, program: str) -> Check | VerifierError:
    verifier, options = CodeVerifier(), CodeOptions()
    reference = verifier.validate_reference({"language": language, "tests": TESTS})
    prepared = verifier.prepare(reference, options)
    [result] = await verifier.check_group([program], prepared, options, Resources(sandbox=pool))
    return result


async def _judge_honest() -> dict[str, Check | VerifierError]:
    pool = SandboxPool(make_sandbox_settings(pool_size=len(HONEST), max_parallel=len(HONEST)))
    await pool.start()
    try:
        results = await asyncio.gather(*(_judge(pool, lang, code) for lang, code in HONEST.items()))
    finally:
        await pool.close()
    return dict(zip(HONEST, results, strict=True))


def _outcomes(results: dict[str, Check | VerifierError]) -> dict[str, str]:
    return {
        lang: r.details["verdict"] if isinstance(r, Check) else "no verdict" for lang, r in results.items()
    }


def _assert_never_a_0(results: dict[str, Check | VerifierError]) -> None:
    outcomes = _outcomes(results)
    assert set(outcomes.values()) <= {"accepted", "no verdict"}, outcomes
    for result in results.values():
        assert isinstance(result, VerifierError) or result.score == 1.0
        if isinstance(result, VerifierError):
            assert "overloaded" in str(result)


async def test_honest_programs_on_a_saturated_node_are_never_scored_0(
    saturated_node: None, escape_check: None
) -> None:
    """Compiles and tests that take several times their limits in wall-clock time under the
    load (Rust's compile took 18 s here against a 10 s limit, Java's tests 3 s and the Python
    one 4 s against 2 s): each program is accepted, or no verdict at all."""
    _assert_never_a_0(await _judge_honest())


async def test_on_a_loaded_node_most_honest_programs_get_their_verdict(
    loaded_node: None, escape_check: None
) -> None:
    """A masked sample is a last resort, not the rule: with the node loaded but each sandbox
    container still getting its share, most programs are accepted, none scored 0."""
    results = await _judge_honest()
    _assert_never_a_0(results)
    outcomes = _outcomes(results)
    assert list(outcomes.values()).count("accepted") >= len(HONEST) - 2, outcomes


async def test_a_sleeping_program_on_a_saturated_node_still_gets_its_0(
    saturated_node: None, sandbox_pool: SandboxPool, escape_check: None
) -> None:
    """Sleeping, blocked or deadlocked is the program's own doing, however busy the node:
    it never waits in a run queue, so it times out on the wall clock, never masked."""
    program = "import time\ntime.sleep(60)\n"
    result = await _judge(sandbox_pool, "python", program)
    assert isinstance(result, Check), result
    assert (result.details["verdict"], result.score) == ("time_limit_exceeded", 0.0)


async def test_a_busy_program_on_a_quiet_node_times_out_at_its_limit(sandbox_pool: SandboxPool) -> None:
    """The time it gets back is only what it waited: alone, an endless loop is out of time
    when it has used its limit (never masked on a quiet node)."""
    result = await _judge(sandbox_pool, "python", "while True:\n    pass\n")
    assert isinstance(result, Check), result
    assert result.details["verdict"] == "time_limit_exceeded"
