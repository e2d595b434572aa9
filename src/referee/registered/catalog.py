"""The catalog: every verifier the service can use by name, built-in or registered.

`resolve("name")` gives an installed verifier (built-in, plugin or extra) or the latest active registered version;
`resolve("name@3")` pins a version. Registered versions are rebuilt from the store into
verifier objects once and cached; the cache is dropped whenever the store's generation moves
(a registration or a DELETE, by this process or another one sharing the database).

The store is never read on the event loop: `await load(names)` reads what resolving those names
needs (the store's changes, pinned versions not built yet) in the catalog's own reader threads,
and the synchronous `resolve()` the scorer calls while planning only looks in what was read. A
database server that stops answering thus holds up only the requests that need a registered
type read from it (until the outage is noticed, ~10 s), never built-ins, /readyz or loaded types.

While the store cannot be read (its database server down, `RegistryUnavailable`), the catalog
serves what it has loaded: the latest versions it knew of, and every version it has built since
the process started, pinned ones included. A name it has not loaded is then a 503 (the store
cannot say whether it exists), never a 404; registrations are refused by the store itself.

`register()` is the activation gate: the examples run through the service's own scoring path
(the `score_examples` callable the service passes in) and the version is stored only if every
example reproduces its expected score. A registration that asks for probes (`probes` in the
body) is also gated on a probe battery: the service passes a `probe_gate` that scores the
audit's probes against the same candidate (this package does not know the batteries), and any
failed probe refuses the version the same way a failing example does: nothing is stored.
Judge types (kind `judge`) are always gated on a probe battery, asked for or not: a model
judge's examples alone let through a judge that agrees with everything (docs/registered.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import structlog
from pydantic import ValidationError

from referee.errors import DomainError, ErrorKind
from referee.models import RegisterExample, RegisterRequest, Verdict, VerdictStatus, VersionInfo
from referee.registered import declarative, judge, python_grader, webhook
from referee.registered.secrets_box import SecretBox, SecretUnavailable
from referee.registered.store import QuotaExceeded, RegistryUnavailable, StoredVersion, VerifierStore
from referee.settings import JudgeSettings, RegistrySettings
from referee.verifiers.base import Verifier
from referee.verifiers.installed import InstalledVerifiers, UnknownVerifier

log = structlog.get_logger(__name__)

ScoreExamples = Callable[[Verifier, list[RegisterExample]], Awaitable[list[Verdict]]]
SCORE_TOLERANCE = 1e-6
# Pinned versions remembered per generation (absent ones included) before the memo is cleared.
PINNED_CACHE_SIZE = 4096
_NOT_READ = object()  # a pinned version not read yet (None: read, and there is none)


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What a probe gate found for a candidate: the battery, how many probes it scored, and one
    `{"name", "battery", "attack", "response", "score", "max_score", "status", "reason"}` per
    failed probe (a control's also has `min_score`, the full marks it had to earn)."""

    battery: str
    probes: int
    failed: list[dict[str, Any]]


# Scores a battery against the candidate (not yet stored) through the service's scoring path.
ProbeGate = Callable[[Verifier], Awaitable[ProbeOutcome]]


class Registered(NamedTuple):
    stored: StoredVersion
    created: bool
    secret: str | None  # the webhook secret to show once, or None
    probes_passed: int | None  # None: no probes were asked for


class RegistrationError(DomainError):
    """A registration the service refuses (its spec, its examples, a quota)."""

    def __init__(self, code: str, message: str, detail: Any = None) -> None:
        super().__init__(ErrorKind.invalid, code, message, detail)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _spec_errors(exc: ValidationError | ValueError) -> list[dict[str, Any]]:
    if isinstance(exc, ValidationError):
        return [
            {
                "loc": ["body", "spec", *(p for p in e["loc"] if p != "root")],
                "msg": e["msg"],
                "type": e["type"],
            }
            for e in exc.errors()
        ]
    return [{"loc": ["body", "spec"], "msg": str(exc)[:500], "type": "value_error"}]


