"""Reward functions for TRL's `GRPOTrainer(reward_funcs=[...])`.

TRL calls a reward function as ``f(prompts=..., completions=..., completion_ids=..., **columns)``
where every other dataset column arrives as a keyword list (one value per completion) together
with TRL's own extras (`trainer_state`, `log_extra`, `log_metric`). It expects one float per
completion, or None where the function has no opinion (TRL turns it into NaN and leaves the
sample out). Referee's `status: "error"` verdicts map to None for exactly that reason.

Masking is only honest with ONE reward function: TRL sums its reward functions ignoring NaN, so
with a separate format reward a sample whose correctness has no verdict would still be
rewarded for its format, exactly the partial reward masking exists to prevent. Give one
`RefereeReward` the weighted components instead::

    RefereeReward(url, verifier=[{"name": "format.think_answer", "weight": 0.1},
                                 {"name": "math", "weight": 1.0}], reference_column="answer")

The service adds the weighted scores, and a component without a verdict makes the whole
reward None. Each component's score goes to TRL's logs (`log_metric` means, `log_extra`
columns of the completions table, with the verdict's reason).

Each group carries a `prompt_id` for the service's per-prompt statistics: the row's value in
the `prompt_id_column` (by default a column named "prompt_id", when the dataset has one), else
a digest of the prompt. The share of groups without reward spread goes to TRL's logs as
`referee/zero_variance_share` (TRL averages it over the logging steps) and stays readable as
`last_zero_variance_share`. It is not TRL's `frac_reward_zero_std`, which is taken over the
weighted sum of ALL reward functions (see `ZERO_VARIANCE_METRIC`).

Each call is one `/v1/groups` call (sent as concurrent chunks when the batch is larger than a
request may be): completions of the same prompt and reference form a group, so the service
parses each reference once. A row whose reference is invalid gets None, never fails the batch.
This module does not import TRL or torch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from referee.grouping import (
    Sample,
    VerifierSpec,
    canonical_key,
    component_scores,
    group_samples,
    prompt_fingerprint,
    scatter_rewards,
    scatter_verdicts,
)
from referee.models import AdvantageConfig, GroupResult, JSONObject, Verdict
from referee.trainer_adapter.prompt_ids import as_prompt_id, zero_variance_share
from referee.turns import Turns, select_turns

# Keyword arguments TRL adds that are not dataset columns (trl 1.16,
# trl/trainer/grpo_trainer.py, GRPOTrainer._calculate_rewards).
_TRL_EXTRAS = ("trainer_state", "log_extra", "log_metric", "environments")
# The column a dataset's own prompt ids are read from when `prompt_id_column` is not given.
DEFAULT_PROMPT_ID_COLUMN = "prompt_id"
# The share of the groups this reward function scored in a call whose Referee reward has no
# spread, as the service counts it (its statistics' zero_variance_share; a group with fewer
# than two verdicts counts). TRL's own `frac_reward_zero_std` (trl 1.16,
# GRPOTrainer._generate_and_score_completions) is the share of completions whose group's
# weighted SUM of every reward function has no spread (the whole batch's spread with
# scale_rewards="batch" or normalize_then_sum), over the batch gathered from all processes, a
# group with fewer than two rewards not counted. They agree only when Referee is the one reward
# function, scale_rewards is "group" (the default), every process holds whole groups and every
# group has two verdicts or more. A second reward function (format, length) gives spread to
# groups Referee's reward cannot tell apart: TRL no longer counts them, this share still does
# (GRPO learns nothing there from Referee's part of the reward).
ZERO_VARIANCE_METRIC = "referee/zero_variance_share"
# Its name in Referee 0.1, logged as well (same value) until the next release drops it.
DEPRECATED_ZERO_VARIANCE_METRIC = "referee/zero_variance_fraction"


def completion_text(completion: Any, turns: Turns = "last") -> str:
    """The text to judge: a plain string, or (conversational) the chosen assistant turn(s)."""
    return select_turns(completion, turns)


class _RefereeRewardBase:
    """Shared configuration: which column holds the reference, which verifier judges."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        *,
        verifier: VerifierSpec = "exact",
        options: JSONObject | None = None,
        reference_column: str = "reference",
        verifier_column: str | None = None,
        options_column: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        patience_s: float | None = None,
        retries: int | None = None,
        name: str = "referee",
        turns: Turns = "last",
        prompt_id_column: str | None = None,
        prompt_ids: bool = True,
    ) -> None:
        """`prompt_id_column`: the dataset column holding each row's id (it must exist when
        named); by default a "prompt_id" column is used when the dataset has one, and a digest
        of the prompt otherwise (also for a row whose id is empty). `prompt_ids=False` sends no
        ids (the service then keeps no per-prompt statistics for these groups).

        `patience_s` (default 900): how long a call waits out a service that is restarting,
        unreachable or overloaded (refused or reset connections, 502/503/504) before it raises,
        so a restart of the service pauses training instead of ending it; `retries` caps the
        resends (None: patience alone decides). See `referee.client`."""
        self.url = url
        self.verifier = verifier
        self.options = dict(options or {})
        self.reference_column = reference_column
        self.verifier_column = verifier_column
        self.options_column = options_column
        self.api_key = api_key
        self.timeout = timeout
        self.patience_s = patience_s
        self.retries = retries
        self.turns = turns  # which assistant turn(s) of a conversational completion to judge
        self.prompt_id_column = prompt_id_column
        self.prompt_ids = prompt_ids
        # The zero-variance share of the latest call's groups (None before the first call).
        self.last_zero_variance_share: float | None = None
        # TRL names the reward in its logs after `__name__` (falling back to the class name).
        self.__name__ = name

    def _samples(
        self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]
    ) -> list[Sample]:
        if len(prompts) != len(completions):
            raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
        if self.reference_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in _TRL_EXTRAS)
            raise KeyError(f"dataset column {self.reference_column!r} not found; columns: {columns}")
        references = kwargs[self.reference_column]
        verifiers = kwargs[self.verifier_column] if self.verifier_column else None
        options = kwargs[self.options_column] if self.options_column else None
        ids = self._prompt_ids(prompts, kwargs)
        samples = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            samples.append(
                Sample(
                    response=completion_text(completion, self.turns),
                    reference=references[i],
                    verifier=verifiers[i] if verifiers is not None else self.verifier,
                    options=options[i] if options is not None and options[i] is not None else self.options,
                    # Completions of one prompt form one group (prompts may be message lists).
                    key=canonical_key(prompt),
                    prompt_id=ids[i],
                )
            )
        return samples

    def _prompt_ids(self, prompts: Sequence[Any], kwargs: dict[str, Any]) -> list[str | None]:
        """Each completion's prompt id: its row's id column, else a digest of its prompt. TRL
        repeats every column once per completion, so a prompt's G completions share the id."""
        if not self.prompt_ids:
            return [None] * len(prompts)
        column = self.prompt_id_column
        if column is not None and column not in kwargs:
            columns = sorted(k for k in kwargs if k not in _TRL_EXTRAS)
            raise KeyError(f"prompt id column {column!r} not found; columns: {columns}")
        values = kwargs.get(column or DEFAULT_PROMPT_ID_COLUMN)
        ids: list[str | None] = []
        for i, prompt in enumerate(prompts):
            found = as_prompt_id(values[i]) if values is not None else None
            ids.append(found if found is not None else prompt_fingerprint(prompt))
        return ids

    def _log(
        self,
        kwargs: dict[str, Any],
        results: list[GroupResult],
        verdicts: list[Verdict],
        rewards: list[float | None],
        seconds: float,
    ) -> None:
        """To TRL's logs: scalar metrics (`log_metric`: error and zero-variance fractions, request
        time, each weighted component's mean score) and per-completion columns of the completions
        table (`log_extra`: each component's score, the verdict's reason)."""
        log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
        log_extra: Callable[[str, list[Any]], None] | None = kwargs.get("log_extra")
        zero = self.last_zero_variance_share = zero_variance_share(results)
        if not rewards:
            return
        columns = component_scores(verdicts)
        if log_metric is not None:
            log_metric("referee/error_fraction", sum(r is None for r in rewards) / len(rewards))
            log_metric("referee/request_seconds", seconds)
            if zero is not None:
                log_metric(ZERO_VARIANCE_METRIC, zero)
                log_metric(DEPRECATED_ZERO_VARIANCE_METRIC, zero)
            for name, scores in columns.items():
                valid = [s for s in scores if s is not None]
                if valid:
                    log_metric(f"referee/{name}", sum(valid) / len(valid))
        if log_extra is not None:
            for name, scores in columns.items():
                log_extra(f"referee/{name}", scores)
            log_extra("referee/reason", [v.reason or "" for v in verdicts])

    def _client_settings(self) -> dict[str, Any]:
        # getattr: an instance pickled before these settings existed has none (then the defaults).
        return {
            "api_key": self.api_key,
            "timeout": self.timeout,
            "patience_s": getattr(self, "patience_s", None),
            "retries": getattr(self, "retries", None),
        }

    def __getstate__(self) -> dict[str, Any]:
        # Picklable (TRL and multiprocessing may copy reward functions): clients are rebuilt lazily.
        state = dict(self.__dict__)
        state["_client"] = None
        state["_clients"] = {}
        return state


