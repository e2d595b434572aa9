"""An endpoint's API key read from a file, as secret stores mount them (`api_key_file`).

The file is read when the clients are built, stripped; a file that cannot be read (missing,
empty, not text) sends nothing and makes the endpoint unhealthy with a reason naming the file,
never a key; the file is read again until it can be (a secret mounted late), and after a
401/403 (a key rotated by the store). The key is in no log, error, health report or repr.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from referee.judges import ChatFailure, ChatReply, ChatRequest, JudgeClients, Message
from referee.settings import JudgeEndpoint
from tests.judges.scripted_server import ChatServer, clients

KEY = "sk-from-a-mounted-secret-4242"
ROTATED = "sk-rotated-by-the-store-9191"


def ask(text: str = "Is 2+2=4?") -> ChatRequest:
    return ChatRequest("e", (Message("user", text),))


def on_file(url: str, path: Path) -> JudgeClients:
    return clients({"e": {"url": url, "api_key": None, "api_key_file": str(path)}})


async def test_the_key_is_read_from_the_file_stripped_and_sent(tmp_path: Path) -> None:
    secret = tmp_path / "judge_key"
    secret.write_text(f"  {KEY}\n")
    with ChatServer() as server:
        judges = on_file(server.url("ok"), secret)
        try:
            (reply,) = await judges.complete_many([ask()])
        finally:
            await judges.aclose()
    assert isinstance(reply, ChatReply)
    assert server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert judges.health()["e"]["ok"] is True and "reason" not in judges.health()["e"]


@pytest.mark.parametrize("content", [None, b"", b"\n  \n", b"\xff\xfe" + KEY.encode()])
async def test_an_unreadable_key_file_sends_nothing_and_is_reported(
    tmp_path: Path, content: bytes | None
) -> None:
    secret = tmp_path / "judge_key"
    if content is not None:
        secret.write_bytes(content)
    with ChatServer() as server:
        with capture_logs() as logs:
            judges = on_file(server.url("ok"), secret)
            try:
                (failure,) = await judges.complete_many([ask()])
                health = judges.health()["e"]
            finally:
                await judges.aclose()
    assert isinstance(failure, ChatFailure) and failure.kind == "no_key"
    assert str(secret) in failure.detail and "nothing sent" in failure.detail
    assert server.hits["ok"] == 0
    assert health["ok"] is False and health["reason"].startswith("API key unavailable: api_key_file")
    assert "judge_api_key_unreadable" in {e["event"] for e in logs}
    assert all(KEY not in repr(e) for e in logs) and KEY not in failure.detail and KEY not in repr(health)


async def test_a_key_mounted_late_or_rotated_is_read_again(tmp_path: Path) -> None:
    secret = tmp_path / "judge_key"
    with ChatServer() as server:
        judges = on_file(server.url("echo-auth"), secret)
        try:
            (first,) = await judges.complete_many([ask("one")])
            assert isinstance(first, ChatFailure) and first.kind == "no_key"
            secret.write_text(KEY)  # mounted: the next call reads it
            (refused,) = await judges.complete_many([ask("two")])
            assert judges.health()["e"]["ok"] is True
            secret.write_text(ROTATED)  # rotated: a 401 makes the endpoint read it again
            (stale,) = await judges.complete_many([ask("three")])
            (again,) = await judges.complete_many([ask("four")])
        finally:
            await judges.aclose()
    auth = [s.headers["authorization"] for s in server.seen]
    assert auth == [f"Bearer {KEY}", f"Bearer {KEY}", f"Bearer {ROTATED}"]
    # The server echoed each key: both are scrubbed from what is reported.
    for failure in (refused, stale, again):
        assert isinstance(failure, ChatFailure) and failure.kind == "refused"
        assert "[api key]" in failure.detail and KEY not in failure.detail and ROTATED not in failure.detail


def test_one_key_source_and_no_key_in_a_repr(tmp_path: Path) -> None:
    secret = tmp_path / "judge_key"
    secret.write_text(KEY)
    endpoint = JudgeEndpoint(url="http://gpu-node/v1", model="m", api_key_file=str(secret))
    assert endpoint.key() == KEY
    assert KEY not in repr(endpoint) and KEY not in endpoint.model_dump_json()
    built = on_file("http://127.0.0.1:9/v1", secret)
    assert KEY not in repr(built) and KEY not in repr(built.health())
    for other in ({"api_key": KEY}, {"api_key_env": "JUDGE_KEY"}):
        with pytest.raises(ValidationError, match="give one of") as caught:
            JudgeEndpoint(url="http://gpu-node/v1", model="m", api_key_file=str(secret), **other)  # type: ignore[arg-type]
        assert KEY not in str(caught.value)
