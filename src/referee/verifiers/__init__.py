"""Verifiers: plain Python, never FastAPI. `base` says what a verifier is; `installed` finds
the built-ins, configured extras and entry-point plugins.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.verifiers import extract, judge
from referee.verifiers.base import (
    AsyncVerifier,
    Check,
    CodeSandbox,
    Lane,
    NoOptions,
    Resources,
    Verifier,
    VerifierError,
)
from referee.verifiers.installed import (
    BUILTIN_MODULES,
    IndexUser,
    InstalledVerifiers,
    UnknownVerifier,
    builtin_index,
    import_object,
    load_installed,
)
from referee.verifiers.short_answer import Extraction, select_answer

__all__ = [
    "BUILTIN_MODULES",
    "AsyncVerifier",
    "Check",
    "CodeSandbox",
    "Extraction",
    "IndexUser",
    "InstalledVerifiers",
    "Lane",
    "NoOptions",
    "Resources",
    "UnknownVerifier",
    "Verifier",
    "VerifierError",
    "builtin_index",
    "extract",
    "import_object",
    "judge",
    "load_installed",
    "select_answer",
]
