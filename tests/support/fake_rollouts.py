"""A stand-in for the service's session and environment routes (issue 30's HTTP contract), for
the client's and the trainer adapters' tests that run without Docker.

It implements the contract's shapes exactly (`POST /v1/sessions`, `/run`, `DELETE`; the
environments' episodes, `step`, `verify`), with a kernel that is a namespace of this process
(`exec` of the code, the last expression's repr as the value, as a notebook shows it): it is
no sandbox, only for code the tests write. Sessions belong to the API key that opened them
(another key's id is 404). The `python` environment's verdict is an exact match of the final
message against the task's `reference`. What the tests inspect: `opened`, `closed`, `runs`,
`episodes`, `requests` (method and path of each request).
"""

from __future__ import annotations

import ast
import contextlib
import io
import secrets
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from referee.environments.python_env import format_call
from referee.service.background import free_port

PYTHON_TOOL = {
    "type": "function",
    "function": {
        "name": "python",
        "description": "Run Python code; state is kept between calls.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The code to run."}},
            "required": ["code"],
        },
    },
}
MAX_TURNS = 6


@dataclass
class FakeSession:
    id: str
    owner: str
    namespace: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    created_at: float = field(default_factory=time.time)


@dataclass
class FakeEpisode:
    id: str
    owner: str
    task: dict[str, Any]
    session: FakeSession
    turn: int = 0
    tool_calls: int = 0
    final: str | None = None
    done: bool = False


def run_cell(namespace: dict[str, Any], code: str) -> dict[str, Any]:
    """Jupyter-like: the statements, then the last expression's repr as the value."""
    out, err = io.StringIO(), io.StringIO()
    value = error = None
    status = "ok"
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            tree = ast.parse(code)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, "<cell>", "exec"), namespace)  # noqa: S102  # the tests' own code
            if last is not None:
                result = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)  # noqa: S307
                value = None if result is None else repr(result)
        except BaseException:
            status, error = "error", traceback.format_exc(limit=-1)
    return {
        "status": status,
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "value": value,
        "error": error,
        "duration_s": time.perf_counter() - started,
        "truncated": False,
        "restarted": False,
    }


