"""OpenRLHF's reward function file: Referee's OpenRLHF route, reached with the client's patience.

OpenRLHF's own HTTP client (``--reward.remote_url http://...``) tries a request 5 times, 1 s
apart, then keeps `reward: None` for the sample, and the step fails: a restart of the service
longer than ~5 s ends the run. Given a path to a ``.py`` file instead, OpenRLHF 0.11 calls its
``reward_func(queries, prompts, labels)`` (in a thread, one sample per call;
`openrlhf.utils.agent.SingleTurnAgentExecutor`), so point it at this file::

    --reward.remote_url $(python -c "import referee.trainer_adapter.openrlhf as m; print(m.__file__)")
    REFEREE_OPENRLHF_URL="http://HOST:8000/v1/openrlhf/reward?verifier=math&on_error=zero"

and the same route judges the same request (the URL is the one `--reward.remote_url` took),
through `referee.client`, which waits out a restarting or unreachable service for up to
``REFEREE_PATIENCE_S`` (default 900 s) before it raises. OpenRLHF passes nothing else to the
function, so the environment of its rollout actors configures it: ``REFEREE_OPENRLHF_URL``
(default ``http://127.0.0.1:8000/v1/openrlhf/reward``), ``REFEREE_API_KEY``,
``REFEREE_PATIENCE_S``. OpenRLHF loads the file under a module name of its own; the client is
kept by `connections`, one per process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from referee.trainer_adapter import connections

DEFAULT_ROUTE_URL = "http://127.0.0.1:8000/v1/openrlhf/reward"


def route(url: str) -> tuple[str, str, dict[str, str]]:
    """(service base URL, route path, query parameters) of a `--reward.remote_url`-style URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"REFEREE_OPENRLHF_URL must be an http(s) URL of the route, not {url!r}")
    return (
        f"{parts.scheme}://{parts.netloc}",
        parts.path or "/v1/openrlhf/reward",
        dict(parse_qsl(parts.query)),
    )


def patience_from(raw: str | None) -> connections.Patience:
    if raw is None or not raw.strip():
        return connections.Patience()
    try:
        return connections.Patience(patience_s=float(raw))
    except ValueError:
        raise ValueError(f"REFEREE_PATIENCE_S must be a number of seconds, not {raw!r}") from None


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
    """What OpenRLHF calls for a `.py` reward file: the route's answer, as a dict
    (`rewards`, `scores`, `extra_logs`), as its HTTP client would have read it."""
    base, path, params = route(os.environ.get("REFEREE_OPENRLHF_URL") or DEFAULT_ROUTE_URL)
    patience = patience_from(os.environ.get("REFEREE_PATIENCE_S"))
    client = connections.sync_client(base, os.environ.get("REFEREE_API_KEY") or None, patience)
    request = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
    return dict(client.openrlhf_reward(request, params=params, path=path).model_dump())
