"""The language table: what the image needs and how a program is compiled and run.

Adding a language is one `Language(...)` entry here: its Debian packages go into the image
recipe (and so into the image's content hash, which triggers a rebuild), its commands are sent
to the in-container supervisor with every submission. Commands run in the work dir.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

# What runs one `function` / `assert` test of a Python program (in_container/call_harness.py);
# not -S: candidates may call the exit()/quit() builtins that `site` installs.
PYTHON_HARNESS = ("python3", "-I", "/opt/referee/call_harness.py")
# Test code beyond the host's assert evaluator: trusted tester + program process (script_tester.py).
PYTHON_TESTER = ("python3", "-I", "/opt/referee/script_tester.py")
CPP_FLAGS = ("-std=c++17", "-O2")
CPP_COMPILE = ("g++", *CPP_FLAGS, "-o", "sol", "sol.cpp")
# `#include <bits/stdc++.h>`, the first line of most competitive-programming C++, costs 3-7 s of
# parsing per compile; GCC uses `<header>.gch` next to the header instead when it was built with
# the same flags (it silently ignores one that does not match). Built into the image, read-only,
# owned by root: it cuts such a compile to about 1 s and changes nothing else.
CPP_PRECOMPILED_HEADER = (
    "header=$(echo '#include <bits/stdc++.h>' | g++ {flags} -x c++ -H -fsyntax-only - 2>&1 | head -n1 | cut -d' ' -f2)"
    ' && g++ {flags} -x c++-header "$header" -o "$header.gch"'
).format(flags=" ".join(CPP_FLAGS))
# Python's "compile" step: parse only (nothing of the program runs), in a child process under
# the compile limits like any compiler, so a syntax bomb (a literal or f-string that explodes
# the parser in time or memory) is the program's compile_error, never a stuck judge.
# It also leaves the compiled code, marshalled, in PYTHON_CODE_CACHE: every test then loads it
# instead of compiling the source again (compiling is most of a trivial test's CPU in a fork).
# Compiled exactly as the interpreter compiles a script (absolute path, no inherited flags);
# a cache that cannot be written (over the file size limit) is simply not used.
PYTHON_CODE_CACHE = ".sol.code"
PYTHON_SYNTAX_CHECK = (
    "python3",
    "-I",
    "-S",
    "-B",
    "-c",
    "import marshal, os, sys\n"
    "src = open(sys.argv[1], 'rb').read()\n"
    "try:\n"
    "    code = compile(src, os.path.abspath(sys.argv[1]), 'exec', dont_inherit=True)\n"
    "except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError) as exc:\n"
    "    sys.exit(f'{type(exc).__name__}: {exc}')\n"
    "try:\n"
    "    data = marshal.dumps(code)\n"
    "    with open(sys.argv[2], 'wb') as handle:\n"
    "        handle.write(data)\n"
    "except (OSError, ValueError, MemoryError):\n"
    "    pass\n",
    "sol.py",
    PYTHON_CODE_CACHE,
)


# The JVM as every JVM language runs: small and quick to start (serial GC, C1 only, no perf
# data file), its heap sized from the container's memory so that the heap limit is reached
# before the container's: an uncaught OutOfMemoryError, its stack trace, exit status 1.
JVM_RUN = (
    "java",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:MaxRAMPercentage=75",
    "-XX:-UsePerfData",
    "-Xss64m",
    "-jar",
)
JVM_MEMORY_MARKERS = (b"java.lang.OutOfMemoryError",)
JVM_MEMORY_ERROR_LINE = rb'Exception in thread "main" java\.lang\.OutOfMemoryError(: .*)?'
JVM_STACK_TRACE = rb"\s+at .*|\s+\.\.\. \d+ more"
# TypeScript's "compile": the compiler's transpileModule strips the types (syntax errors are
# compile_error, as for JavaScript's `node --check`) and writes sol.js for node. No type
# check: bookworm packages no @types/node, without which `require`, `process` and any Node
# module are type errors in every stdio program, and Deno, Bun, esbuild and ts-node's
# transpile-only mode run TypeScript the same way.
TYPESCRIPT_TRANSPILE = (
    "node",
    "-e",
    'const fs = require("fs"), ts = require("/usr/share/nodejs/typescript");\n'
    'const out = ts.transpileModule(fs.readFileSync("sol.ts", "utf8"), {fileName: "sol.ts",'
    " reportDiagnostics: true, compilerOptions: {target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS}});\n"
    "if (out.diagnostics.length) {\n"
    "  console.error(ts.formatDiagnostics(out.diagnostics, {getCanonicalFileName: (f) => f,"
    ' getCurrentDirectory: () => ".", getNewLine: () => "\\n"}));\n'
    "  process.exit(1);\n"
    "}\n"
    'fs.writeFileSync("sol.js", out.outputText);\n',
)


@dataclass(frozen=True, slots=True)
class Language:
    name: str
    # Code-fence tags that mark a block as this language (lower-case).
    fence_tags: tuple[str, ...]
    source_file: str
    packages: tuple[str, ...]
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    # Files produced by `compile` that every test needs (kept by the supervisor, re-written
    # into a fresh work dir before each test).
    artifacts: tuple[str, ...] = ()
    # A file `compile` may leave with the program's compiled code (Python: marshalled); the
    # supervisor keeps it out of the work dir and hands it to each test (see in_container/supervisor.py).
    code_cache: str | None = None
    # Test formats besides stdio, and the command that runs one such test.
    harness: tuple[str, ...] | None = None
    formats: frozenset[str] = field(default_factory=lambda: frozenset({"stdio"}))
    # Failure markers at the end of stderr that mean "ran out of memory" when the main process
    # failed: a MemoryError traceback, std::bad_alloc's terminate message.
    memory_markers: tuple[bytes, ...] = ()
    # The stricter form the `code` verifier uses: a regex the LAST non-empty stderr line must
    # match in full (an uncaught MemoryError's final traceback line, bad_alloc's `what()`), so
    # a program that merely prints "MemoryError" and exits 1 is a runtime error.
    memory_error_line: bytes | None = None
    # ... and the signal the failure must have ended with (None: the exit status below).
    memory_error_signal: int | None = None
    # ... else the exit status it ends with (an uncaught Python exception exits 1).
    memory_error_exit_code: int = 1
    # A shell command run once when the image is built (as root, before any program exists):
    # caches that spare every program a cold toolchain start. Part of the image recipe.
    image_setup: str | None = None
    # ... and a line that must come before it (Python's traceback header).
    memory_error_after: bytes | None = None
    # Lines the runtime prints after that line (the JVM's stack trace), skipped before
    # looking for it.
    memory_error_trace: bytes | None = None
    # How much slower than C++ this language is allowed to be: its tests' time limit is the
    # problem's times this factor when the verdict asks for per-language limits (run_limits.
    # for_language; measured and chosen in docs/verifiers/code.md, "Per-language time limits").
    time_factor: float = 1.0


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language(
            name="python",
            fence_tags=("python", "py", "python3", "py3"),
            source_file="sol.py",
            packages=("python3",),
            # -I: no user site, no PYTHON* variables; it also halves start-up (12 -> 7 ms).
            run=("python3", "-I", "sol.py"),
            compile=PYTHON_SYNTAX_CHECK,
            code_cache=PYTHON_CODE_CACHE,
            harness=PYTHON_HARNESS,
            formats=frozenset({"stdio", "function", "assert"}),
            memory_markers=(b"MemoryError",),
            memory_error_line=rb"MemoryError(: .*)?",
            memory_error_after=b"Traceback (most recent call last):",
            time_factor=5.0,
        ),
        Language(
            name="c",
            fence_tags=("c", "h"),
            source_file="sol.c",
            packages=("gcc", "libc6-dev"),
            compile=("gcc", "-std=c11", "-O2", "-o", "sol", "sol.c", "-lm"),
            artifacts=("sol",),
            run=("./sol",),
        ),
        Language(
            name="cpp",
            fence_tags=("cpp", "c++", "cc", "cxx", "hpp"),
            source_file="sol.cpp",
            packages=("g++",),
            compile=CPP_COMPILE,
            artifacts=("sol",),
            run=("./sol",),
            image_setup=CPP_PRECOMPILED_HEADER,
            memory_markers=(b"std::bad_alloc",),
            memory_error_line=rb"\s*what\(\):\s+std::bad_alloc",
            memory_error_signal=signal.SIGABRT,
        ),
        # Java: the class is `Main` (the convention of judges; a `public class` must match its
        # file name). Classes go into one jar, whatever inner classes javac makes. The JVM is
        # made small and quick to start (serial GC, C1 only) and its heap sized from the
        # container's memory, whose cgroup limit decides memory_limit_exceeded.
        Language(
            name="java",
            fence_tags=("java",),
            source_file="Main.java",
            packages=("default-jdk-headless",),
            compile=(
                "sh",
                "-c",
                "javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -encoding UTF-8 -d classes Main.java"
                " && jar --create --file main.jar --main-class Main -C classes .",
            ),
            artifacts=("main.jar",),
            # The heap limit (-XX:MaxRAMPercentage) is reached before the container's: an
            # uncaught OutOfMemoryError, then its stack trace, and exit status 1.
            memory_markers=JVM_MEMORY_MARKERS,
            memory_error_line=JVM_MEMORY_ERROR_LINE,
            memory_error_trace=JVM_STACK_TRACE,
            run=(*JVM_RUN, "main.jar"),
            time_factor=2.0,
        ),
        Language(
            name="javascript",
            fence_tags=("javascript", "js", "node", "nodejs", "mjs"),
            source_file="sol.js",
            packages=("nodejs",),
            # Node's syntax check is a compile step like Python's: nothing of the program runs.
            compile=("node", "--check", "sol.js"),
            run=("node", "sol.js"),
            # Function tests: a top-level function (or module.exports member) called with JSON
            # arguments, its value returned as JSON (call_harness.js). C++, Java and Go compile a
            # harness with the program instead (typed_harness.py).
            harness=("node", "/opt/referee/call_harness.js"),
            formats=frozenset({"stdio", "function"}),
            time_factor=5.0,
        ),
        Language(
            name="go",
            fence_tags=("go", "golang"),
            source_file="main.go",
            packages=("golang-go",),
            # Debian's Go ships the standard library precompiled: no cold toolchain build. The
            # build cache goes to /tmp (scrubbed after the program); no cgo, a static binary.
            compile=(
                "env",
                "CGO_ENABLED=0",
                "GOCACHE=/tmp/go-cache",
                "GOPATH=/tmp/go",
                "go",
                "build",
                "-o",
                "sol",
                "main.go",
            ),
            artifacts=("sol",),
            run=("./sol",),
        ),
        Language(
            name="rust",
            fence_tags=("rust", "rs"),
            source_file="main.rs",
            packages=("rustc",),
            compile=("rustc", "--edition", "2021", "-O", "-o", "sol", "main.rs"),
            artifacts=("sol",),
            run=("./sol",),
        ),
        Language(
            name="ruby",
            fence_tags=("ruby", "rb"),
            source_file="sol.rb",
            packages=("ruby",),
            compile=("ruby", "-c", "sol.rb"),  # syntax only: prints "Syntax OK", runs nothing
            run=("ruby", "sol.rb"),
            # NoMemoryError's message, then its backtrace ("\tfrom sol.rb:3:in ...").
            memory_markers=(b"(NoMemoryError)",),
            memory_error_line=rb".*: failed to allocate memory \(NoMemoryError\)",
            memory_error_trace=rb"\s+from .*",
            time_factor=5.0,
        ),
        Language(
            name="php",
            fence_tags=("php",),
            source_file="sol.php",
            packages=("php-cli",),
            compile=("php", "-l", "sol.php"),
            run=("php", "sol.php"),
            # The CLI has no memory_limit (-1 in Debian's php.ini): the container's limit
            # decides, unless one allocation is refused outright (a fatal error, exit 255).
            memory_error_line=rb"PHP Fatal error:  Out of memory \(allocated \d+ bytes\) \(tried to allocate \d+ bytes\) in .* on line \d+",
            memory_error_exit_code=255,
            time_factor=3.0,
        ),
        Language(
            name="lua",
            fence_tags=("lua",),
            source_file="sol.lua",
            packages=("lua5.4",),
            compile=("luac5.4", "-p", "sol.lua"),  # -p: parse only, no luac.out
            run=("lua5.4", "sol.lua"),
            time_factor=3.0,
        ),
        Language(
            name="bash",
            fence_tags=("bash", "sh", "shell"),
            source_file="sol.sh",
            packages=("bash",),
            compile=("bash", "-n", "sol.sh"),  # -n: read and parse, execute nothing
            run=("bash", "sol.sh"),
            time_factor=5.0,
        ),
        Language(
            name="typescript",
            fence_tags=("typescript", "ts"),
            source_file="sol.ts",
            packages=("nodejs", "node-typescript"),
            compile=TYPESCRIPT_TRANSPILE,
            artifacts=("sol.js",),
            run=("node", "sol.js"),
            time_factor=5.0,
        ),
        # C#: Mono's compiler and runtime (bookworm has no .NET SDK). System.Numerics
        # (BigInteger) is referenced as judges do; System.Core (LINQ) is by default.
        Language(
            name="csharp",
            fence_tags=("csharp", "cs", "c#"),
            source_file="sol.cs",
            packages=("mono-mcs", "mono-runtime", "libmono-system-numerics4.0-cil"),
            compile=("mcs", "-optimize+", "-r:System.Numerics", "-out:sol.exe", "sol.cs"),
            artifacts=("sol.exe",),
            run=("mono", "sol.exe"),
            time_factor=2.0,
        ),
        Language(
            name="haskell",
            fence_tags=("haskell", "hs"),
            source_file="sol.hs",
            packages=("ghc",),
            # GHC's boot packages only (base, containers, array, bytestring, mtl, text...);
            # its interface and object files go to /tmp, scrubbed after the program.
            compile=("ghc", "-O", "-outputdir", "/tmp/ghc", "-o", "sol", "sol.hs"),
            artifacts=("sol",),
            run=("./sol",),
            # The RTS's message when an allocation is refused (its heap has no limit of its own).
            memory_error_line=rb"sol: out of memory",
            memory_error_exit_code=251,
            time_factor=2.0,
        ),
        Language(
            name="ocaml",
            fence_tags=("ocaml", "ml"),
            source_file="sol.ml",
            # ocaml-base spelled out: debootstrap does not resolve the virtual package
            # (ocaml-base-4.13.1) that ocaml depends on. Native code: ocamlopt links with gcc.
            packages=("ocaml-nox", "ocaml-base"),
            compile=("ocamlopt", "-o", "sol", "sol.ml"),
            artifacts=("sol",),
            run=("./sol",),
            memory_error_line=rb"Fatal error: exception Out_of_memory",
            memory_error_exit_code=2,
            time_factor=1.0,
        ),
        # Kotlin 1.3 (bookworm's): `readLine()!!`, not 1.6's `readln()`. The compiler runs on
        # the JVM with its heap sized from the compile's memory limit; the jar carries the
        # Kotlin runtime, so the program runs as Java's does.
        Language(
            name="kotlin",
            fence_tags=("kotlin", "kt", "kts"),
            source_file="sol.kt",
            packages=("kotlin",),
            compile=(
                "env",
                "JAVA_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:MaxRAMPercentage=75 -XX:-UsePerfData",
                "kotlinc",
                "-nowarn",
                "sol.kt",
                "-include-runtime",
                "-d",
                "main.jar",
            ),
            artifacts=("main.jar",),
            run=(*JVM_RUN, "main.jar"),
            memory_markers=JVM_MEMORY_MARKERS,
            memory_error_line=JVM_MEMORY_ERROR_LINE,
            memory_error_trace=JVM_STACK_TRACE,
            time_factor=2.0,
        ),
    )
}


def image_setup_commands() -> tuple[str, ...]:
    """The languages' image_setup commands, in table order (part of the recipe hash)."""
    return tuple(lang.image_setup for lang in LANGUAGES.values() if lang.image_setup)


def image_packages() -> tuple[str, ...]:
    """Every Debian package the sandbox image needs, sorted (part of the recipe hash)."""
    return tuple(sorted({pkg for lang in LANGUAGES.values() for pkg in lang.packages}))
