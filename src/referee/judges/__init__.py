"""Model endpoints for judge verifiers: the contract between verifiers and the transport
(`contract`), the service's clients of its endpoints (`client`), the chat-completions wire
format they speak (`wire`) and the verdict cache (`cache`).

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.judges.cache import VerdictCache
from referee.judges.client import JudgeClients
from referee.judges.contract import (
    ChatFailure,
    ChatReply,
    ChatRequest,
    FailureKind,
    JudgeCache,
    Judges,
    Message,
    Sampling,
)
from referee.judges.wire import read_reply, request_body

__all__ = [
    "ChatFailure",
    "ChatReply",
    "ChatRequest",
    "FailureKind",
    "JudgeCache",
    "JudgeClients",
    "Judges",
    "Message",
    "Sampling",
    "VerdictCache",
    "read_reply",
    "request_body",
]
