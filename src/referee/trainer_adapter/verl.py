"""verl custom reward functions backed by a Referee service.

verl loads a reward function from a file (``custom_reward_function.path``/``.name``) and calls
``compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)`` per
sample (NaiveRewardManager) or the batched form with plural keyword names (BatchRewardManager).
``reward_kwargs`` come from ``custom_reward_function.reward_kwargs`` and may set `url`,
`verifier`, `options`, `error_score` and `return_dict`.

Which verifier judges a sample, first match wins:
1. ``extra_info["verifier"]`` (and ``extra_info["verifier_options"]``);
2. the `verifier` keyword (one verifier for the whole run);
3. ``DATA_SOURCES[data_source]`` (well-known dataset names);
4. the data source itself, so a dataset may name a Referee verifier (``logic.sudoku_4x4``).

verl cannot mask a sample, so a sample with no verdict (`status: "error"`) scores
`error_score` (default 0.0); with ``return_dict=True`` the result is
``{"score": s, "referee_error": 0.0 | 1.0}`` so the error rate shows up in verl's logs.
The service URL defaults to the ``REFEREE_URL`` environment variable.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from referee.grouping import Sample, group_samples, scatter_verdicts
from referee.models import AdvantageConfig, JSONObject, Verdict, VerdictStatus

DEFAULT_URL = "http://127.0.0.1:8000"

# Common verl data sources and the Referee verifier that judges them.
DATA_SOURCES: dict[str, str] = {
    "openai/gsm8k": "math",
    "lighteval/MATH": "math",
    "DigitalLearningGmbH/MATH-lighteval": "math",
    "HuggingFaceH4/MATH-500": "math",
    "math_dapo": "math",
    "aime2024": "math",
    "aime2025": "math",
    "codecontests": "code",
    "apps": "code",
    "taco": "code",
    "codeforces": "code",
}

_clients: dict[tuple[int, str, str | None], Any] = {}
_lock = threading.Lock()


def _client(url: str | None, api_key: str | None) -> Any:
    url = url or os.environ.get("REFEREE_URL", DEFAULT_URL)
    api_key = api_key or os.environ.get("REFEREE_API_KEY")
    # One pooled client per process (verl forks reward workers; a client must not cross a fork).
    key = (os.getpid(), url, api_key)
    with _lock:
        client = _clients.get(key)
        if client is None:
            from referee.client import Client

            client = _clients[key] = Client(url, api_key=api_key)
    return client


def resolve_verifier(
    data_source: str, extra_info: dict[str, Any] | None, verifier: str | None, options: JSONObject | None
) -> tuple[str, JSONObject]:
    info = extra_info or {}
    if isinstance(info.get("verifier"), str):
        return info["verifier"], dict(info.get("verifier_options") or options or {})
    if verifier:
        return verifier, dict(options or {})
    return DATA_SOURCES.get(data_source, data_source), dict(options or {})


def _result(verdict: Verdict, error_score: float, return_dict: bool) -> float | dict[str, float]:
    ok = verdict.status is VerdictStatus.ok and verdict.score is not None
    score = float(verdict.score) if ok and verdict.score is not None else error_score
    if return_dict:
        return {"score": score, "referee_error": 0.0 if ok else 1.0}
    return score


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    *,
    url: str | None = None,
    api_key: str | None = None,
    verifier: str | None = None,
    options: JSONObject | None = None,
    error_score: float = 0.0,
    return_dict: bool = False,
    **_: Any,
) -> list[float | dict[str, float]]:
    """Batched form (verl's BatchRewardManager): one `/v1/groups` request for the whole batch."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    samples = []
    for source, solution, truth, info in zip(data_sources, solution_strs, ground_truths, infos, strict=True):
        name, opts = resolve_verifier(source, info, verifier, options)
        samples.append(Sample(response=solution, reference=truth, verifier=name, options=opts))
    specs, where = group_samples(samples)
    if not specs:
        return []
    results = _client(url, api_key).score_groups(specs, AdvantageConfig(), on_invalid="error_verdict").groups
    return [_result(v, error_score, return_dict) for v in scatter_verdicts(results, where)]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> float | dict[str, float]:
    """Per-sample form (verl's NaiveRewardManager / default `custom_reward_function`)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]