class VerifierCatalog:
    def __init__(
        self,
        settings: RegistrySettings,
        installed: InstalledVerifiers,
        store: VerifierStore,
        judges: JudgeSettings | None = None,
    ) -> None:
        self.settings = settings
        # The judge endpoints a judge type may name (checked at registration, by name).
        self.judges = judges or JudgeSettings()
        self.installed = installed
        # What declarative specs may name, from the same index the worker processes were given.
        self._builtins = declarative.worker_builtins(installed)
        self.store = store
        self.webhooks = webhook.WebhookRuntime(settings)
        self.secrets = SecretBox(settings.secret_keys)
        self._generation: object = None
        self._latest: dict[str, StoredVersion] = {}
        self._unreadable: RegistryUnavailable | None = None  # why the last refresh failed
        # Pinned versions read for the current generation: the record, None (no such active
        # version) or why it could not be read (tried again on the next load).
        self._pinned: dict[tuple[str, int], StoredVersion | RegistryUnavailable | None] = {}
        self._refreshing = asyncio.Lock()
        # The store's reads, in threads of their own: a silent server holds these, never the
        # event loop nor the default executor's threads. Changes (the generation, which the
        # PostgreSQL store answers from its watcher's last read, then the latest versions) apart
        # from pinned versions: a pinned read stuck on a silent server never holds up a type
        # already loaded.
        self._changes_reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="registry-changes")
        self._versions_reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="registry-versions")
        self._instances: dict[tuple[str, int], Verifier] = {}
        # Versions built under an earlier generation: served again only while the store cannot
        # be read (versions are immutable; one disabled since is then still served).
        self._loaded: dict[tuple[str, int], Verifier] = {}

    async def reseal_secrets(self) -> int:
        """Encrypt every stored webhook secret under the primary key of REFEREE_SECRET_KEYS
        (plain-text ones from before encryption at rest, and ones under a rotated-out key that
        is still configured); the number of secrets stored. A secret no key opens is kept.
        A registry that cannot be reached leaves them as they are (0): the service starts
        anyway, serves built-in verifiers and reconnects; the next start reseals them."""
        if not self.secrets.configured:
            return 0

        def reseal(stored: str) -> str:
            try:
                return self.secrets.reseal(stored)
            except SecretUnavailable:
                log.warning("webhook_secret_undecryptable")
                return stored

        try:
            return await asyncio.to_thread(self.store.reseal, reseal)
        except RegistryUnavailable as exc:
            log.warning("webhook_secrets_not_resealed", reason=exc.why)
            return 0

    def _open_secret(self, stored: str | None) -> str | None:
        if stored is None:
            return None
        try:
            return self.secrets.open(stored)
        except SecretUnavailable:
            return None

    async def aclose(self) -> None:
        await self.webhooks.aclose()
        for reader in (self._changes_reader, self._versions_reader):
            reader.shutdown(wait=False, cancel_futures=True)
        self.store.close()

    # ---- resolution ------------------------------------------------------------------------
    #
    # The store is read only in the catalog's own threads (`_read`), never on the event loop: a
    # database server that stops answering then holds up the requests that need a registered
    # type it has to read (~10 s, until the outage is noticed), not every request, /readyz and
    # built-ins included. `load()` (async) does the reads a set of names needs; `resolve()`
    # (sync, what the scorer calls while planning) then only looks in what was loaded.

    @staticmethod
    async def _read(reader: ThreadPoolExecutor, read: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(reader, read, *args)

    def _read_changes(self, known: object) -> tuple[object, list[StoredVersion] | None]:
        """(the store's generation, its latest versions if that moved from `known`): the reader's."""
        generation = self.store.generation()
        return generation, (None if generation == known else self.store.latest_active())

    async def refresh(self) -> None:
        """Reload after a change (by this process or another one sharing the database). When
        the store cannot be read, what was loaded stays and the error is kept for `resolve`."""
        async with self._refreshing:  # one at a time: a later one never lands before an earlier
            try:
                generation, latest = await self._read(
                    self._changes_reader, self._read_changes, self._generation
                )
            except RegistryUnavailable as exc:
                self._unreadable = exc
                return
            self._unreadable = None
            if latest is not None and generation != self._generation:
                self._latest = {r.name: r for r in latest}
                self._loaded.update(self._instances)
                self._instances.clear()
                self._pinned.clear()
                self._generation = generation

    async def load(self, names: Iterable[str]) -> None:
        """Read what resolving `names` needs, off the event loop: the store's changes (if any
        name is not installed) and the pinned versions not built yet. A read that fails is
        kept for `resolve` (a 503, or a version loaded earlier); built-ins need nothing."""
        pinned: set[tuple[str, int]] = set()
        wanted = False
        for name in names:
            base, _, version = name.partition("@")
            if base in self.installed:
                continue
            wanted = True
            if version.isdigit() and len(version) < 10:
                pinned.add((base, int(version)))
        if not wanted:
            return
        await self.refresh()
        for key in sorted(pinned):
            known = self._pinned.get(key, _NOT_READ)
            if key in self._instances or not (known is _NOT_READ or isinstance(known, RegistryUnavailable)):
                continue
            record = await self._read_version(key)
            if len(self._pinned) >= PINNED_CACHE_SIZE:  # names@N that do not exist, say
                self._pinned.clear()
            self._pinned[key] = record

    async def _read_version(self, key: tuple[str, int]) -> StoredVersion | RegistryUnavailable | None:
        """An active version as the store has it now, or why it cannot say. Read again if the
        generation moved meanwhile (it might have been disabled)."""
        while True:
            generation = self._generation
            try:
                record: StoredVersion | None = await self._read(self._versions_reader, self.store.get, *key)
            except RegistryUnavailable as exc:
                return exc
            if generation == self._generation:
                return record

    def names(self) -> list[str]:
        """Installed and registered names, as last loaded."""
        return sorted({*self.installed.names(), *self._latest})

    def resolve(self, name: str) -> Verifier:
        """The verifier `name` names, from what `load()` read (call it first: this never waits
        on the store). RegistryUnavailable (503) when the store could not say."""
        base, _, version = name.partition("@")
        if base in self.installed:
            return self.installed.get(name)
        if not version:
            latest = self._latest.get(base)
            if latest is not None:
                return self._instance(latest)
            if self._unreadable is not None:  # perhaps registered meanwhile: say so, not 404
                raise self._unreadable
            raise UnknownVerifier(name, self.names())
        if not (version.isdigit() and len(version) < 10):
            raise UnknownVerifier(name, self.names())
        key = (base, int(version))
        if key in self._instances:
            return self._instances[key]
        record = self._pinned.get(key, _NOT_READ)
        if record is _NOT_READ:  # not loaded first: read here, on the caller's thread
            try:
                record = self.store.get(*key)
            except RegistryUnavailable as exc:
                record = exc
        if isinstance(record, RegistryUnavailable):
            if key in self._loaded:
                return self._loaded[key]
            raise record
        if record is None:
            raise UnknownVerifier(name, self.names())
        assert isinstance(record, StoredVersion)
        return self._instance(record)

    def kind(self, verifier: Verifier) -> str:
        if verifier.name in self.installed:
            return self.installed.kind(verifier.name)
        return str(getattr(verifier, "kind", "registered"))

    async def registered(self) -> list[Verifier]:
        """The latest active version of every registered type. A stored version that no longer
        builds (a comparator it names was removed, say) is logged and left out, so one broken
        type does not break the listing of all the others."""
        await self.refresh()
        built = []
        for record in self._latest.values():
            try:
                built.append(self._instance(record))
            except Exception as exc:
                log.warning(
                    "registered_type_unbuildable", name=record.name, version=record.version, error=str(exc)
                )
        return built

    def _instance(self, record: StoredVersion) -> Verifier:
        key = (record.name, record.version)
        if key not in self._instances:
            doc = record.document
            secret = self._open_secret(record.secret)  # None: no key opens it; calls are masked
            cls = self._build(record.name, str(record.version), record.kind, doc["spec"], doc, secret)
            self._instances[key] = cls()
            self._loaded.pop(key, None)
        return self._instances[key]

    def _build(
        self,
        name: str,
        version: str,
        kind: str,
        spec: dict[str, Any],
        doc: dict[str, Any],
        secret: str | None,
    ) -> type[Verifier]:
        examples = doc.get("examples") or []
        common: dict[str, Any] = {
            "description": doc.get("description", ""),
            "example": examples[0] if examples else {},
        }
        if kind == "declarative":
            return declarative.build_class(
                name, version, spec, doc.get("reference_schema"), builtins=self._builtins, **common
            )
        if kind == "webhook":
            return webhook.build_class(
                name, version, spec, secret or "", doc.get("reference_schema"), self.webhooks, **common
            )
        if kind == "python":
            return python_grader.build_class(name, version, spec, doc.get("reference_schema"), **common)
        if kind == "judge":
            return judge.build_class(name, version, spec, doc.get("reference_schema"), **common)
        raise ValueError(f"unknown kind {kind!r}")

    # ---- versions and deletion -------------------------------------------------------------

    def _guard_builtin(self, name: str) -> None:
        if name.partition("@")[0] in self.installed:
            raise DomainError(
                ErrorKind.conflict,
                "builtin_verifier",
                f"{name!r} is a built-in verifier; it cannot be changed",
            )

    async def _guard_name(self, name: str) -> None:
        """Names are unique ignoring case (and the pattern of RegisterRequest.name rules out
        leading, trailing and doubled separators), so `MATH` or `math.` cannot pose as `math`."""
        key = name.casefold()
        builtin = next((n for n in self.installed.names() if n.casefold() == key), None)
        if builtin is not None:
            raise DomainError(
                ErrorKind.conflict,
                "builtin_verifier",
                f"{name!r} is the name of the built-in verifier {builtin!r} (names ignore case)",
            )
        await self.refresh()
        taken = next((n for n in self._latest if n != name and n.casefold() == key), None)
        if taken is not None:
            raise DomainError(
                ErrorKind.conflict,
                "name_taken",
                f"{name!r} differs only in case from the registered type {taken!r}",
            )

    async def versions(self, name: str) -> list[VersionInfo]:
        self._guard_builtin(name)
        records = await asyncio.to_thread(self.store.versions, name)
        if not records:
            raise UnknownVerifier(name, self.names())
        return [version_info(r) for r in records]

    async def disable(self, name: str) -> list[int]:
        self._guard_builtin(name)
        base, _, version = name.partition("@")
        if version and not version.isdigit():
            raise UnknownVerifier(name, self.names())
        known = await asyncio.to_thread(self.store.versions, base)
        if not known or (version and int(version) not in {r.version for r in known}):
            raise UnknownVerifier(name, self.names())
        disabled = await asyncio.to_thread(self.store.disable, base, int(version) if version else None)
        log.info("verifier_disabled", name=base, versions=disabled)
        return disabled

    # ---- registration ----------------------------------------------------------------------

    async def register(
        self, request: RegisterRequest, score_examples: ScoreExamples, probe_gate: ProbeGate | None = None
    ) -> Registered:
        """The examples, then (when the request asks for probes, and always for a judge)
        `probe_gate`, both on the candidate; the version is stored only if both pass."""
        gated = request.probes is not None or request.kind == "judge"
        if gated and probe_gate is None:
            raise RegistrationError(
                "probes_unavailable",
                "this service cannot run probe batteries",
                [{"loc": ["body", "probes"], "msg": "not supported here", "type": "probes_unavailable"}],
            )
        await self._guard_name(request.name)
        n, limit = len(request.examples), self.settings.max_registered_examples
        _check_quota(n, limit, f"{n} examples; limit {limit}", "EXAMPLES")
        spec = self._pinned_judge(request) if request.kind == "judge" else dict(request.spec)
        secret, generated = await self._webhook_secret(request, spec)
        size, limit = len(canonical(spec).encode()), self.settings.max_registered_source_bytes
        _check_quota(size, limit, f"spec is {size} bytes; limit {limit}", "SOURCE_BYTES")
        document = {
            "spec": spec,
            "description": request.description,
            "reference_schema": request.reference_schema,
            "examples": [e.model_dump(mode="json") for e in request.examples],
        }
        candidate = self._candidate(request, spec, document, secret)
        await _activation_gate(candidate, request.examples, score_examples)
        probes_passed = None
        if gated and probe_gate is not None:
            probes_passed = await _probe_gate(candidate, probe_gate)
        stored, created = await self._store(request, spec, document, secret)
        log.info(
            "verifier_registered",
            name=stored.name,
            version=stored.version,
            kind=stored.kind,
            created=created,
            probes_passed=probes_passed,
        )
        return Registered(stored, created, secret if generated and created else None, probes_passed)

    async def _webhook_secret(
        self, request: RegisterRequest, spec: dict[str, Any]
    ) -> tuple[str | None, bool]:
        """(secret, generated now). A webhook keeps its secret across versions unless a new one
        is given; the secret never stays in the spec (specs are shown to API-key holders)."""
        if request.kind != "webhook":
            return None, False
        if not self.secrets.configured:
            raise RegistrationError(
                "webhooks_disabled",
                "webhook types need REFEREE_SECRET_KEYS (a Fernet key) to store their secrets encrypted",
                [{"loc": ["body", "kind"], "msg": "no secret key configured", "type": "webhooks_disabled"}],
            )
        secret = spec.pop("secret", None)
        if secret is None:
            current = await asyncio.to_thread(self.store.get, request.name)
            if current is not None and current.kind == "webhook" and current.secret is not None:
                secret = self._open_secret(current.secret)
                if secret is None:
                    raise RegistrationError(
                        "secret_undecryptable",
                        "the stored secret cannot be decrypted with REFEREE_SECRET_KEYS; send a new `secret`",
                        [{"loc": ["body", "spec", "secret"], "msg": "required", "type": "missing"}],
                    )
        if secret is None:
            return secrets.token_urlsafe(32), True
        return secret, False

    def _pinned_judge(self, request: RegisterRequest) -> dict[str, Any]:
        """A judge spec with its template text, model and defaults written in, or a 422 (an
        endpoint the service does not configure is `unknown_judge_endpoint`)."""
        try:
            return judge.pin(request.spec, self.judges)
        except judge.UnknownEndpoint as exc:
            raise RegistrationError(
                "unknown_judge_endpoint",
                str(exc),
                [{"loc": ["body", "spec", "endpoint"], "msg": str(exc), "type": "unknown_judge_endpoint"}],
            ) from None
        except (ValidationError, ValueError) as exc:
            raise RegistrationError(
                "invalid_spec", "the spec cannot be registered", _spec_errors(exc)
            ) from None

    def _candidate(
        self, request: RegisterRequest, spec: dict[str, Any], document: dict[str, Any], secret: str | None
    ) -> Verifier:
        """The verifier the spec describes, built but not stored, or a 422 saying why not."""
        try:
            candidate = self._build(request.name, "candidate", request.kind, spec, document, secret)()
        except (ValidationError, ValueError) as exc:
            raise RegistrationError(
                "invalid_spec", "the spec cannot be registered", _spec_errors(exc)
            ) from None
        if request.kind == "webhook" and not webhook.host_allowed(
            spec["url"], self.settings.webhook_allowed_hosts
        ):
            raise RegistrationError(
                "host_not_allowed",
                "the webhook host is not in REFEREE_WEBHOOK_ALLOWED_HOSTS",
                [{"loc": ["body", "spec", "url"], "msg": "host not allowed", "type": "host_not_allowed"}],
            )
        return candidate

    async def _store(
        self, request: RegisterRequest, spec: dict[str, Any], document: dict[str, Any], secret: str | None
    ) -> tuple[StoredVersion, bool]:
        """Content-addressed: the same kind, spec and schema (and, for a webhook, the same
        secret) as the latest version is that version. The digest never covers the secret: it
        is public, and a hash of a secret can be attacked offline."""
        hashed: dict[str, Any] = {
            "kind": request.kind,
            "spec": spec,
            "reference_schema": request.reference_schema,
        }
        digest = hashlib.sha256(canonical(hashed).encode()).hexdigest()

        def same(latest: StoredVersion) -> bool:  # a new secret is a new version
            return latest.digest == digest and self._open_secret(latest.secret) == secret

        sealed = self.secrets.seal(secret) if secret is not None else None
        try:
            return await asyncio.to_thread(
                self.store.add,
                request.name,
                request.kind,
                digest,
                document,
                sealed,
                max_names=self.settings.max_registered_types,
                same=same,
            )
        except QuotaExceeded as exc:
            raise RegistrationError(
                "quota_exceeded", str(exc), {"limit": "REFEREE_MAX_REGISTERED_TYPES"}
            ) from None


def _check_quota(count: int, limit: int, message: str, setting: str) -> None:
    if count > limit:
        raise RegistrationError("quota_exceeded", message, {"limit": f"REFEREE_MAX_REGISTERED_{setting}"})


async def _activation_gate(
    candidate: Verifier, examples: list[RegisterExample], score_examples: ScoreExamples
) -> None:
    """Every example must reproduce its expected score through the service's scoring path."""
    verdicts = await score_examples(candidate, examples)
    failing = [
        {
            "index": i,
            "expected_score": example.expected_score,
            "score": verdict.score,
            "status": verdict.status.value,
            "reason": verdict.reason,
        }
        for i, (example, verdict) in enumerate(zip(examples, verdicts, strict=True))
        if verdict.status is not VerdictStatus.ok
        or verdict.score is None
        or abs(verdict.score - example.expected_score) > SCORE_TOLERANCE
    ]
    if failing:
        raise RegistrationError(
            "activation_failed",
            f"{len(failing)} of {len(verdicts)} examples do not reproduce their expected score",
            {"failing": failing},
        )


async def _probe_gate(candidate: Verifier, probe_gate: ProbeGate) -> int:
    """Every probe of the battery must pass (an error verdict fails: a checker that crashes on
    a hedge is not safe to train against); the number that passed, or a 422 listing the rest."""
    outcome = await probe_gate(candidate)
    if outcome.failed:
        raise RegistrationError(
            "probes_failed",
            f"{len(outcome.failed)} of {outcome.probes} probes of the {outcome.battery!r} battery "
            "were rewarded or not judged; the version was not stored",
            {"battery": outcome.battery, "probes": outcome.probes, "failed": outcome.failed},
        )
    return outcome.probes


def version_info(record: StoredVersion) -> VersionInfo:
    doc = record.document
    return VersionInfo(
        name=record.name,
        version=record.version,
        kind=record.kind,  # type: ignore[arg-type]
        digest=record.digest,
        description=doc.get("description", ""),
        spec=doc["spec"],
        reference_schema=doc.get("reference_schema"),
        examples=[RegisterExample.model_validate(e) for e in doc.get("examples", [])],
        created_at=record.created_at,
        disabled_at=record.disabled_at,
        active=record.active,
    )
