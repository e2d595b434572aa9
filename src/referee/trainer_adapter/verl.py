"""verl custom reward functions backed by a Referee service.

Load them by package path, which works on every verl path (Ray workers import the module by
name, nothing is pickled by value)::

    reward.custom_reward_function.path=pkg://referee.trainer_adapter.verl
    reward.custom_reward_function.name=compute_score_async      # or compute_score
    +reward.custom_reward_function.reward_kwargs.url=http://referee:8000

(the ``+``: verl 0.9.1's configuration has no `reward_kwargs` key, and Hydra refuses to set a
missing key without it).

Which function for which reward manager. verl 0.9.1's trainers score through the reward loop
(`verl/experimental/reward_loop`, `reward.reward_manager.name`: `naive` by default, `dapo`,
`gdpo`, `rate_limited`; `remote` takes only a plain function), one call per sample, a
coroutine function awaited natively, a plain one run in a thread pool. With a rule-based reward
(no reward model: the default) the agent loop streams: each trajectory is scored as soon as it
finishes. Otherwise each reward worker gets its share of the batch and scores it all at once.
- `compute_score_async`: the calls in flight together go out as ONE grouped request (a worker's
  whole share; when streaming, the trajectories that finish within milliseconds of each other);
- `compute_score`: one request per sample.
The managers of `verl/workers/reward_manager` (earlier verl trainers' interface, still shipped):
- `NaiveRewardManager`, `DAPORewardManager`: `compute_score`, per sample;
- `BatchRewardManager` calls ``compute_score(data_sources=..., solution_strs=...,
  ground_truths=..., extra_infos=...)`` once per batch: `compute_score_batch` (chunked and
  sent concurrently whatever the batch size);
- `PrimeRewardManager` runs `compute_score` in a process pool and needs a float: keep the
  default ``return_dict=False`` there (it reads a dict as ``result[0]``, fails, and scores the
  whole batch 0).
The file-path form (``path=/.../verl.py``) works too. verl runs the file under a name of its own
(``custom_module_<hash>``, not in `sys.modules`), so plain `pickle` could not find its functions
(PRIME's process pool: every sample would score 0) and cloudpickle would copy them by value; so
a copy loaded that way hands out this package module's functions instead, which pickle by
reference. Either way this module keeps no client, lock or loop in its globals (see
`connections`).

``reward_kwargs`` may set `url`, `api_key`, `verifier`, `options`, `error_score`,
`return_dict`, `turns` (an agent loop's episode: its last assistant turn by default, see
`referee.turns`), and `patience_s` / `retries`: how long a call waits out a service that is
restarting, unreachable or overloaded before it raises (default 900 s, see `referee.client`),
so a restart of the service pauses the step instead of ending the run. The service URL
defaults to the ``REFEREE_URL`` environment variable.

Which verifier judges a sample, first match wins:
1. ``extra_info["verifier"]`` (and ``extra_info["verifier_options"]``);
2. the `verifier` keyword (one verifier for the whole run);
3. ``DATA_SOURCES[data_source]`` (well-known dataset names);
4. the data source itself, so a dataset may name a Referee verifier (``logic.sudoku_4x4``).

verl cannot mask a sample, so a sample with no verdict (`status: "error"`, including a row
whose reference is invalid: one bad row never fails the batch) scores `error_score` (default
0.0); with ``return_dict=True`` the result is ``{"score": s, "referee_error": 0.0 | 1.0, ...}``
and verl puts every key into `reward_extra_info` (its validation metrics average each key per
data source; its training batch and rollout dumps carry them per sample).

Prompt ids (the service's per-prompt statistics), first match wins:
1. ``extra_info["prompt_id"]``;
2. ``extra_info["index"]`` with the data source (and ``extra_info["split"]`` when present,
   so train row 17 and test row 17 differ): ``openai/gsm8k:train:17``, as verl's
   `examples/data_preprocess` scripts store them;
3. a digest of ``extra_info["question"]`` or ``extra_info["prompt"]``;
4. none (verl does not pass the prompt to a reward function).

Zero-variance share. The batched form adds ``"referee/zero_variance"`` (1.0 when the sample's
group had no reward spread, as the service computed it) to a ``return_dict`` result: it sees
the whole batch at once (verl's `BatchRewardManager`), so its mean over the batch is the share of
samples in groups GRPO learns nothing from. The per-sample forms leave it out: verl 0.9.1's
reward loop hands them one trajectory at a time as each agent loop finishes, on one of
`reward.num_workers` actors picked at random, so a prompt's samples seldom reach one process
together, and a flag computed over part of a group says "no spread" for almost every sample
(measured: 0.95-0.99 against a true 0.39). Per group uid the share is the share of groups whose
``score`` (``acc`` for a float result) has no spread: what DAPO's ``filter_groups`` computes.

Multi-turn episodes. verl decodes a response with ``skip_special_tokens=True``, which drops the
chat template's turn markers: an agent loop's episode then reaches these functions as one text
whose assistant turns cannot be found, and is judged whole (a warning says so when verl's
``extra_info["num_turns"]`` shows more than one exchange). The reward managers of
`referee.trainer_adapter.verl_managers` keep the markers, so `turns` finds the turns.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from referee.grouping import Sample, VerifierSpec, component_scores, group_samples, plain, prompt_fingerprint
from referee.models import AdvantageConfig, JSONObject, VerdictStatus, VerifierComponent
from referee.trainer_adapter import connections
from referee.trainer_adapter.prompt_ids import as_prompt_id
from referee.turns import Turns, assistant_turns, select_turns

__all__ = [
    "DATA_SOURCES",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "resolve_prompt_id",
    "resolve_verifier",
]

DEFAULT_URL = "http://127.0.0.1:8000"
_PACKAGE_MODULE = "referee.trainer_adapter.verl"

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


def _client(url: str | None, api_key: str | None, patience: connections.Patience) -> Any:
    # No client, lock or loop in this module's globals: verl may load this file under a name
    # of its own and cloudpickle its functions by value (see trainer_adapter/connections.py).
    return connections.sync_client(*_service(url, api_key), patience)


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


def resolve_prompt_id(data_source: str, extra_info: dict[str, Any] | None) -> str | None:
    """The prompt id of a verl row (see the module docstring); None when the row names none."""
    info = extra_info or {}
    explicit = as_prompt_id(info.get("prompt_id"))
    if explicit is not None:
        return explicit
    index = as_prompt_id(info.get("index"))
    if index is not None:
        split = info.get("split")
        parts = (
            [str(data_source), split, index]
            if isinstance(split, str) and split
            else [str(data_source), index]
        )
        return as_prompt_id(":".join(parts))
    for key in ("question", "prompt"):
        text = plain(info.get(key))
        if text:
            return prompt_fingerprint(text)
    return None


def _result(
    judged: connections.Judged,
    spec: VerifierSpec,
    error_score: float,
    return_dict: bool,
    with_zero_variance: bool = False,
) -> float | dict[str, float]:
    verdict = judged.verdict
    ok = verdict.status is VerdictStatus.ok and verdict.score is not None
    score = float(verdict.score) if ok and verdict.score is not None else error_score
    if not return_dict:
        return score
    result = {"score": score, "referee_error": 0.0 if ok else 1.0}
    # Each weighted component's score (verl logs every key of reward_extra_info as a mean;
    # numbers only, so a component without a score counts as error_score, flagged above).
    # Every component of the sample's spec gets its key, even when the verdict has none (an
    # invalid reference): verl 0.9.1's RewardLoopManager reads the first sample's keys from
    # every sample, so a missing key would fail the step (KeyError).
    parts = component_scores([verdict])
    names = [c.name.split("@")[0] for c in spec] if isinstance(spec, list) else []
    for name in dict.fromkeys([*names, *parts]):
        part = parts.get(name, [None])[0]
        result[f"referee/{name}"] = float(part) if part is not None else error_score
    if with_zero_variance:  # every sample of the batch gets it (verl reads the first one's keys from all)
        result["referee/zero_variance"] = 1.0 if judged.zero_variance else 0.0
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
    _warn_if_turns_were_decoded_away(solution, info)
    return Sample(
        response=select_turns(solution, turns),
        reference=truth,
        verifier=name,
        options=opts,
        prompt_id=resolve_prompt_id(data_source, info),
    )


def _warn_if_turns_were_decoded_away(solution: str, info: dict[str, Any] | None) -> None:
    """verl counts an episode's turns (user, assistant and tool messages, the prompt's included)
    in ``extra_info["num_turns"]``: above 2 the response holds several assistant turns, and a
    text with no turn markers lost them to verl's ``skip_special_tokens=True``."""
    try:
        num_turns = int((info or {}).get("num_turns") or 0)
    except (TypeError, ValueError):
        return
    if num_turns > 2 and assistant_turns(solution) == [solution]:
        warnings.warn(
            f"a {num_turns}-turn episode reached Referee without its chat template's turn markers "
            "(verl decodes with skip_special_tokens=True), so it is judged whole: use a reward "
            "manager of referee.trainer_adapter.verl_managers",
            RuntimeWarning,
            stacklevel=3,
        )