class FakeRollouts:
    """The app and its state; `with FakeRollouts() as fake: Client(fake.url, api_key="k")`."""

    def __init__(self) -> None:
        self.sessions: dict[str, FakeSession] = {}
        self.episodes: dict[str, FakeEpisode] = {}
        self.opened = 0
        self.closed = 0
        self.runs = 0
        self.requests: list[tuple[str, str]] = []
        self.busy_opens = 0  # answer this many session/episode creations with 503 + Retry-After
        self._lock = threading.Lock()
        self.app = self._make_app()
        self.port = free_port()
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="fake-rollouts", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def open_ids(self, owner: str | None = None) -> list[str]:
        return [s.id for s in self.sessions.values() if owner is None or s.owner == owner]

    def __enter__(self) -> FakeRollouts:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake rollout server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    # --- the routes -------------------------------------------------------------------------

    def _open(self, owner: str) -> FakeSession:
        session = FakeSession(secrets.token_urlsafe(12), owner)
        self.sessions[session.id] = session
        self.opened += 1
        return session

    def _close(self, session: FakeSession) -> None:
        if self.sessions.pop(session.id, None) is not None:
            self.closed += 1

    def _run(self, session: FakeSession, code: str) -> dict[str, Any]:
        with self._lock:  # redirect_stdout is process-wide
            result = run_cell(session.namespace, code)
            session.calls += 1
            self.runs += 1
        return {**result, "call": session.calls}

    def _busy(self) -> JSONResponse | None:
        if self.busy_opens > 0:
            self.busy_opens -= 1
            return _error(503, "no_session_slot", "every session slot is taken", retry_after="1")
        return None

    def _make_app(self) -> FastAPI:
        app = FastAPI()

        @app.middleware("http")
        async def record(request: Request, call_next: Any) -> Response:
            self.requests.append((request.method, request.url.path))
            response: Response = await call_next(request)
            return response

        def owner(request: Request) -> str:
            return request.headers.get("authorization", "")

        def find(request: Request, session_id: str) -> FakeSession | None:
            session = self.sessions.get(session_id)
            return session if session is not None and session.owner == owner(request) else None

        @app.post("/v1/sessions", status_code=201)
        async def open_session(request: Request) -> Any:
            body = await request.json()
            if (busy := self._busy()) is not None:
                return busy
            if body.get("language", "python") != "python":
                return _error(422, "validation_error", f"unknown language {body.get('language')!r}")
            session = self._open(owner(request))
            files = dict(body.get("files") or {})
            if files:  # the work dir's files, readable with open(path) as in the sandbox
                session.namespace["open"] = lambda path, *args, **kwargs: io.StringIO(files[path])
            return {
                "id": session.id,
                "language": "python",
                "limits": {"call_time_s": 10.0, **(body.get("limits") or {})},
                "idle_ttl_s": body.get("idle_ttl_s") or 300.0,
                "max_lifetime_s": 3600.0,
                "created_at": session.created_at,
            }

        @app.post("/v1/sessions/{session_id}/run")
        async def run(session_id: str, request: Request) -> Any:
            session = find(request, session_id)
            if session is None:
                return _error(404, "not_found", "no such session")
            body = await request.json()
            return self._run(session, body["code"])

        @app.get("/v1/sessions/{session_id}")
        async def state(session_id: str, request: Request) -> Any:
            session = find(request, session_id)
            if session is None:
                return _error(404, "not_found", "no such session")
            return {"id": session.id, "language": "python", "calls": session.calls, "restarts": 0}

        @app.get("/v1/sessions")
        async def listing(request: Request) -> Any:
            mine = [s for s in self.sessions.values() if s.owner == owner(request)]
            return {
                "sessions": [
                    {"id": s.id, "language": "python", "calls": s.calls, "restarts": 0} for s in mine
                ]
            }

        @app.delete("/v1/sessions/{session_id}")
        async def close(session_id: str, request: Request) -> Any:
            session = find(request, session_id)
            if session is None:
                return _error(404, "not_found", "no such session")
            self._close(session)
            return Response(status_code=204)

        @app.get("/v1/environments")
        async def environments() -> Any:
            return [
                {
                    "name": "python",
                    "description": "Python code interpreter; the final answer judged",
                    "tools": [PYTHON_TOOL],
                    "max_turns": MAX_TURNS,
                }
            ]

        @app.post("/v1/environments/{name}/episodes", status_code=201)
        async def start(name: str, request: Request) -> Any:
            if name != "python":
                return _error(404, "not_found", f"no environment {name!r}")
            body = await request.json()
            if (busy := self._busy()) is not None:
                return busy
            task = body.get("task") or {}
            episode = FakeEpisode(secrets.token_urlsafe(12), owner(request), task, self._open(owner(request)))
            self.episodes[episode.id] = episode
            return {
                "episode_id": episode.id,
                "observation": task.get("prompt", ""),
                "tools": [PYTHON_TOOL],
                "done": False,
                "turn": 0,
                "max_turns": MAX_TURNS,
            }

        def episode_of(request: Request, name: str, episode_id: str) -> FakeEpisode | None:
            episode = self.episodes.get(episode_id)
            ok = episode is not None and name == "python" and episode.owner == owner(request)
            return episode if ok else None

        @app.post("/v1/environments/{name}/episodes/{episode_id}/step")
        async def step(name: str, episode_id: str, request: Request) -> Any:
            episode = episode_of(request, name, episode_id)
            if episode is None:
                return _error(404, "not_found", "no such episode")
            if episode.done:
                return _error(409, "episode_done", "the episode is over")
            action = (await request.json())["action"]
            episode.turn += 1
            info: dict[str, Any] = {}
            if action["type"] == "tool_call":
                if action["name"] != "python":
                    observation = f"unknown tool {action['name']!r}"
                else:
                    episode.tool_calls += 1
                    result = self._run(episode.session, action["arguments"].get("code", ""))
                    observation = format_call(SimpleNamespace(**result))  # the real environment's text
                    info["status"] = result["status"]
            else:
                episode.final = action["content"]
                observation = ""
            episode.done = action["type"] == "message" or episode.turn >= MAX_TURNS
            return {"observation": observation, "done": episode.done, "turn": episode.turn, "info": info}

        @app.post("/v1/environments/{name}/episodes/{episode_id}/verify")
        async def verify(name: str, episode_id: str, request: Request) -> Any:
            episode = episode_of(request, name, episode_id)
            if episode is None:
                return _error(404, "not_found", "no such episode")
            response = (await request.json()).get("response")
            answer = episode.final if response is None else response
            passed = answer is not None and answer.strip() == str(episode.task.get("reference", "")).strip()
            return {
                "score": 1.0 if passed else 0.0,
                "status": "ok",
                "verifier": f"{episode.task.get('verifier', 'exact')}@1",
                "details": {"turns": episode.turn, "tool_calls": episode.tool_calls},
            }

        @app.delete("/v1/environments/{name}/episodes/{episode_id}")
        async def end(name: str, episode_id: str, request: Request) -> Any:
            episode = episode_of(request, name, episode_id)
            if episode is None:
                return _error(404, "not_found", "no such episode")
            del self.episodes[episode_id]
            self._close(episode.session)
            return Response(status_code=204)

        return app


def _error(status: int, error: str, message: str, retry_after: str | None = None) -> JSONResponse:
    headers = {"Retry-After": retry_after} if retry_after else None
    return JSONResponse({"error": error, "message": message}, status_code=status, headers=headers)


@contextlib.contextmanager
def fake_rollouts() -> Iterator[FakeRollouts]:
    with FakeRollouts() as fake:
        yield fake
