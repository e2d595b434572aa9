"""The sandbox pool's compile cache on /metrics: hits, misses, evictions and the bytes it holds,
read at scrape time."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from referee.sandbox import LANGUAGES, Job, Limits, SandboxPool
from referee.sandbox.compile_cache import ENTRY_OVERHEAD_BYTES, CompiledProgram
from referee.sandbox.settings import SandboxSettings
from referee.service.metrics import _CompileCacheCollector


def test_the_compile_cache_figures_are_scraped_as_they_are_now() -> None:
    sandbox = SandboxPool(
        SandboxSettings(enabled=False, compile_cache_bytes=2 * (1000 + ENTRY_OVERHEAD_BYTES))
    )
    limits = Limits(time_s=1.0, memory_mb=64, stdout_bytes=1024, stderr_bytes=1024, compile_timeout_s=5.0)
    registry = CollectorRegistry()
    registry.register(_CompileCacheCollector(sandbox))
    binary = CompiledProgram(
        ok=True, output="", files={"sol": (b"x" * 1000, 0o755)}, code=None, failed_under=None
    )
    for i in range(3):  # three programs, each compiled once and found once; the first is evicted
        job = Job(LANGUAGES["cpp"], "stdio", f"int main(){{return {i};}}".encode(), (), limits)
        miss = sandbox.compile_cache.for_job(job, sandbox.image)
        assert miss is not None and miss.entry is None
        miss.compiled(
            {"type": "compiled", "ok": True, "program": binary.request_payload() | {"output": None}}
        )
        assert sandbox.compile_cache.for_job(job, sandbox.image) is not None
    text = generate_latest(registry).decode()
    assert "referee_sandbox_compile_cache_hits_total 3.0" in text
    assert "referee_sandbox_compile_cache_misses_total 3.0" in text
    assert "referee_sandbox_compile_cache_evictions_total 1.0" in text
    assert f"referee_sandbox_compile_cache_bytes {2 * (1000 + ENTRY_OVERHEAD_BYTES)}.0" in text