class RefereeReward(_RefereeRewardBase):
    """Synchronous TRL reward function backed by a Referee service.

    >>> reward = RefereeReward("http://127.0.0.1:8000", verifier="exact", reference_column="answer")
    >>> GRPOTrainer(model=..., reward_funcs=[reward], ...)  # doctest: +SKIP
    """

    def __init__(self, *args: Any, client: Any = None, **kwargs: Any) -> None:
        """`client`: a ready `referee.client.Client` to use (a custom transport, say) instead of
        the one built from `url` on first use."""
        super().__init__(*args, **kwargs)
        self._client: Any = client

    def _get_client(self) -> Any:
        if self._client is None:
            from referee.client import Client

            self._client = Client(self.url, **self._client_settings())
        return self._client

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None, **kwargs: Any
    ) -> list[float | None]:
        specs, where = group_samples(self._samples(prompts, completions, kwargs))
        if not where:
            return []
        start = time.perf_counter()
        results = (
            self._get_client().score_groups(specs, AdvantageConfig(), on_invalid="error_verdict").groups
            if specs
            else []
        )
        rewards = scatter_rewards(results, where)
        self._log(kwargs, results, scatter_verdicts(results, where), rewards, time.perf_counter() - start)
        return rewards

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class AsyncRefereeReward(_RefereeRewardBase):
    """Asynchronous TRL reward function: TRL awaits it on its own loop, alongside other async rewards."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def _get_client(self) -> Any:
        # An httpx async client belongs to the loop it was created on; keep one per loop.
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            from referee.client import AsyncClient

            client = self._clients[loop_id] = AsyncClient(self.url, **self._client_settings())
        return client

    async def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None, **kwargs: Any
    ) -> list[float | None]:
        specs, where = group_samples(self._samples(prompts, completions, kwargs))
        if not where:
            return []
        start = time.perf_counter()
        results = (
            (
                await self._get_client().score_groups(specs, AdvantageConfig(), on_invalid="error_verdict")
            ).groups
            if specs
            else []
        )
        rewards = scatter_rewards(results, where)
        self._log(kwargs, results, scatter_verdicts(results, where), rewards, time.perf_counter() - start)
        return rewards

    async def aclose(self) -> None:
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.aclose()
