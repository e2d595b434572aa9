"""Verifier types registered through the API: the four kinds (declarative, sandboxed Python,
webhook, model judge), their store, and the catalog that resolves names over installed and registered types.
The registration API's bodies are part of the contract, `referee.models`.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.registered.catalog import (
    ProbeGate,
    ProbeOutcome,
    Registered,
    RegistrationError,
    VerifierCatalog,
    version_info,
)
from referee.registered.judge import best_score as judge_best_score
from referee.registered.judge import injection_line as judge_injection_line
from referee.registered.postgres import PostgresStore
from referee.registered.store import SQLiteStore, VerifierStore

__all__ = [
    "PostgresStore",
    "ProbeGate",
    "ProbeOutcome",
    "Registered",
    "RegistrationError",
    "SQLiteStore",
    "VerifierCatalog",
    "VerifierStore",
    "judge_best_score",
    "judge_injection_line",
    "version_info",
]
