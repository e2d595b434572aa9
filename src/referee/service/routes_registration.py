"""Registering verifier types over HTTP: POST /v1/verifiers, versions, DELETE.

A registration may ask for a probe battery of the verifier audit as part of its activation gate
(`probes` in the body); `plan_probes` below says which probes run and with what references.
The batteries are those of the built-ins in the service's verifier index, so the router is
made for that index (`registration_router`), when the app is. A judge type (kind `judge`) is
always gated on the judge battery, built from its own examples (`plan_judge_probes`).

No `from __future__ import annotations` here: the routes' body model is made per router, and
FastAPI could not resolve its name from a string annotation.
"""

import copy
import dataclasses
import json
from typing import Annotated, Any, cast

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, Field

from referee.audit import Graded, Probe, battery, generic, judge_battery
from referee.errors import InputError
from referee.models import DisableResponse, RegisterExample, RegisterResponse, Traffic, Verdict, VersionList
from referee.models import ProbeGateRequest as AnyProbeGate
from referee.models import RegisterRequest as AnyRegisterRequest
from referee.registered import (
    ProbeOutcome,
    RegistrationError,
    judge_best_score,
    judge_injection_line,
    version_info,
)
from referee.service.deps import ADMIN, CLIENT, CatalogDep, OwnerDep, ScorerDep
from referee.service.errors import documented
from referee.service.json_body import StrictJSONRoute
from referee.stats import counted_as
from referee.verifiers import InstalledVerifiers, Verifier

GENERIC_BATTERY = "generic"
JUDGE_BATTERY = "judge"  # a model judge's battery, built from the registration's examples


def battery_names(index: InstalledVerifiers) -> tuple[str, ...]:
    """`generic`, `judge` (judge types' battery, built from their examples) and every built-in
    verifier of `index` the audit has a battery for (`math`, `logic.zebra`, `judge_equivalence`...)."""
    audited = (n for n in index.names() if index.kind(n) == "builtin" and battery(n))
    return (GENERIC_BATTERY, JUDGE_BATTERY, *sorted(audited))


def register_request_model(batteries: tuple[str, ...]) -> type[AnyRegisterRequest]:
    """The body as the service takes it: the registered package cannot know the audit's
    batteries, so the service narrows `probes.battery` to them (an enum in the OpenAPI
    document, a 422 at `body.probes.battery` naming the known ones). Same names, so the
    document keeps them."""

    def known_battery(name: str) -> str:
        if name not in batteries:
            raise ValueError(f"unknown battery {name!r}; known: {', '.join(batteries)}")
        return name

    class ProbeGateRequest(AnyProbeGate):
        battery: Annotated[
            str,
            AfterValidator(known_battery),
            Field(
                max_length=100,
                json_schema_extra={"enum": list(batteries)},
                description=(
                    "A probe battery of the verifier audit (`math`, `exact`, `code`, `logic.zebra`...), "
                    "`judge` (judge types: built from the examples; they always run it), "
                    "or `generic`: only the empty, whitespace and grader-injection probes on the "
                    "examples' references."
                ),
            ),
        ]

    class RegisterRequest(AnyRegisterRequest):
        probes: ProbeGateRequest | None = Field(
            default=None,
            description=(
                "Also gate on a probe battery: after the examples, every reward-hacking probe of it "
                "is scored against the candidate and must earn nothing (or its battery's cap; an "
                "error verdict fails), else 422 `probes_failed` and nothing is stored. Omitted: no "
                "probes run."
            ),
        )

    return RegisterRequest


_READ_ERRORS = documented(401, 404, 409, 429, d409="A built-in verifier's name (not registered)")


# What a client can do next with a registered version (OpenAPI links; stateful API testing
# follows them: register -> score -> versions -> disable).
_NAME = {"name": "$response.body#/version/name"}
_LINKS = {
    "ScoreWithIt": {
        "operationId": "score",
        "requestBody": {"verifier": "$response.body#/verifier", "response": "4", "reference": "4"},
    },
    "ItsVersions": {"operationId": "list_versions", "parameters": _NAME},
    "DisableIt": {"operationId": "disable_verifier", "parameters": _NAME},
}
_EXAMPLE = {
    "name": "plain.exact",
    "kind": "declarative",
    "description": "the whole response, compared exactly",
    "spec": {"type": "check", "extract": {"kind": "none"}, "compare": {"kind": "exact"}},
    "examples": [
        {"response": "4", "reference": "4", "expected_score": 1.0},
        {"response": "5", "reference": "4", "expected_score": 0.0},
    ],
}


# ---- the probe battery of the activation gate ---------------------------------------------

GENERIC_REFERENCES = 2  # examples whose references the generic probes are scored against
EXCERPT_CHARS = 300


