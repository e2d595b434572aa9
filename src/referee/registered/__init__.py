"""Verifier types registered through the API: the three kinds (declarative, sandboxed Python,
webhook), their store, and the catalog that resolves names over installed and registered types.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.registered.api import (
    DisableResponse,
    ProbeGateRequest,
    RegisterExample,
    RegisterRequest,
    RegisterResponse,
    VersionInfo,
    VersionList,
)
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
    "DisableResponse",
    "PostgresStore",
    "ProbeGate",
    "ProbeGateRequest",
    "ProbeOutcome",
    "RegisterExample",
    "RegisterRequest",
    "RegisterResponse",
    "Registered",
    "RegistrationError",
    "SQLiteStore",
    "VerifierCatalog",
    "VerifierStore",
    "VersionInfo",
    "VersionList",
    "version_info",
]
