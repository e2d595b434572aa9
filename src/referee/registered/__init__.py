"""Verifier types registered through the API: the three kinds (declarative, sandboxed Python,
webhook), their store, and the catalog that resolves names over installed and registered types.
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
    "version_info",
]
