"""Prompt ids for the service's per-prompt statistics, and the zero-variance share of a step.

Every adapter sends its groups with a `prompt_id` (GroupSpec allows 1..200 characters), taken
from the trainer's data where it has one (a dataset id column, verl's `extra_info`) and
otherwise a digest of the prompt (`referee.grouping.prompt_fingerprint`), so the same prompt
gets the same id in every process, rank and run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from referee.grouping import plain, prompt_fingerprint
from referee.models import GroupResult

MAX_PROMPT_ID = 200  # GroupSpec.prompt_id's bound


def as_prompt_id(value: Any) -> str | None:
    """A dataset's id cell as a prompt_id, or None for an empty cell (None, NaN, "").

    Integers (numpy's included) become their decimal text, and so do integral floats: pandas
    turns an integer column with a gap into floats, and row 17 must stay "17", not "17.0". An
    id longer than 200 characters, or one that is not text or a number (a dict, a list), is
    replaced by its digest: still stable, and within the service's bound."""
    value = plain(value)
    if value is None or value == "":
        return None
    if isinstance(value, int):  # bools too: "True"
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        text = str(int(value)) if value.is_integer() else repr(value)
    elif isinstance(value, str):
        text = value
    else:
        return prompt_fingerprint(value)
    return text if len(text) <= MAX_PROMPT_ID else prompt_fingerprint(text)


def zero_variance_share(results: Sequence[GroupResult]) -> float | None:
    """The share of scored groups whose rewards had no spread (`GroupResult.zero_variance`, as
    the service computed it): the part of a step GRPO learns nothing from. None without groups."""
    if not results:
        return None
    return sum(r.zero_variance for r in results) / len(results)
