"""Docker sandbox for untrusted code: warm hardened containers, an in-container supervisor,
and the judges that turn a finished test into a verdict.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.sandbox import judge
from referee.sandbox.checker_format import (
    CheckedAnswer,
    CheckerConvention,
    CheckerLanguage,
    CheckerProgram,
    checker_outcome,
)
from referee.sandbox.judge import StdioConvention
from referee.sandbox.languages import LANGUAGES, Language
from referee.sandbox.multi_file import with_extra_sources
from referee.sandbox.pool import SandboxPool
from referee.sandbox.protocol import (
    Job,
    Judgement,
    RunResult,
    SandboxUnavailable,
    TestInput,
    TestRun,
    TestVerdict,
)
from referee.sandbox.run_limits import Limits, for_language
from referee.sandbox.script_format import ScriptTest, judge_script, plan_script
from referee.sandbox.session import (
    CALL_SLACK_S,
    MAX_SESSION_FILES,
    MAX_SESSION_FILES_BYTES,
    SESSION_LANGUAGES,
    CallOutcome,
    CallStatus,
    SandboxSession,
    SessionClosed,
    SessionLimits,
    SessionSpec,
    call_wait_s,
)
from referee.sandbox.settings import SandboxSettings
from referee.sandbox.typed_harness import function_language, supports_functions, with_harness

__all__ = [
    "CALL_SLACK_S",
    "LANGUAGES",
    "MAX_SESSION_FILES",
    "MAX_SESSION_FILES_BYTES",
    "SESSION_LANGUAGES",
    "CallOutcome",
    "CallStatus",
    "CheckedAnswer",
    "CheckerConvention",
    "CheckerLanguage",
    "CheckerProgram",
    "Job",
    "Judgement",
    "Language",
    "Limits",
    "RunResult",
    "SandboxPool",
    "SandboxSession",
    "SandboxSettings",
    "SandboxUnavailable",
    "ScriptTest",
    "SessionClosed",
    "SessionLimits",
    "SessionSpec",
    "StdioConvention",
    "TestInput",
    "TestRun",
    "TestVerdict",
    "call_wait_s",
    "checker_outcome",
    "for_language",
    "function_language",
    "judge",
    "judge_script",
    "plan_script",
    "supports_functions",
    "with_extra_sources",
    "with_harness",
]
