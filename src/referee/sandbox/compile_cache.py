"""Compiled programs kept on the host, so the same program is compiled once, not once per
submission: RL samples the same solution many times (across groups, epochs, re-scoring), and a
C++ or Java compile costs 0.5-2 s of a core against milliseconds per test.

After a compile, the supervisor returns what the tests need: the language's artifacts (`sol`,
`main.jar`) or Python's compiled code, read right after the compiler ended and its processes
were killed, before any test of the program ran (in_container/supervisor.py,
compiled_program). The next submission of the same program sends them back instead of
compiling (`precompiled`); its `compiled` message says `cached`, with a compile time of 0.

Why this is safe: the key is a digest of everything that shapes the artifacts (the source
bytes, the file name, the compile command and its environment, the artifact names, and the
image, whose tag is the hash of its recipe: compilers, flags of precompiled headers, the
supervisor). A different program has a different key, so no program can put anything under
another's; and what is stored came out of the compiler, not out of the program, and only ever
runs in the sandbox, exactly as it would have after a fresh compile.

Compile errors are kept too, as the same source fails the same way, but only errors the
compiler diagnosed (it exited non-zero, in under half its time, without an OOM kill or a peak
over the memory limit: the supervisor decides), and served only under the same compile limits
(javac's heap, say, is a share of the memory limit). A timeout or a kill is never kept: the
next try might compile.

Bounded by bytes (`SandboxSettings.compile_cache_bytes`, 0 disables it), least recently used
out first. It lives in the pool's event loop: no locking.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from referee.sandbox.hardening import CANDIDATE_ENV
from referee.sandbox.protocol import Job

# One entry's cap: a Go or Rust binary is a few MB, a C++ one tens of KB, a jar a few KB.
ENTRY_MAX_BYTES = 16 << 20
# What an entry costs beyond its bytes (key, dict slots, objects), counted against the bound.
ENTRY_OVERHEAD_BYTES = 256

CompileLimits = tuple[float, int, int, int]


def compile_limits(job: Job) -> CompileLimits:
    """The limits a compile ran under: a failure is served again only under the same ones."""
    lim = job.limits
    return (lim.compile_timeout_s, lim.memory_mb, lim.file_size_mb, lim.open_files)


def program_key(job: Job, image: str) -> str:
    """A digest of everything that shapes a compile's artifacts (see the module doc)."""
    lang = job.language
    shape = {
        "image": image,
        "language": lang.name,
        "source_file": lang.source_file,
        "compile": list(lang.compile or ()),
        "artifacts": list(lang.artifacts),
        "code_cache": lang.code_cache,
        "env": sorted(CANDIDATE_ENV.items()),
        # The problem's extra files can be compiled in (a header): the same source with other
        # files is another program.
        "files": [[name, hashlib.sha256(data).hexdigest()] for name, data in sorted(job.files)],
    }
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode())
    digest.update(b"\0")  # the header is JSON (no NUL): nothing of the source can pose as it
    digest.update(job.source)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class CompiledProgram:
    """One compile's outcome as the tests need it."""

    ok: bool
    output: str
    files: dict[str, tuple[bytes, int]]  # artifact name -> (content, mode)
    code: bytes | None  # Python's compiled code (Language.code_cache)
    failed_under: CompileLimits | None  # a failure's compile limits

    @property
    def size(self) -> int:
        content = sum(len(data) for data, _ in self.files.values()) + len(self.code or b"")
        return content + len(self.output) + ENTRY_OVERHEAD_BYTES

    @classmethod
    def from_message(cls, msg: dict[str, Any], limits: CompileLimits) -> CompiledProgram | None:
        """The entry a `compiled` message carries, or None when it carries none."""
        program = msg.get("program")
        if not isinstance(program, dict):
            return None
        ok = bool(msg["ok"])
        code = program.get("code")
        return cls(
            ok=ok,
            output=str(msg.get("output", "")),
            files={
                name: (base64.b64decode(data), int(mode)) for name, (data, mode) in program["files"].items()
            },
            code=base64.b64decode(code) if code is not None else None,
            failed_under=None if ok else limits,
        )

    def request_payload(self) -> dict[str, Any]:
        """The request's `precompiled` field."""
        return {
            "ok": self.ok,
            "output": self.output,
            "files": {
                name: [base64.b64encode(data).decode(), mode] for name, (data, mode) in self.files.items()
            },
            "code": base64.b64encode(self.code).decode() if self.code is not None else None,
        }


class CompileCache:
    """Compiled programs by program_key(), bounded by bytes, least recently used out first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, CompiledProgram] = OrderedDict()
        self.bytes = 0
        self.stats = {"hits": 0, "misses": 0, "stored": 0, "evicted": 0}

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    @property
    def entry_max_bytes(self) -> int:
        """The most artifact bytes one compile may return for the cache."""
        return min(ENTRY_MAX_BYTES, self.max_bytes)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, limits: CompileLimits) -> CompiledProgram | None:
        entry = self._entries.get(key)
        if entry is None or (not entry.ok and entry.failed_under != limits):
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: CompiledProgram) -> None:
        if entry.size > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self._entries[key] = entry
        self.bytes += entry.size
        self.stats["stored"] += 1
        while self.bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.bytes -= evicted.size
            self.stats["evicted"] += 1

    def for_job(self, job: Job, image: str) -> CachedCompile | None:
        """The job's view of the cache (a hit or a miss counted); None when the cache is off or
        the language compiles nothing."""
        if not self.enabled or not job.language.compile:
            return None
        key, limits = program_key(job, image), compile_limits(job)
        entry = self.get(key, limits)
        self.stats["hits" if entry is not None else "misses"] += 1
        return CachedCompile(self, key, limits, entry)


class CachedCompile:
    """One submission's compile as the cache sees it: the entry to send instead of compiling,
    or the key its compile is stored under. Once stored, the entry also serves the tests that
    move to another container (a supervisor lost mid-run): they are not compiled again."""

    def __init__(
        self, cache: CompileCache, key: str, limits: CompileLimits, entry: CompiledProgram | None
    ) -> None:
        self._cache, self._key, self._limits = cache, key, limits
        self.entry = entry

    def request_fields(self) -> dict[str, Any]:
        """encode_request's keyword arguments for this compile."""
        if self.entry is not None:
            return {"precompiled": self.entry.request_payload()}
        return {"return_compiled_bytes": self._cache.entry_max_bytes}

    def compiled(self, msg: dict[str, Any]) -> None:
        """The supervisor's `compiled` message: store what it returned, if anything."""
        if msg.get("cached") or self.entry is not None:
            return
        entry = CompiledProgram.from_message(msg, self._limits)
        if entry is not None:
            self._cache.put(self._key, entry)
            self.entry = entry
