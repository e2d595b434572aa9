"""verl custom reward functions backed by a Referee service.

Load them by package path, which works on every verl path (Ray workers import the module by
name, nothing is pickled by value)::

    reward.custom_reward_function.path=pkg://referee.trainer_adapter.verl
    reward.custom_reward_function.name=compute_score_async      # or compute_score / compute_score_batch
    reward.custom_reward_function.reward_kwargs.url=http://referee:8000

Which function for which reward manager (verl 0.9, `verl/experimental/reward_loop` and
`verl/workers/reward_manager`):
- the reward loop's `naive`/`dapo` managers await a coroutine function natively, one call per
  sample, all at once: `compute_score_async` sends each burst as ONE grouped request;
- a plain function is called per sample in a thread (`NaiveRewardManager`): `compute_score`,
  one request per sample;
- `BatchRewardManager` calls ``compute_score(data_sources=..., solution_strs=...,
  ground_truths=..., extra_infos=...)`` once per batch: `compute_score_batch` (chunked and
  sent concurrently whatever the batch size);
- `PrimeRewardManager` runs the function in a process pool and needs a float: keep the default
  ``return_dict=False`` there (a dict would be scored 0 by its float conversion).
The file-path form (``path=/.../verl.py``) works too: this module keeps no client, lock or loop
in its globals (see `connections`), so verl's by-value pickling of a file-loaded module is safe.

``reward_kwargs`` may set `url`, `api_key`, `verifier`, `options`, `error_score`,
`return_dict` and `turns` (an agent loop's episode: its last assistant turn by default, see
`referee.turns`). The service URL defaults to the ``REFEREE_URL`` environment variable.

Which verifier judges a sample, first match wins:
1. ``extra_info["verifier"]`` (and ``extra_info["verifier_options"]``);
2. the `verifier` keyword (one verifier for the whole run);
3. ``DATA_SOURCES[data_source]`` (well-known dataset names);
4. the data source itself, so a dataset may name a Referee verifier (``logic.sudoku_4x4``).

verl cannot mask a sample, so a sample with no verdict (`status: "error"`, including a row
whose reference is invalid: one bad row never fails the batch) scores `error_score` (default
0.0); with ``return_dict=True`` the result is ``{"score": s, "referee_error": 0.0 | 1.0}`` and
verl puts every key into `reward_extra_info`, so the error rate shows up in its logs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from referee.grouping import Sample, VerifierSpec, component_scores, group_samples, plain, scatter_verdicts
from referee.models import AdvantageConfig, JSONObject, Verdict, VerdictStatus, VerifierComponent
from referee.trainer_adapter import connections
from referee.turns import Turns, select_turns

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
    "primeintellect": "code",
    "livecodebench": "code",
}


def _service(url: str | None, api_key: str | None) -> tuple[str, str | None]:
    return url or os.environ.get("REFEREE_URL", DEFAULT_URL), api_key or os.environ.get("REFEREE_API_KEY")


def _client(url: str | None, api_key: str | None) -> Any:
    # No client, lock or loop in this module's globals: verl may load this file under a name
    # of its own and cloudpickle its functions by value (see trainer_adapter/connections.py).
    return connections.sync_client(*_service(url, api_key))


def resolve_verifier(
    data_source: str, extra_info: dict[str, Any] | None, verifier: str | None, options: JSONObject | None
) -> tuple[VerifierSpec, JSONObject]:
    info = extra_info or {}
    if isinstance(info.get("verifier"), str):
        return info["verifier"], dict(info.get("verifier_options") or options or {})
    if isinstance(info.get("verifier"), list | tuple):  # weighted components, e.g. format + math
        return [VerifierComponent.model_validate(plain(c)) for c in info["verifier"]], {}
    if verifier:
        return verifier, dict(options or {})
    return DATA_SOURCES.get(data_source, data_source), dict(options or {})


def _result(verdict: Verdict, error_score: float, return_dict: bool) -> float | dict[str, float]:
    ok = verdict.status is VerdictStatus.ok and verdict.score is not None
    score = float(verdict.score) if ok and verdict.score is not None else error_score
    if not return_dict:
        return score
    result = {"score": score, "referee_error": 0.0 if ok else 1.0}
    # Each weighted component's score (verl logs every key of reward_extra_info as a mean;
    # numbers only, so a component without a score counts as error_score, flagged above).
    for name, (part,) in component_scores([verdict]).items():
        result[f"referee/{name}"] = float(part) if part is not None else error_score
    return result


def _sample(
    data_source: str,
    solution: str,
    truth: Any,
    info: dict[str, Any] | None,
    verifier: str | None,
    options: JSONObject | None,
    turns: Turns,
) -> Sample:
    """One verl sample as Referee judges it: its verifier (see the module docstring) and, for an
    agent loop's episode, its chosen assistant turn(s)."""
    name, opts = resolve_verifier(data_source, info, verifier, options)
    return Sample(response=select_turns(solution, turns), reference=truth, verifier=name, options=opts)


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
    turns: Turns = "last",
    **_: Any,
) -> list[float | dict[str, float]]:
    """Batched form (verl's BatchRewardManager): one `/v1/groups` request for the whole batch."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    samples = [
        _sample(source, solution, truth, info, verifier, options, turns)
        for source, solution, truth, info in zip(
            data_sources, solution_strs, ground_truths, infos, strict=True
        )
    ]
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


async def compute_score_async(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    url: str | None = None,
    api_key: str | None = None,
    verifier: str | None = None,
    options: JSONObject | None = None,
    error_score: float = 0.0,
    return_dict: bool = False,
    turns: Turns = "last",
    **_: Any,
) -> float | dict[str, float]:
    """Per-sample, awaited (verl's reward loop awaits a coroutine function natively, one call per
    sample, all at once): the concurrent calls of a step are sent as one grouped request."""
    sample = _sample(data_source, solution_str, ground_truth, extra_info, verifier, options, turns)
    verdict = await connections.batcher(*_service(url, api_key)).judge(sample)
    return _result(verdict, error_score, return_dict)
