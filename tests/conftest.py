"""Fixtures every suite may use: the shared loopback server, a client of it, and the in-process
fake scorer. Where tests live, and why, is in tests/README.md."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.client import Client
from referee.service.background import BackgroundServer
from referee.settings import Settings
from tests.support.scorers import FakeScorer

# Set before anything imports torch: its OpenMP threads spin while they wait, so on the shared
# 2-core machines, with another process busy, the tiny test models trained ~10x slower with two
# threads than with one (tests/trainer_adapter/test_grpo_loop.py: 99 s against 9 s). They are
# too small to gain anything from a second thread. An explicit setting is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The `openai_server` and `tiny_chat_model` fixtures: `transformers serve` over a tiny local model.
pytest_plugins = ("tests.support.openai_server",)

REPO = Path(__file__).resolve().parents[1]
TEST_VERIFIERS = "tests.support.verifiers:TEST_VERIFIERS"


def make_settings(**overrides: object) -> Settings:
    base: dict[str, object] = {
        "workers": 2,
        "sandbox": False,
        "extra_verifiers": [TEST_VERIFIERS],
        "verdict_timeout_s": 2.0,
        # Never the user's database: every test server gets a fresh one.
        "db_path": Path(tempfile.mkdtemp(prefix="referee-test-")) / "referee.db",
    }
    base.update(overrides)
    return Settings(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def server() -> Iterator[BackgroundServer]:
    """A real uvicorn server on loopback, without the Docker sandbox."""
    with BackgroundServer(make_settings()) as running:
        yield running


@pytest.fixture(scope="session")
def client(server: BackgroundServer) -> Iterator[Client]:
    with Client(server.url, timeout=120) as c:
        yield c


@pytest.fixture(scope="session")
def referee_url(server: BackgroundServer) -> str:
    """The shared server's URL, for adapters and clients that take a URL."""
    return server.url


@pytest.fixture
def fake_scorer() -> FakeScorer:
    return FakeScorer()
