"""Format rewards for the DeepSeek-R1 template `<think>…</think><answer>…</answer>`.

Tags are matched exactly and case-sensitively (`<ANSWER>` is not the tag); nothing is parsed
with regexes over model text, so both verifiers are linear in the response length.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, ClassVar

from referee.verifiers.base import Check, Verifier
from referee.verifiers.extract import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
MAX_RESPONSE_CHARS = 2_000_000


def _refuse(response: object) -> Check | None:
    """The size and type guard both format rewards apply before looking at tags."""
    if not isinstance(response, str):
        return Check(0.0, reason="response is not a string")
    if len(response) > MAX_RESPONSE_CHARS:
        return Check(0.0, reason=f"response longer than {MAX_RESPONSE_CHARS} characters")
    return None


class ThinkAnswer(Verifier):
    """Exactly what passes (score 1; everything else scores 0 with the first failed rule):

    1. the response is a string of at most 2,000,000 characters;
    2. each of `<think>`, `</think>`, `<answer>`, `</answer>` occurs exactly once (so nested,
       repeated or unclosed tags fail), in that order;
    3. only whitespace comes before `<think>`, between `</think>` and `<answer>`, and after
       `</answer>` (prose around the blocks or trailing junk fails);
    4. the answer block holds something other than whitespace; the think block may be empty.

    Newlines around the tags are optional: compact `<think>x</think><answer>y</answer>` and
    the multi-line R1 layout both pass.
    """

    name = "format.think_answer"
    description = (
        "R1 template: exactly one <think>…</think> followed by exactly one non-empty "
        "<answer>…</answer>, with nothing but whitespace around or between them."
    )
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>\n2 + 2 = 4\n</think>\n<answer>\n4\n</answer>",
        "reference": None,
        "expected_score": 1.0,
    }

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        if (refused := _refuse(response)) is not None:
            return refused
        counts = {tag: response.count(tag) for tag in TAGS}
        wrong = [f"{tag} ×{n}" for tag, n in counts.items() if n != 1]
        if wrong:
            return Check(0.0, reason="each tag must occur exactly once: " + ", ".join(wrong))
        t_open, t_close, a_open, a_close = (response.index(tag) for tag in TAGS)
        if not t_open < t_close < a_open < a_close:
            return Check(0.0, reason="tags out of order")
        if response[:t_open].strip():
            return Check(0.0, reason="text before <think>")
        if response[t_close + len(THINK_CLOSE) : a_open].strip():
            return Check(0.0, reason="text between </think> and <answer>")
        if response[a_close + len(ANSWER_CLOSE) :].strip():
            return Check(0.0, reason="text after </answer>")
        if not response[a_open + len(ANSWER_OPEN) : a_close].strip():
            return Check(0.0, reason="empty answer block")
        return Check(1.0, reason="R1 format")


class TagCount(Verifier):
    """0.25 per tag, as open-r1's `tag_count_reward`, but without its newline requirements.

    A tag earns 0.25 when it occurs exactly once and belongs to the largest set of such tags
    that appear in template order (`<think>`, `</think>`, `<answer>`, `</answer>`). So the full
    template scores 1.0, a missing or repeated tag costs 0.25, and swapped blocks
    (`<answer>…</answer><think>…</think>`) score 0.5. Text around the tags is not judged (that
    is `format.think_answer`'s job); this reward is a smooth shaping signal.
    """

    name = "format.tag_count"
    description = (
        "0.25 for each of <think>, </think>, <answer>, </answer> that occurs exactly once and in "
        "template order (largest in-order subset); a partial-credit shaping reward."
    )
    example: ClassVar[dict[str, Any]] = {
        "response": "<think>reasoning</think><answer>42</answer><answer>43</answer>",
        "reference": None,
        "expected_score": 0.5,
    }

    def check(self, response: str, prepared: Any, options: Any) -> Check:
        if (refused := _refuse(response)) is not None:
            return refused
        once = [(rank, response.index(tag)) for rank, tag in enumerate(TAGS) if response.count(tag) == 1]
        best: tuple[int, ...] = ()
        # At most 4 tags: try subsets from the largest down; the first in-order one wins.
        for size in range(len(once), 0, -1):
            for subset in combinations(once, size):
                positions = [pos for _, pos in subset]
                if positions == sorted(positions):
                    best = tuple(rank for rank, _ in subset)
                    break
            if best:
                break
        counted = [TAGS[rank] for rank in best]
        return Check(
            0.25 * len(counted),
            reason=f"{len(counted)} of 4 tags once and in order",
            details={"tags": counted},
        )


VERIFIERS: list[type[Verifier]] = [ThinkAnswer, TagCount]
