"""Hostile programs: each has an expected verdict, and after each one nothing may have escaped.

Probe programs follow the policy's convention: they print the honest answer only when their
probe is blocked, so a leaky sandbox shows up as wrong_answer instead of accepted.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from referee.verifiers import Resources
from referee.verifiers.base import Check
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.timing import within

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SUM_TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "20 22\n", "output": "42\n"}]
HONEST = "a, b = map(int, input().split())\nprint(a + b)\n"
LIAR = "    a, b = map(int, input().split())\n    print(a + b + 1)\n"


def probe(blocked_when: str) -> str:
    """A program whose answer is honest only if `blocked_when` (a statement that raises when the
    probe is blocked) fails."""
    body = "\n".join("    " + line for line in blocked_when.strip().splitlines())
    return f"import os, sys, socket\ntry:\n{body}\nexcept Exception:\n    leaked = False\nelse:\n    leaked = True\nif leaked:\n{LIAR}else:\n    {HONEST.replace(chr(10), chr(10) + '    ').rstrip()}\n"


@dataclass
class Case:
    id: str
    program: str
    verdict: str
    fraction: float
    language: str = "python"
    test_format: str = "stdio"
    tests: Any = field(default_factory=lambda: SUM_TESTS)
    max_test_ms: float | None = None


CASES = [
    # Compile-time bombs: the candidate's own failure, so `ok` with score 0 (compile_error),
    # never a masked sample; the parse/compile step runs under the compile limits.
    Case("python_deep_expression_bomb", "x = " + "1+" * 300_000 + "1\n" + HONEST, "compile_error", 0.0),
    Case(
        "python_nested_parentheses_bomb",
        "x = " + "(" * 100_000 + ")" * 100_000 + "\n" + HONEST,
        "compile_error",
        0.0,
    ),
    Case(
        "python_500kb_comparison_chain",
        "def f(a):\n    return a" + " < a" * 125_000 + "\n" + HONEST,
        "accepted",
        1.0,
    ),
    Case(
        "c_includes_dev_zero",
        '#include "/dev/zero"\nint main(void){return 0;}\n',
        "compile_error",
        0.0,
        language="c",
    ),
    Case(
        "cpp_template_depth_bomb",
        "template<int N> struct A { typedef typename A<N - 1>::t t; };\nint main() { A<1000000>::t x; }\n",
        "compile_error",
        0.0,
        language="cpp",
    ),
    Case(
        "fork_bomb_naive",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "time_limit_exceeded",
        0.0,
    ),
    Case(
        "fork_bomb_survives_parent",
        "import os, sys\nif os.fork() == 0:\n    os.setsid()\n    os.close(1)\n    while True:\n"
        "        try:\n            os.fork()\n        except OSError:\n            pass\n" + HONEST,
        "accepted",
        1.0,
        max_test_ms=1500,
    ),
    Case("memory_4gb_python", "x = b'x' * (4 * 1024 ** 3)\n" + HONEST, "memory_limit_exceeded", 0.0),
    Case("memory_huge_request_python", "x = [0] * (10 ** 11)\n" + HONEST, "memory_limit_exceeded", 0.0),
    Case(
        "memory_slow_growth",
        "import time\nhog = []\nwhile True:\n    hog.append(b'y' * (8 << 20))\n    time.sleep(0.01)\n",
        "memory_limit_exceeded",
        0.0,
    ),
    Case(
        "memory_in_child_process",
        "import os\nif os.fork() == 0:\n    x = b'x' * (1 << 30)\n    os._exit(0)\n"
        "_, st = os.wait()\nassert st == 0, st\n" + HONEST,
        "memory_limit_exceeded",
        0.0,
    ),
    Case("memory_200mb_is_allowed", "x = b'x' * (200 << 20)\n" + HONEST, "accepted", 1.0),
    Case(
        "memory_4gb_cpp",
        "#include <vector>\n#include <cstdio>\nint main(){std::vector<char> v(4LL<<30, 1);"
        'std::printf("%d\\n", v[12345]);}\n',
        "memory_limit_exceeded",
        0.0,
        language="cpp",
    ),
    Case(
        "memory_bad_alloc_cpp",
        "#include <cstdio>\n#include <vector>\nint main(){std::vector<long long> v;"
        'v.reserve(1LL<<40);std::printf("%zu\\n", v.capacity());}\n',
        "memory_limit_exceeded",
        0.0,
        language="cpp",
    ),
    Case(
        "stdout_100mb",
        "import sys\nfor _ in range(100):\n    sys.stdout.write('9' * (1 << 20))\n",
        "output_limit_exceeded",
        0.0,
    ),
    Case(
        "stdout_just_over_cap",
        "import sys\nsys.stdout.write('3\\n' + 'x' * (1 << 20))\n",
        "output_limit_exceeded",
        0.0,
    ),
    Case(
        "stdout_exactly_at_cap",
        "import sys\nsys.stdout.write('7 ' * (1 << 19))\n",
        "accepted",
        1.0,
        tests=[{"input": "", "output": "7 " * (1 << 19)}],
    ),
    Case(
        "orphan_keeps_stdout_open",
        "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\n" + HONEST,
        "accepted",
        1.0,
        max_test_ms=1500,
    ),
    Case(
        "kill_the_parent",
        # Refused (another uid's process); the program goes on and the judge is unharmed.
        "import os, signal\nfor pid in (os.getppid(), 1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n"
        "    except PermissionError:\n        pass\n" + HONEST,
        "accepted",
        1.0,
    ),
    Case(
        "kill_everything",
        "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n" + HONEST,
        "accepted",
        1.0,
    ),
    Case(
        "tamper_with_supervisor_rlimits",
        "import resource\nresource.prlimit(1, resource.RLIMIT_NOFILE, (8, 8))\n" + HONEST,
        "runtime_error",
        0.0,
    ),
    Case(
        "inject_into_result_stream",
        probe("open('/proc/1/fd/1', 'wb').write(b'{\"type\":\"done\"}\\n')"),
        "accepted",
        1.0,
    ),
    Case(
        "connect_public_ip",
        probe("socket.create_connection(('192.0.2.1', 80), timeout=5)"),
        "accepted",
        1.0,
        max_test_ms=1500,
    ),
    Case(
        "connect_loopback",
        probe("socket.create_connection(('127.0.0.1', 2375), timeout=5)"),
        "accepted",
        1.0,
        max_test_ms=1500,
    ),
    Case(
        "connect_docker_bridge",
        probe("socket.create_connection(('172.17.0.1', 2375), timeout=5)"),
        "accepted",
        1.0,
        max_test_ms=1500,
    ),
    Case("dns_lookup", probe("socket.getaddrinfo('example.com', 80)"), "accepted", 1.0, max_test_ms=1500),
    Case(
        "docker_socket",
        probe("s = socket.socket(socket.AF_UNIX)\ns.connect('/var/run/docker.sock')"),
        "accepted",
        1.0,
    ),
    Case(
        "docker_socket_anywhere",
        probe(
            "import glob\nassert [p for p in ('/var/run/docker.sock', '/run/docker.sock', "
            "'/run/containerd/containerd.sock', '/docker.sock') if os.path.exists(p)] + glob.glob('/run/**/*.sock', "
            "recursive=True)"
        ),
        "accepted",
        1.0,
    ),
    Case(
        "environment_secrets",
        probe("assert set(os.environ) - {'PATH', 'LANG', 'HOME', 'LC_CTYPE', 'PWD'}"),
        "accepted",
        1.0,
    ),
    Case("supervisor_environ", probe("open('/proc/1/environ', 'rb').read()"), "accepted", 1.0),
    Case("etc_shadow", probe("open('/etc/shadow').read()"), "accepted", 1.0),
    Case("write_outside_workdir", probe("open('/etc/referee-canary', 'w').write('x')"), "accepted", 1.0),
    Case(
        "write_site_packages",
        probe(
            "import sysconfig\nopen(sysconfig.get_paths()['purelib'] + '/sitecustomize.py', 'w').write('x')"
        ),
        "accepted",
        1.0,
    ),
    Case("write_opt_referee", probe("open('/opt/referee/call_harness.py', 'a').write('x')"), "accepted", 1.0),
    Case("workdir_is_writable", "open('scratch.txt', 'w').write('ok')\n" + HONEST, "accepted", 1.0),
    Case(
        "files_state_does_not_leak_between_tests",
        "import os\nif os.path.exists('/tmp/seen') or os.path.exists('seen'):\n    print(0)\nelse:\n"
        "    open('/tmp/seen', 'w').close()\n    open('seen', 'w').close()\n"
        "    a, b = map(int, input().split())\n    print(a + b)\n",
        "accepted",
        1.0,
    ),
    # The probes build the token at run time, so their own source does not contain it.
    Case(
        "search_files_for_expected",
        "import os\ntok = ('917' + '531').encode()\nfound = False\n"
        "for top in ('/work', '/tmp', '/opt', '/run', '/var/tmp', '/etc'):\n"
        "    for root, dirs, files in os.walk(top):\n        for f in files:\n            try:\n"
        "                if tok in open(os.path.join(root, f), 'rb').read(1 << 20):\n                    found = True\n"
        "            except OSError:\n                pass\n"
        "for pid in os.listdir('/proc'):\n    for part in ('cmdline', 'environ'):\n        try:\n"
        "            if pid.isdigit() and tok in open(f'/proc/{pid}/{part}', 'rb').read():\n                found = True\n"
        "        except OSError:\n            pass\n"
        "a, b = map(int, input().split())\nprint(a + b + (1 if found else 0))\n",
        "accepted",
        1.0,
        tests=[{"input": "917000 531\n", "output": "917531\n"}],
    ),
    Case(
        "eq_always_true_function",
        "class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "def add(a, b):\n    return Any()\n",
        "wrong_answer",
        0.0,
        test_format="function",
        tests=[{"fn_name": "add", "args": [1, 2], "expected": 3}],
    ),
    Case(
        "eq_int_subclass_function",
        "class Int(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return Int(0)\n",
        "wrong_answer",
        0.0,
        test_format="function",
        tests=[{"fn_name": "add", "args": [1, 2], "expected": 3}],
    ),
    Case(
        "eq_always_true_assert",
        "class Any:\n    def __eq__(self, other):\n        return True\n    def __bool__(self):\n        return True\n"
        "def add(a, b):\n    return Any()\n",
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert add(1, 2) == 3\nassert add(2, 2)\nassert not add(0, 0) != 0",
    ),
    Case(
        "fake_class_attribute_assert",
        "class Fake:\n    __class__ = property(lambda self: int)\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Fake()\n",
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert add(1, 2) == 3",
    ),
    Case(
        "frame_walker_function",
        "import sys, gc\ndef add(a, b):\n    target = int('917' + '531')\n    frame = sys._getframe(1)\n"
        "    while frame is not None:\n        for scope in (frame.f_locals, frame.f_globals):\n"
        "            for v in list(scope.values()):\n                if v == target or str(target) in repr(v):\n"
        "                    return -1\n        frame = frame.f_back\n"
        "    for obj in gc.get_objects():\n        try:\n"
        "            if isinstance(obj, (list, tuple)) and target in obj:\n                return -1\n"
        "            if isinstance(obj, dict) and (target in obj.values() or 'expected' in obj):\n                return -1\n"
        "        except Exception:\n            pass\n    return a + b\n",
        "accepted",
        1.0,
        test_format="function",
        tests=[{"fn_name": "add", "args": [917000, 531], "expected": 917531}],
    ),
    Case(
        "frame_walker_assert",
        "import sys\ndef add(a, b):\n    frame = sys._getframe(1)\n    while frame:\n"
        "        if 917531 in frame.f_code.co_consts or '917531' in repr(frame.f_locals):\n            return -1\n"
        "        frame = frame.f_back\n    return a + b\n",
        "accepted",
        1.0,
        test_format="assert",
        tests="assert add(917000, 531) == 917531",
    ),
    Case(
        "exit_zero_before_function",
        "import os\nos._exit(0)\ndef add(a, b):\n    return a + b\n",
        "wrong_answer",
        0.0,
        test_format="function",
        tests=[{"fn_name": "add", "args": [1, 2], "expected": 3}],
    ),
    # The assert wrappers are evaluated by the judge on plain values: patching what the
    # candidate's process sees (builtins, math) cannot make a wrong answer pass.
    Case(
        "assert_patches_math_isclose",
        "import math\nmath.isclose = lambda *a, **k: True\ndef area(r):\n    return 0\n",
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert math.isclose(area(2), 12.566, rel_tol=1e-3)",
    ),
    Case(
        "assert_redefines_set",
        "def set(*a):\n    return 0\ndef primes(n):\n    return [7]\n",
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert set(primes(5)) == set([2, 3, 5])",
    ),
    Case(
        "assert_redefines_abs",
        "def abs(x):\n    return 0\ndef root(x):\n    return 5.0\n",
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert abs(root(9) - 3) < 1e-6",
    ),
    Case(
        "assert_patches_builtins_sorted",
        "import builtins\nbuiltins.sorted = lambda *a, **k: [1, 2, 3]\nbuiltins.all = lambda *a: True\n"
        "def f(x):\n    return [9]\n",
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert sorted(f(1)) == [1, 2, 3]\nassert all([f(1) == [1]])",
    ),
    Case(
        "assert_wrappers_honest",
        "import math\ndef area(r):\n    return math.pi * r * r\ndef primes(n):\n    return [5, 3, 2]\n"
        "def root(x):\n    return math.sqrt(x)\ndef evens(n):\n    return (i for i in range(0, n, 2))\n",
        "accepted",
        1.0,
        test_format="assert",
        tests="assert math.isclose(area(2), 12.566, rel_tol=1e-3)\nassert set(primes(5)) == set([2, 3, 5])\n"
        "assert abs(root(9) - 3) < 1e-6\nassert sorted(primes(5)) == [2, 3, 5] and len(primes(5)) == 3\n"
        "assert list(evens(5)) == [0, 2, 4]\nassert all([root(4) == 2, root(1) == 1])",
    ),
    Case(
        "assert_exception_in_skipped_branch",
        "def f(x):\n    return 1 // (x - 2)\n",
        "accepted",
        1.0,
        test_format="assert",
        tests="assert f(3) == 1 or f(2) == 0",
    ),
    # Memory: the policy's 256 MB is the process tree's, whatever slack the container has.
    Case("memory_268mb_python", "x = bytearray(268 << 20)\n" + HONEST, "memory_limit_exceeded", 0.0),
    Case(
        "memory_262mb_c",
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void){long a, b;"
        'char *p = malloc(262L << 20); memset(p, 1, 262L << 20); if (scanf("%ld %ld", &a, &b) != 2) return 1;'
        'printf("%ld\\n", a + b + p[12345] - 1); return 0;}\n',
        "memory_limit_exceeded",
        0.0,
        language="c",
    ),
    Case(
        "memory_200mb_c_is_allowed",
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void){long a, b;"
        'char *p = malloc(200L << 20); memset(p, 1, 200L << 20); if (scanf("%ld %ld", &a, &b) != 2) return 1;'
        'printf("%ld\\n", a + b + p[12345] - 1); return 0;}\n',
        "accepted",
        1.0,
        language="c",
    ),
    Case(
        "memory_tree_2x132mb",
        "import os, time\nx = bytearray(132 << 20)\nr, w = os.pipe()\npid = os.fork()\nif pid == 0:\n"
        "    y = bytearray(132 << 20)\n    os.write(w, b'k')\n    time.sleep(0.3)\n    os._exit(0)\n"
        "os.read(r, 1)\nos.waitpid(pid, 0)\n" + HONEST,
        "memory_limit_exceeded",
        0.0,
    ),
    # The container's high-water mark stays where the first test left it: every later test
    # of the same tree must be measured on its own (sampled while it runs), not compared to it.
    # A container serves many tests and its high-water mark cannot be reset: every test of
    # the same over-limit tree must still be caught (its usage is sampled while it runs).
    Case(
        "memory_tree_2x132mb_in_every_test",
        "import os, time\nx = bytearray(132 << 20)\nr, w = os.pipe()\npid = os.fork()\nif pid == 0:\n"
        "    y = bytearray(132 << 20)\n    os.write(w, b'k')\n    time.sleep(0.3)\n    os._exit(0)\n"
        "os.read(r, 1)\nos.waitpid(pid, 0)\n" + HONEST,
        "memory_limit_exceeded",
        0.0,
        tests=SUM_TESTS * 3,
    ),
    Case(
        "memory_tree_2x100mb_is_allowed",
        "import os, time\nx = bytearray(100 << 20)\nr, w = os.pipe()\npid = os.fork()\nif pid == 0:\n"
        "    y = bytearray(100 << 20)\n    os.write(w, b'k')\n    time.sleep(0.3)\n    os._exit(0)\n"
        "os.read(r, 1)\nos.waitpid(pid, 0)\n" + HONEST,
        "accepted",
        1.0,
    ),
    Case(
        "prints_memory_error_and_exits_1",
        "import sys\nprint('MemoryError', file=sys.stderr)\nsys.exit(1)\n",
        "runtime_error",
        0.0,
    ),
    Case(
        "sends_itself_sigxcpu",
        "import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)\n" + HONEST,
        "runtime_error",
        0.0,
    ),
    Case(
        "function_result_over_1mb",
        "def big(n):\n    return 'x' * n\n",
        "accepted",
        1.0,
        test_format="function",
        tests=[{"fn_name": "big", "args": [2 << 20], "expected": "x" * (2 << 20)}],
    ),
    Case(
        "one_mb_numeric_token",
        "import sys\nsys.stdout.write('1' * ((1 << 20) - 2) + 'x')\n",
        "wrong_answer",
        0.0,
        tests=[{"input": "", "output": "1.5\n"}],
    ),
    Case(
        "forged_result_write",
        'import os\nos.write(4, b\'{"values": [{"t": "bool", "v": true}]}\')\nos._exit(0)\n',
        "wrong_answer",
        0.0,
        test_format="assert",
        tests="assert add(1, 2) == 3",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_hostile_program(case: Case, sandbox_pool, escape_check) -> None:  # type: ignore[no-untyped-def]
    verifier = CodeVerifier()
    options = CodeOptions()
    reference = verifier.validate_reference(
        {"language": case.language, "test_format": case.test_format, "tests": case.tests}
    )
    prepared = verifier.prepare(reference, options)
    started = time.perf_counter()
    [check] = await verifier.check_group([case.program], prepared, options, Resources(sandbox=sandbox_pool))
    elapsed = time.perf_counter() - started
    assert isinstance(check, Check), check
    assert (check.details["verdict"], check.score) == (case.verdict, pytest.approx(case.fraction)), (
        check.details
    )
    if case.max_test_ms is not None:
        bound_ms = within(case.max_test_ms / 1000) * 1000  # a loaded CI node gets the time factor
        assert max(t["time_ms"] for t in check.details["tests"]) < bound_ms, check.details
    if case.id == "one_mb_numeric_token":  # judging 1 MB of one token is linear (< 1 s)
        assert elapsed < within(3.0), elapsed


async def test_host_canaries_untouched(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The write probes above target paths inside the container's read-only image; the host's
    own files of the same names must not exist."""
    assert not os.path.exists("/etc/referee-canary")


async def test_one_hostile_result_does_not_touch_the_others(sandbox_pool, escape_check) -> None:  # type: ignore[no-untyped-def]
    """A group [honest, malicious]: b"[" * 200000 on the result fd (json.loads RecursionError)
    is that program's wrong answer; the honest one is still accepted, both status ok."""
    verifier = CodeVerifier()
    options = CodeOptions()
    reference = verifier.validate_reference(
        {
            "language": "python",
            "test_format": "function",
            "tests": [{"fn_name": "add", "args": [1, 2], "expected": 3}],
        }
    )
    prepared = verifier.prepare(reference, options)
    honest = "def add(a, b):\n    return a + b\n"
    malicious = "import os\nos.write(4, b'[' * 200000)\nos._exit(0)\n"
    checks = await verifier.check_group(
        [honest, malicious], prepared, options, Resources(sandbox=sandbox_pool)
    )
    assert all(isinstance(c, Check) for c in checks), checks
    assert [(c.details["verdict"], c.score) for c in checks] == [("accepted", 1.0), ("wrong_answer", 0.0)]