def _score_batch(
    samples: list[Sample], url: str | None, api_key: str | None, patience: connections.Patience
) -> list[connections.Judged]:
    """One `/v1/groups` call (chunked when large) for `samples`; each sample's outcome."""
    specs, where = group_samples(samples)
    if not samples:
        return []
    client = _client(url, api_key, patience)
    results = (
        client.score_groups(specs, AdvantageConfig(), on_invalid="error_verdict").groups if specs else []
    )
    return connections.judged(results, where)


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
    patience_s: float | None = None,
    retries: int | None = None,
    **_: Any,
) -> list[float | dict[str, float]]:
    """Batched form (verl's BatchRewardManager): one `/v1/groups` request for the whole batch;
    with `return_dict`, each sample's `referee/zero_variance` (the batch holds whole groups)."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    samples = [
        _sample(source, solution, truth, info, verifier, options, turns)
        for source, solution, truth, info in zip(
            data_sources, solution_strs, ground_truths, infos, strict=True
        )
    ]
    outcomes = _score_batch(samples, url, api_key, connections.Patience(patience_s, retries))
    return [
        _result(o, s.verifier, error_score, return_dict, with_zero_variance=True)
        for o, s in zip(outcomes, samples, strict=True)
    ]


def compute_score(
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
    patience_s: float | None = None,
    retries: int | None = None,
    **_: Any,
) -> float | dict[str, float]:
    """Per-sample form (verl's NaiveRewardManager / default `custom_reward_function`): a group of
    one, so its result has no `referee/zero_variance` key (a lone sample never has spread)."""
    sample = _sample(data_source, solution_str, ground_truth, extra_info, verifier, options, turns)
    [outcome] = _score_batch([sample], url, api_key, connections.Patience(patience_s, retries))
    return _result(outcome, sample.verifier, error_score, return_dict)


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
    patience_s: float | None = None,
    retries: int | None = None,
    **_: Any,
) -> float | dict[str, float]:
    """Per-sample, awaited (verl's reward loop awaits a coroutine function natively, one call per
    sample): concurrent calls are sent as one grouped request. No `referee/zero_variance`: the
    calls that arrive together are seldom a whole group (see the module docstring)."""
    sample = _sample(data_source, solution_str, ground_truth, extra_info, verifier, options, turns)
    patience = connections.Patience(patience_s, retries)
    outcome = await connections.batcher(*_service(url, api_key), patience).judge(sample)
    return _result(outcome, sample.verifier, error_score, return_dict)


if __name__ != _PACKAGE_MODULE:
    # Loaded from its file path by verl (`custom_module_<hash>`): hand out the package module's
    # functions, which every pickler finds by name (see the module docstring).
    import importlib

    globals().update({name: getattr(importlib.import_module(_PACKAGE_MODULE), name) for name in __all__})