def plan_probes(
    config: AnyProbeGate, examples: list[RegisterExample], batteries: tuple[str, ...]
) -> list[Probe]:
    """The probes a registration's `probes` asks for, in the order they are scored.

    - The battery's attacks (hedges, sprays, think-only, retractions, injections, empty
      answers...). Its controls are left out: the registration's own examples are the gate's
      controls, and a battery's controls are phrased for the built-in verifier's formats (an
      `Answer:` line for `math`), which a registered type need not accept.
    - The generic probes (empty, whitespace, grader injection) against the references of up to
      two examples, highest expected_score first: references already in the type's shape.

    A battery's references are the built-in kind's (`"42"` for `math`, `"Paris"` for `exact`, a
    test-suite object for `code`, a puzzle for `logic.*`): a type that takes the same reference
    gets them as they are. A type whose reference wraps it (`{"answer": "42"}`) names the field
    with `reference_field`: each probe's reference is then a copy of the reference of the example
    with the highest expected_score (an empty object when it has none) with that dotted path set
    to the battery's reference, so the other fields keep values the type accepts.
    """
    if config.battery not in batteries:  # the body model says so already; a direct caller may not
        known = ", ".join(batteries)
        raise RegistrationError(
            "unknown_battery",
            f"unknown probe battery {config.battery!r}; known: {known}",
            [{"loc": ["body", "probes", "battery"], "msg": f"known: {known}", "type": "unknown_battery"}],
        )
    attacks = (
        [] if config.battery == GENERIC_BATTERY else [p for p in battery(config.battery) if not p.control]
    )
    if config.reference_field is not None:
        base = max(examples, key=lambda e: e.expected_score).reference
        attacks = [_with_reference(p, _place(base, config.reference_field, p.reference)) for p in attacks]
    ranked = sorted(examples, key=lambda e: e.expected_score, reverse=True)
    references: dict[str, Any] = {}
    for example in ranked:
        references.setdefault(json.dumps(example.reference, sort_keys=True, default=str), example.reference)
    return [*attacks, *generic(GENERIC_BATTERY, list(references.values())[:GENERIC_REFERENCES])]


def plan_judge_probes(body: AnyRegisterRequest) -> list[Probe]:
    """The judge battery of a judge type: its examples' right and wrong answers, dressed as
    injections, flattery, padding, a restated question, a refusal, hedges and retractions
    (audit/probes.py), or a 422 when the examples lack a right or a wrong answer."""
    graded = [Graded(e.response, e.reference, dict(e.options), e.expected_score) for e in body.examples]
    try:
        return judge_battery(graded, judge_injection_line(body.spec), judge_best_score(body.spec))
    except ValueError as exc:
        raise RegistrationError(
            "probes_invalid",
            f"{exc}; a judge type is always gated on the judge battery",
            [{"loc": ["body", "examples"], "msg": str(exc), "type": "probes_invalid"}],
        ) from None


def _with_reference(probe: Probe, reference: Any) -> Probe:
    return dataclasses.replace(probe, reference=reference, options=dict(probe.options))


def _place(base: Any, path: str, value: Any) -> Any:
    """A copy of `base` (a JSON object; None is an empty one) with `value` at the dotted path."""
    document = {} if base is None else copy.deepcopy(base)
    node = document
    *parents, last = path.split(".")
    for key in parents:
        if isinstance(node, dict) and key not in node:
            node[key] = {}
        node = node[key] if isinstance(node, dict) else None
    if not isinstance(node, dict):
        raise RegistrationError(
            "probes_invalid",
            f"reference_field {path!r} needs the examples' reference to be a JSON object along that path",
            [
                {
                    "loc": ["body", "probes", "reference_field"],
                    "msg": "the reference of the example with the highest expected_score has no object there",
                    "type": "probes_invalid",
                }
            ],
        )
    node[last] = value
    return document


def _unfit_references(exc: InputError, planned: list[Probe], field: str | None) -> RegistrationError:
    """A probe the type cannot even take (its reference fails the type's schema, say): the
    battery does not fit the type as configured, which is a request error, not a probe result."""
    first = exc.errors[0] if exc.errors else {"loc": [], "msg": exc.message}
    loc = list(first.get("loc", []))
    index = loc[2] if len(loc) > 2 and isinstance(loc[2], int) and loc[2] < len(planned) else None
    which = f"probe {planned[index].name!r}" if index is not None else "a probe"
    msg = f"{which} cannot be scored by this type: {str(first.get('msg'))[:500]}"
    hint = (
        "set `reference_field` to place the battery's reference inside this type's reference"
        if field is None
        else f"`reference_field` {field!r} does not give a reference this type accepts"
    )
    return RegistrationError(
        "probes_invalid",
        f"{msg}; {hint}",
        [{"loc": ["body", "probes", "reference_field"], "msg": msg, "type": "probes_invalid"}],
    )


def judge_probes(name: str, planned: list[Probe], verdicts: list[Verdict]) -> ProbeOutcome:
    """An attack passes when judged `ok` with at most its cap (0 unless the battery says
    otherwise); an error verdict fails: a checker that crashes on a hedge is not safe."""
    failed = [
        {
            "name": p.name,
            "battery": p.battery,
            "attack": p.attack,
            "response": p.response[:EXCERPT_CHARS],
            "score": v.score,
            "max_score": p.max_score,
            **({"min_score": p.min_score} if p.control else {}),
            "status": v.status.value,
            "reason": v.reason,
        }
        for p, v in zip(planned, verdicts, strict=True)
        if not p.passes(v.status.value, v.score)
    ]
    return ProbeOutcome(battery=name, probes=len(planned), failed=failed)


