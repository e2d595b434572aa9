"""Ruby, PHP, Lua, Bash, TypeScript, C#, Haskell, OCaml and Kotlin in the sandbox: for each, the
hostile set of tests/sandbox/test_languages.py (right and wrong answers, an endless loop, a
memory hog, an output flood, a network attempt, a process bomb, a compile error), and one
allocation far over the limit where the runtime reports a failed allocation itself.

Every outcome is a verdict the candidate caused (status ok), and nothing outlives its container
(`escape_check`). All languages run in one pool, batched: one group per language."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from referee.sandbox import SandboxPool
from referee.sandbox.languages import LANGUAGES
from referee.verifiers import Check, Resources
from referee.verifiers.code import CodeOptions, CodeVerifier
from tests.sandbox import test_languages as languages
from tests.sandbox.test_languages import NETWORK_GUARD, TESTS

pytestmark = pytest.mark.docker

# Languages without sockets in their standard library try the network through bash's /dev/tcp.
SHELL_CONNECT = "bash -c 'exec 3<>/dev/tcp/1.1.1.1/53' 2>/dev/null"
KINDS = (
    "honest",
    "wrong",
    "endless",
    "memory",
    "flood",
    "network",
    "spawn_bomb",
    "does_not_compile",
    "huge_allocation",
)


@dataclass(frozen=True)
class Program(languages.Program):
    # One allocation far over the limit: the kernel refuses it (no OOM kill), and the runtime
    # says so in words of its own. memory_limit_exceeded where the language table reads that
    # message (Language.memory_error_line), else runtime_error: PHP (exit 255), GHC's RTS (251)
    # and OCaml (2) print theirs, but the verdict reads such a line only after exit status 1.
    # A growing hog never gets there in any of these runtimes: its allocations succeed (the
    # kernel overcommits) until the container's OOM killer ends it (on the JVM, its heap limit).
    huge_allocation: str | None = None


RUBY_IO = "a, b = $stdin.read.split.map(&:to_i)\n"
PHP_IO = '<?php\n[$a, $b] = array_map("intval", preg_split("/\\s+/", trim(stream_get_contents(STDIN))));\n'
LUA_IO = 'local a, b = io.read("n", "n")\n'
BASH_IO = "read -r a b\n"
TS_IO = 'const [a, b]: number[] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
CS_IO = (
    "var p = Console.In.ReadToEnd().Split((char[])null, StringSplitOptions.RemoveEmptyEntries);"
    " long a = long.Parse(p[0]), b = long.Parse(p[1]);"
)
KOTLIN_IO = (
    'val (a, b) = System.`in`.bufferedReader().readText().trim().split(Regex("\\\\s+")).map { it.toLong() }\n'
)
HASKELL_IMPORTS = "import Control.Monad\nimport System.Exit\nimport System.Process\n"


def csharp(body: str) -> str:
    return f"using System;\nclass Program {{ static void Main() {{ {CS_IO} {body} }} }}\n"


def haskell(body: str) -> str:
    return f"{HASKELL_IMPORTS}main :: IO ()\nmain = do\n  [a, b] <- map read . words <$> getContents :: IO [Int]\n  {body}\n"


def ocaml(body: str) -> str:
    return f'let () = Scanf.scanf " %d %d" (fun a b -> {body})\n'


def kotlin(body: str) -> str:
    return f"fun main() {{\n    {KOTLIN_IO}    {body}\n}}\n"


PROGRAMS = [
    Program(
        "ruby",
        honest=RUBY_IO + "puts a + b\n",
        wrong=RUBY_IO + "puts a - b\n",
        endless=RUBY_IO + "x = a\nx = x * 3 % 1000003 + 1 while x > 0\nputs x + b\n",
        memory=RUBY_IO + 'l = []\nloop { l << "x" * (1 << 20) }\n',
        flood=RUBY_IO + 's = "x" * (1 << 16)\nloop { $stdout.write(s) }\n',
        network=RUBY_IO + 'require "socket"\nbegin\n  TCPSocket.new("1.1.1.1", 53).close\n'
        f'  puts "{NETWORK_GUARD}"\nrescue StandardError\n  puts a + b\nend\n',
        spawn_bomb=RUBY_IO + 'loop { spawn("ruby", "sol.rb") rescue nil }\n',
        does_not_compile="def f(\n  puts(1 +\nend\n",
        huge_allocation=RUBY_IO + 's = "x" * (1 << 40)\nputs a + b\n',
    ),
    Program(
        "php",
        honest=PHP_IO + 'echo $a + $b, "\\n";\n',
        wrong=PHP_IO + 'echo $a * $b, "\\n";\n',
        endless=PHP_IO + '$x = $a;\nwhile ($x > 0) $x = $x * 3 % 1000003 + 1;\necho $x + $b, "\\n";\n',
        memory=PHP_IO + '$l = [];\nwhile (true) $l[] = str_repeat("x", 1 << 20);\n',
        flood=PHP_IO + '$s = str_repeat("x", 1 << 16);\nwhile (true) fwrite(STDOUT, $s);\n',
        network=PHP_IO + '$c = @fsockopen("1.1.1.1", 53, $errno, $error, 1);\n'
        f'echo $c ? "{NETWORK_GUARD}" : $a + $b, "\\n";\n',
        spawn_bomb=PHP_IO + 'while (true) @proc_open(["php", "sol.php"], [], $pipes);\n',
        does_not_compile="<?php\necho (1 + ;\n",
        huge_allocation=PHP_IO + '$s = str_repeat("x", 1 << 40);\necho $a + $b, "\\n";\n',
    ),
    Program(
        "lua",
        honest=LUA_IO + "print(a + b)\n",
        wrong=LUA_IO + "print(a + b + 1)\n",
        endless=LUA_IO + "local x = a\nwhile x > 0 do x = x * 3 % 1000003 + 1 end\nprint(x + b)\n",
        memory=LUA_IO + 'local l = {}\nwhile true do l[#l + 1] = string.rep("x", 1 << 20) .. #l end\n',
        flood=LUA_IO + 'local s = string.rep("x", 1 << 16)\nwhile true do io.write(s) end\n',
        network=LUA_IO
        + f'if os.execute("{SHELL_CONNECT}") then print("{NETWORK_GUARD}") else print(a + b) end\n',
        spawn_bomb=LUA_IO + 'while true do io.popen("lua5.4 sol.lua") end\n',
        does_not_compile="print((\n",
    ),
    Program(
        "bash",
        honest=BASH_IO + "echo $((a + b))\n",
        wrong=BASH_IO + "echo $((a * b))\n",
        endless=BASH_IO + "while :; do :; done\n",
        memory=BASH_IO + "s=x\nwhile :; do s=$s$s; done\n",
        flood=BASH_IO + "yes xxxxxxxxxxxxxxxx\n",
        network=BASH_IO
        + f"if (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null; then echo {NETWORK_GUARD}; else echo $((a + b)); fi\n",
        spawn_bomb=BASH_IO + "while :; do bash sol.sh & done\n",
        does_not_compile="if then; fi\n",
    ),
    Program(
        "typescript",
        honest=TS_IO + "console.log(a + b);\n",
        wrong=TS_IO + "console.log(a * b);\n",
        endless=TS_IO + "let x: number = a;\nwhile (x > 0) x = (x * 3) % 1000003 + 1;\nconsole.log(x + b);\n",
        memory=TS_IO
        + "const l: Float64Array[] = [];\nwhile (true) l.push(new Float64Array(1 << 20).fill(1));\n",
        flood=TS_IO + 'const s: string = "x".repeat(1 << 16);\nwhile (true) require("fs").writeSync(1, s);\n',
        network=TS_IO
        + f'const c = require("net").connect(53, "1.1.1.1", () => {{ console.log("{NETWORK_GUARD}"); process.exit(0); }});\n'
        + "c.on('error', () => console.log(a + b));\n",
        spawn_bomb=TS_IO + 'while (true) require("child_process").spawn("node", ["sol.js"]);\n',
        does_not_compile="let x: number = (1 + ;\n",
    ),
    Program(
        "csharp",
        honest=csharp("Console.WriteLine(a + b);"),
        wrong=csharp("Console.WriteLine(a - b);"),
        endless=csharp("while (a > 0) a = a * 3 % 1000003 + 1; Console.WriteLine(a + b);"),
        memory=csharp(
            "var l = new System.Collections.Generic.List<long[]>();"
            " while (true) { var x = new long[1 << 17]; for (int i = 0; i < x.Length; i++) x[i] = i; l.Add(x); }"
        ),
        flood=csharp(
            "var o = Console.OpenStandardOutput(); var s = new byte[1 << 16];"
            " while (true) o.Write(s, 0, s.Length);"
        ),
        network=csharp(
            f'try {{ new System.Net.Sockets.TcpClient("1.1.1.1", 53).Close(); Console.WriteLine("{NETWORK_GUARD}"); }}'
            " catch (Exception) { Console.WriteLine(a + b); }"
        ),
        spawn_bomb=csharp(
            'while (true) { try { System.Diagnostics.Process.Start("mono", "sol.exe"); } catch (Exception) { } }'
        ),
        does_not_compile=csharp('int x = "not a number";'),
    ),
    Program(
        "haskell",
        honest=haskell("print (a + b)"),
        wrong=haskell("print (a - b)"),
        endless=haskell(
            "let loop x = if x > 0 then loop (x * 3 `mod` 1000003 + 1) else x :: Int\n  print (loop a + b)"
        ),
        # `xs` is kept for `length` while `sum` walks it: the list is built whole, unbounded
        memory=haskell("let xs = [a ..]\n  print (sum xs + length xs)"),
        flood=haskell('putStr (cycle "x")'),
        network=haskell(
            f'code <- system "{SHELL_CONNECT}"\n'
            f'  if code == ExitSuccess then putStrLn "{NETWORK_GUARD}" else print (a + b)'
        ),
        spawn_bomb=haskell('forever (spawnProcess "./sol" [])'),
        does_not_compile="main :: IO ()\nmain = putStrLn (1 :: Int)\n",
        huge_allocation="import qualified Data.ByteString as B\n"
        + haskell("print (B.length (B.replicate (2 ^ 40) 0) + a + b)"),
    ),
    Program(
        "ocaml",
        honest=ocaml('Printf.printf "%d\\n" (a + b)'),
        wrong=ocaml('Printf.printf "%d\\n" (a + b + 1)'),
        endless=ocaml(
            'let x = ref a in while !x > 0 do x := !x * 3 mod 1000003 + 1 done; Printf.printf "%d\\n" (!x + b)'
        ),
        memory=ocaml("let l = ref [] in while true do l := Bytes.make (1 lsl 20) 'x' :: !l done"),
        flood=ocaml("let s = String.make 65536 'x' in while true do print_string s done"),
        network=ocaml(
            f'if Sys.command "{SHELL_CONNECT}" = 0 then print_endline "{NETWORK_GUARD}"'
            ' else Printf.printf "%d\\n" (a + b)'
        ),
        # before reading its input, so that every copy spawns more
        spawn_bomb='let () = while true do ignore (Sys.command "./sol &") done\n',
        does_not_compile="let () = print_string 1\n",
        huge_allocation=ocaml('Printf.printf "%d\\n" (Bytes.length (Bytes.create (1 lsl 40)) + a + b)'),
    ),
    Program(
        "kotlin",
        honest=kotlin("println(a + b)"),
        wrong=kotlin("println(a - b)"),
        endless=kotlin("var x = a\n    while (x > 0) x = x * 3 % 1000003 + 1\n    println(x + b)"),
        memory=kotlin(
            "val l = ArrayList<LongArray>()\n    while (true) l.add(LongArray(1 shl 17) { it.toLong() })"
        ),
        flood=kotlin('val s = "x".repeat(1 shl 16)\n    while (true) print(s)'),
        network=kotlin(
            f'try {{ java.net.Socket("1.1.1.1", 53).close(); println("{NETWORK_GUARD}") }}'
            " catch (e: Exception) { println(a + b) }"
        ),
        spawn_bomb=kotlin('while (true) ProcessBuilder("java", "-jar", "main.jar").start()'),
        does_not_compile=kotlin('val x: Int = "not a number"'),
    ),
]

BY_LANGUAGE = {p.language: p for p in PROGRAMS}
# As for the first seven languages, but a memory hog's verdict is known in each of these:
# the container's OOM kill (Kotlin: the JVM's heap limit first).
EXPECTED = {**languages.EXPECTED, "memory": ({"memory_limit_exceeded"}, 0.0)}


def expected(language: str, kind: str) -> tuple[set[str], float]:
    if kind == "huge_allocation":
        read = LANGUAGES[language].memory_error_line is not None
        return {"memory_limit_exceeded" if read else "runtime_error"}, 0.0
    return EXPECTED[kind]


async def judge(language: str, programs: list[str], pool: SandboxPool) -> list[tuple[str, float]]:
    """(verdict, score) of each program, judged as one group; a program that got no verdict
    gets ("no verdict: <why>", 0)."""
    verifier, options = CodeVerifier(), CodeOptions()
    prepared = verifier.prepare(verifier.validate_reference({"language": language, "tests": TESTS}), options)
    checks = await verifier.check_group(programs, prepared, options, Resources(sandbox=pool))
    return [
        (check.details["verdict"], check.score) if isinstance(check, Check) else (f"no verdict: {check}", 0.0)
        for check in checks
    ]


async def test_every_language_under_attack(sandbox_pool: SandboxPool, escape_check: None) -> None:
    """One language's group at a time (its programs share the pool's containers). A program
    the node's load kept from a CPU gets no verdict (masked, never a 0: see the judging
    policy); on a shared node that happens, and such a program is asked again, alone."""
    outcomes = {}
    for program in PROGRAMS:
        kinds = [kind for kind in KINDS if getattr(program, kind) is not None]
        results = await judge(program.language, [getattr(program, kind) for kind in kinds], sandbox_pool)
        outcomes.update(
            {(program.language, kind): result for kind, result in zip(kinds, results, strict=True)}
        )
    for (language, kind), (verdict, _) in list(outcomes.items()):
        if verdict.startswith("no verdict"):
            [outcomes[language, kind]] = await judge(
                language, [getattr(BY_LANGUAGE[language], kind)], sandbox_pool
            )
    wrong = {
        f"{language}-{kind}": verdict
        for (language, kind), (verdict, score) in outcomes.items()
        if verdict not in expected(language, kind)[0] or score != expected(language, kind)[1]
    }
    assert wrong == {}, wrong
