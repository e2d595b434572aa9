"""Java, JavaScript (Node), Go and Rust in the sandbox: honest and wrong programs, and the hostile
basics per language (endless loop, memory, output flood, network, a process bomb, a compile
bomb). Every outcome is a verdict the candidate caused (status ok, score 0), never "no verdict",
and nothing outlives its container (`escape_check`)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from referee.sandbox import SandboxPool
from referee.verifiers import Check, Resources
from referee.verifiers.code import CodeOptions, CodeVerifier

pytestmark = pytest.mark.docker

TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "20 22\n", "output": "42\n"}]
# The program prints a+b only when the network is unreachable: "accepted" means it was.
NETWORK_GUARD = "LEAK"


@dataclass(frozen=True)
class Program:
    language: str
    honest: str
    wrong: str
    endless: str
    memory: str
    flood: str
    network: str
    spawn_bomb: str
    does_not_compile: str


JAVA_IO = "java.util.Scanner s = new java.util.Scanner(System.in); long a = s.nextLong(), b = s.nextLong();"
GO_IO = "var a, b int\n\tfmt.Scan(&a, &b)\n\t"
RUST_IO = (
    "let mut s = String::new(); std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).unwrap();"
    " let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); let (a, b) = (v[0], v[1]);"
)
JS_IO = 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'


def java(body: str, imports: str = "") -> str:
    return f"{imports}public class Main {{ public static void main(String[] x) throws Exception {{ {JAVA_IO} {body} }} }}\n"


def go(body: str, imports: str = '"fmt"') -> str:
    return f"package main\nimport ({imports})\nfunc main() {{\n\t{GO_IO}{body}\n}}\n"


def rust(body: str) -> str:
    return f"fn main() {{ {RUST_IO} {body} }}\n"


PROGRAMS = [
    Program(
        "java",
        honest=java("System.out.println(a + b);"),
        wrong=java("System.out.println(a - b);"),
        endless=java("while (a > 0) { a = a * 3 % 1000003 + 1; } System.out.println(a + b);"),
        memory=java(
            "java.util.List<long[]> l = new java.util.ArrayList<>(); while (true) l.add(new long[1 << 20]);"
        ),
        flood=java(
            'StringBuilder sb = new StringBuilder("x".repeat(1 << 16)); while (true) System.out.print(sb);'
        ),
        network=java(
            f'try {{ new java.net.Socket("1.1.1.1", 53).close(); System.out.println("{NETWORK_GUARD}"); }}'
            " catch (Exception e) { System.out.println(a + b); }"
        ),
        spawn_bomb=java('while (true) new ProcessBuilder("java", "-jar", "main.jar").start();'),
        does_not_compile="class Main { " + "int f() { return 1; } " * 2 + "}\nclass Main {}\n",
    ),
    Program(
        "javascript",
        honest=JS_IO + "console.log(a + b);\n",
        wrong=JS_IO + "console.log(a * b);\n",
        endless=JS_IO + "while (true) {}\n",
        memory=JS_IO + "const l = []; while (true) l.push(new Float64Array(1 << 20).fill(1));\n",
        flood=JS_IO + 'const s = "x".repeat(1 << 16); while (true) require("fs").writeSync(1, s);\n',
        network=JS_IO
        + f'const c = require("net").connect(53, "1.1.1.1", () => {{ console.log("{NETWORK_GUARD}"); process.exit(0); }});\n'
        + "c.on('error', () => console.log(a + b));\n",
        spawn_bomb=JS_IO + 'while (true) require("child_process").spawn("node", ["sol.js"]);\n',
        does_not_compile="const x = " + "(" * 50_000 + "1" + ")" * 50_000 + ";\n",
    ),
    Program(
        "go",
        honest=go("fmt.Println(a + b)"),
        wrong=go("fmt.Println(a + b + 1)"),
        endless=go("for a > 0 {\n\t\ta = a*3%1000003 + 1\n\t}\n\tfmt.Println(a + b)"),
        memory=go(
            "var l [][]byte\n\tfor {\n\t\tb := make([]byte, 1<<20)\n\t\tfor i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\tl = append(l, b)\n\t}"
        ),
        flood=go("s := make([]byte, 1<<16)\n\tfor {\n\t\tos.Stdout.Write(s)\n\t}", imports='"fmt"; "os"'),
        network=go(
            f'if c, err := net.Dial("tcp", "1.1.1.1:53"); err == nil {{\n\t\tc.Close()\n\t\tfmt.Println("{NETWORK_GUARD}")\n'
            "\t\treturn\n\t}\n\tfmt.Println(a + b)",
            imports='"fmt"; "net"',
        ),
        spawn_bomb=go('for {\n\t\texec.Command("./sol").Start()\n\t}', imports='"fmt"; "os/exec"'),
        does_not_compile="package main\nfunc main() { undefined() }\n",
    ),
    Program(
        "rust",
        honest=rust('println!("{}", a + b);'),
        wrong=rust('println!("{}", a + b - 1);'),
        endless=rust('let mut x = a; while x > 0 { x = x * 3 % 1000003 + 1; } println!("{}", x + b);'),
        memory=rust("let mut l: Vec<Vec<u8>> = Vec::new(); loop { l.push(vec![1u8; 1 << 20]); }"),
        flood=rust('let s = "x".repeat(1 << 16); loop { print!("{}", s); }'),
        network=rust(
            f'if std::net::TcpStream::connect("1.1.1.1:53").is_ok() {{ println!("{NETWORK_GUARD}"); }}'
            ' else { println!("{}", a + b); }'
        ),
        spawn_bomb=rust('loop { let _ = std::process::Command::new("./sol").spawn(); }'),
        does_not_compile=rust('let _: u8 = "not a number";'),
    ),
]

EXPECTED = {
    "honest": ({"accepted"}, 1.0),
    "wrong": ({"wrong_answer"}, 0.0),
    "endless": ({"time_limit_exceeded"}, 0.0),
    "memory": ({"memory_limit_exceeded", "runtime_error"}, 0.0),  # cgroup OOM, or the runtime's own
    "flood": ({"output_limit_exceeded"}, 0.0),
    "network": ({"accepted"}, 1.0),  # the connection failed: no network in the sandbox
    "spawn_bomb": ({"time_limit_exceeded", "runtime_error", "memory_limit_exceeded"}, 0.0),
    "does_not_compile": ({"compile_error"}, 0.0),
}

CASES = [pytest.param(p.language, kind, id=f"{p.language}-{kind}") for p in PROGRAMS for kind in EXPECTED]
BY_LANGUAGE = {p.language: p for p in PROGRAMS}


@pytest.mark.parametrize(("language", "kind"), CASES)
async def test_language_under_attack(
    language: str, kind: str, sandbox_pool: SandboxPool, escape_check: None
) -> None:
    verifier, options = CodeVerifier(), CodeOptions()
    prepared = verifier.prepare(verifier.validate_reference({"language": language, "tests": TESTS}), options)
    program = getattr(BY_LANGUAGE[language], kind)
    [check] = await verifier.check_group([program], prepared, options, Resources(sandbox=sandbox_pool))
    assert isinstance(check, Check), check  # a verdict, never "no verdict"
    verdicts, score = EXPECTED[kind]
    assert check.details["verdict"] in verdicts and check.score == score, check.details


def test_cpp_uses_the_precompiled_bits_header(sandbox_image: str) -> None:
    """The image's precompiled <bits/stdc++.h> matches the compile flags the verifier uses:
    GCC's include trace marks a used precompiled header with `!` (and silently falls back to
    parsing, 3-7 s, when the flags differ), so this fails if the two ever drift apart."""
    from referee.sandbox.languages import LANGUAGES
    from tests.sandbox.helpers import docker_client

    flags = [f for f in LANGUAGES["cpp"].compile or () if f.startswith(("-std", "-O"))]
    program = "#include <bits/stdc++.h>\nint main() { std::cout << 42 << std::endl; }\n"
    command = f"cd /tmp && printf '%s' '{program}' > a.cpp && g++ {' '.join(flags)} -H -o a a.cpp 2>&1 | head -n 3 && ./a"
    client = docker_client()
    try:
        out = client.containers.run(sandbox_image, ["sh", "-c", command], network_mode="none", remove=True)
    finally:
        client.close()
    lines = out.decode().splitlines()
    assert lines[0].startswith("! ") and lines[0].endswith("bits/stdc++.h.gch"), lines
    assert lines[-1] == "42"


async def test_javascript_function_tests(sandbox_pool: SandboxPool, escape_check: None) -> None:
    """JavaScript takes `function` tests (call_harness.js): a top-level function, a `const` arrow
    function or a module.exports member, called with JSON arguments (async ones awaited); the
    value is compared on the host. NaN, undefined and objects with methods are no JSON values;
    a throw is a runtime_error; process.exit before the call leaves no result."""
    tests = [
        {"fn_name": "add", "args": [1, 2], "expected": 3},
        {"fn_name": "add", "args": [0.1, 0.2], "expected": 0.3},
        {"fn_name": "add", "args": [[1], [2]], "expected": [1, 2]},
    ]
    reference = {"language": "javascript", "test_format": "function", "tests": tests}
    programs = {
        "function": "function add(a, b) { return Array.isArray(a) ? a.concat(b) : a + b; }",
        "const arrow": "const add = (a, b) => (Array.isArray(a) ? [...a, ...b] : a + b);",
        "exports": "module.exports = { add: (a, b) => (Array.isArray(a) ? a.concat(b) : a + b) };",
        "async": "async function add(a, b) { return Array.isArray(a) ? a.concat(b) : a + b; }",
        "nan": "function add(a, b) { return NaN; }",
        "undefined": "function add(a, b) { }",
        "throws": "function add(a, b) { throw new Error('no'); }",
        "exits": "process.exit(0);\nfunction add(a, b) { return a + b; }",
        "missing": "function sum(a, b) { return a + b; }",
        "forges": "require('fs').writeSync(4, JSON.stringify({ok: true, value: 3}));\nfunction add() { return 0; }",
    }
    verifier = CodeVerifier()
    options = CodeOptions(reward="fraction")
    prepared = verifier.prepare(verifier.validate_reference(reference), options)
    results = await verifier.check_group(
        list(programs.values()), prepared, options, Resources(sandbox=sandbox_pool)
    )
    by_name = dict(zip(programs, results, strict=True))
    assert all(isinstance(r, Check) for r in results), results
    scores = {name: r.score for name, r in by_name.items() if isinstance(r, Check)}
    assert scores == {
        "function": 1.0,
        "const arrow": 1.0,
        "exports": 1.0,
        "async": 1.0,
        "nan": 0.0,
        "undefined": 0.0,
        "throws": 0.0,
        "exits": 0.0,
        "missing": 0.0,
        "forges": 0.0,  # its forged result and the real one together are no valid result
    }
    verdicts = {name: r.details["tests"][0]["verdict"] for name, r in by_name.items() if isinstance(r, Check)}
    assert verdicts["throws"] == verdicts["missing"] == "runtime_error"
    assert verdicts["nan"] == verdicts["undefined"] == verdicts["exits"] == "wrong_answer"