def registration_router(index: InstalledVerifiers) -> APIRouter:
    """The registration routes of a service whose verifier index is `index`."""
    batteries = battery_names(index)
    request_model = register_request_model(batteries)
    router = APIRouter(tags=["registration"], route_class=StrictJSONRoute)

    @router.post(
        "/v1/verifiers",
        response_model=RegisterResponse,
        status_code=201,
        operation_id="register_verifier",
        openapi_extra={"requestBody": {"content": {"application/json": {"example": _EXAMPLE}}}},
        responses={
            201: {"links": _LINKS},
            200: {
                "model": RegisterResponse,
                "description": "Same content as the latest version",
                "links": _LINKS,
            },
            **documented(
                401,
                403,
                409,
                413,
                422,
                429,
                503,
                d409="A name taken by a built-in verifier (compared case-insensitively)",
                d422=(
                    "Invalid request, a spec that is not valid for its kind, failing examples "
                    "(`activation_failed`, `detail.failing`), failed probes (`probes_failed`, "
                    "`detail.failed`), probe references that do not fit the type "
                    "(`probes_invalid`), a webhook host not allowed, or a quota"
                ),
                d503="Overloaded while scoring the examples; retry after Retry-After",
            ),
        },
        dependencies=ADMIN,
    )
    async def register(
        payload: request_model,  # type: ignore[valid-type]  # the body model made for this router
        catalog: CatalogDep,
        scorer: ScorerDep,
        owner: OwnerDep,
    ) -> Any:
        """Register a verifier type (or its next version). The examples run first through the
        scoring path; the version is stored only if each reproduces its expected score. With
        `probes`, every probe of that battery is then scored against the same candidate and must
        earn nothing (an error verdict fails too), else 422 `probes_failed` and nothing is stored."""
        body = cast(AnyRegisterRequest, payload)

        async def score_examples(verifier: Verifier, examples: list[RegisterExample]) -> list[Verdict]:
            items = [(e.response, e.reference, e.options) for e in examples]
            return await scorer.score_with(verifier, items, ("body", "examples"), owner)

        probe_gate = None
        config = body.probes
        if config is not None and config.battery == JUDGE_BATTERY and body.kind != "judge":
            raise RegistrationError(
                "probes_invalid",
                "the judge battery is for judge types (kind `judge`)",
                [{"loc": ["body", "probes", "battery"], "msg": "judge types only", "type": "probes_invalid"}],
            )
        if config is not None or body.kind == "judge":
            # A judge type runs the judge battery, and the battery it asks for besides.
            extra = config if config is not None and config.battery != JUDGE_BATTERY else None
            planned = plan_probes(extra, body.examples, batteries) if extra is not None else []
            names = [JUDGE_BATTERY] * (body.kind == "judge") + ([extra.battery] if extra else [])

            async def probe_gate(candidate: Verifier) -> ProbeOutcome:
                # The judge battery is planned once the examples passed (it is built from them).
                probes = [*(plan_judge_probes(body) if body.kind == "judge" else []), *planned]
                items = [(p.response, p.reference, p.options) for p in probes]
                try:
                    verdicts = await scorer.score_with(candidate, items, ("body", "probes"), owner)
                except InputError as exc:
                    raise _unfit_references(exc, probes, extra.reference_field if extra else None) from None
                return judge_probes(" + ".join(names), probes, verdicts)

        # Its examples' and probes' verdicts are no training traffic (statistics keep them apart).
        with counted_as(Traffic.registration):
            result = await catalog.register(body, score_examples, probe_gate)
        answer = RegisterResponse(
            created=result.created,
            verifier=result.stored.qualified,
            version=version_info(result.stored),
            secret=result.secret,
            probes_passed=result.probes_passed,
        )
        return JSONResponse(
            status_code=201 if result.created else 200, content=answer.model_dump(mode="json")
        )

    @router.get(
        "/v1/verifiers/{name}/versions",
        response_model=VersionList,
        operation_id="list_versions",
        responses=_READ_ERRORS,
        dependencies=CLIENT,
    )
    async def versions(name: str, catalog: CatalogDep) -> VersionList:
        """Every version of a registered type, disabled ones included (oldest first)."""
        return VersionList(name=name, versions=await catalog.versions(name))

    @router.delete(
        "/v1/verifiers/{name}",
        response_model=DisableResponse,
        operation_id="disable_verifier",
        responses=documented(401, 403, 404, 409, 429, d409="A built-in verifier's name (not registered)"),
        dependencies=ADMIN,
    )
    async def disable(name: str, catalog: CatalogDep) -> DisableResponse:
        """Disable a registered type (`name`: every version; `name@3`: that one). History is kept;
        a later POST of the same name creates the next version."""
        return DisableResponse(name=name, disabled=await catalog.disable(name))

    return router
