"""Which part of a conversation is the response to judge.

Multi-turn rollouts (tool use, agent loops, chat) reach the reward as a message list (TRL's
conversational completions) or as one chat-templated string (OpenRLHF's `query`, verl's
agent-loop `solution_str`). A verifier judges one text, so the adapters pick the turns first:

- ``"last"`` (default): the last assistant turn, the final answer of the episode;
- ``"all"``: every assistant turn, joined by a blank line (a format reward over the episode);
- an integer ``k``: the k-th assistant turn (0-based; negative counts from the end).

Plain text without chat-template markers is a single assistant turn. Recognised templates:
ChatML (Qwen, ``<|im_start|>assistant ... <|im_end|>``) and Llama 3
(``<|start_header_id|>assistant<|end_header_id|> ... <|eot_id|>``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

Turns = str | int  # "last" | "all" | index

_TEMPLATES = (
    re.compile(r"<\|im_start\|>assistant[^\n]*\n(?P<text>.*?)(?:<\|im_end\|>|\Z)", re.S),
    re.compile(r"<\|start_header_id\|>assistant<\|end_header_id\|>\s*(?P<text>.*?)(?:<\|eot_id\|>|\Z)", re.S),
)


def content_text(content: Any) -> str:
    """A message's content: a string, or the text parts of a content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image", ...}]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def assistant_turn_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each assistant turn's text in a chat-templated string, in order (a turn
    left open at the end of `text` runs to its end); [] when `text` has no turn markers."""
    for pattern in _TEMPLATES:
        spans = [m.span("text") for m in pattern.finditer(text)]
        if spans:
            return spans
    return []


def assistant_turns(conversation: Any) -> list[str]:
    """The assistant turns of a message list, a single message, or a (templated) string."""
    if isinstance(conversation, str):
        spans = assistant_turn_spans(conversation)
        return [conversation[start:end] for start, end in spans] if spans else [conversation]
    if isinstance(conversation, dict):
        return [content_text(conversation.get("content"))]
    if isinstance(conversation, Sequence):
        messages = [m for m in conversation if isinstance(m, dict)]
        assistant = [content_text(m.get("content")) for m in messages if m.get("role") == "assistant"]
        if assistant:
            return assistant
        return [content_text(messages[-1].get("content"))] if messages else []
    return []


def select_turns(conversation: Any, turns: Turns = "last") -> str:
    """The text to judge (see the module docstring); "" when the turn does not exist."""
    return pick_turns(assistant_turns(conversation), turns)


def pick_turns(found: list[str], turns: Turns = "last") -> str:
    """The chosen turn(s) among the assistant turns `found` (see the module docstring)."""
    if not found:
        return ""
    if turns == "last":
        return found[-1]
    if turns == "all":
        return "\n\n".join(found)
    if isinstance(turns, int) and not isinstance(turns, bool):
        return found[turns] if -len(found) <= turns < len(found) else ""
    raise ValueError(f"turns must be 'last', 'all' or an integer, not {turns!r}")
