"""Webhook signing secrets at rest: encrypted with keys from the environment.

`REFEREE_SECRET_KEYS` holds one or more Fernet keys (comma-separated; make one with
`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`).
The first key encrypts; every key decrypts (`MultiFernet`), so keys rotate without downtime:
put the new key first, restart (the service re-encrypts every stored secret under it at
start-up, `VerifierCatalog.reseal_secrets`), then drop the old key.

Stored form: `fernet:<token>`. A secret stored before encryption existed (plain text, no
prefix) is still read, and re-encrypted at the next start with a key configured. Without any
key, no webhook type can be registered (its secret could only be stored in plain text), and
stored webhook types cannot sign their calls until a key that decrypts their secrets is set.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

PREFIX = "fernet:"


class SecretUnavailable(Exception):
    """No key configured, or none of the configured keys decrypts a stored secret."""


class SecretBox:
    def __init__(self, keys: Sequence[str]) -> None:
        try:
            fernets = [Fernet(key.strip().encode()) for key in keys if key.strip()]
        except ValueError as exc:
            raise ValueError(f"REFEREE_SECRET_KEYS: not a Fernet key ({exc})") from None
        self._fernet = MultiFernet(fernets) if fernets else None

    @property
    def configured(self) -> bool:
        return self._fernet is not None

    def _require(self) -> MultiFernet:
        if self._fernet is None:
            raise SecretUnavailable("no REFEREE_SECRET_KEYS configured to encrypt webhook secrets")
        return self._fernet

    def seal(self, secret: str) -> str:
        return PREFIX + self._require().encrypt(secret.encode()).decode()

    def open(self, stored: str) -> str:
        if not stored.startswith(PREFIX):
            return stored  # stored in plain text before encryption at rest (re-sealed at start-up)
        try:
            return self._require().decrypt(stored[len(PREFIX) :].encode()).decode()
        except InvalidToken:
            raise SecretUnavailable("no key in REFEREE_SECRET_KEYS decrypts this stored secret") from None

    def reseal(self, stored: str) -> str:
        """`stored` encrypted under the primary key (plain text legacy secrets included)."""
        fernet = self._require()
        if not stored.startswith(PREFIX):
            return self.seal(stored)
        try:
            return PREFIX + fernet.rotate(stored[len(PREFIX) :].encode()).decode()
        except InvalidToken:
            raise SecretUnavailable("no key in REFEREE_SECRET_KEYS decrypts this stored secret") from None
