"""`/v1/environments`: multi-turn environments and their episodes (issue 30).

`GET` lists them; `POST .../{name}/episodes` starts an episode (task or seed) and answers the
first observation and the tools; `.../step` takes the model's tool call or message; `.../verify`
answers the usual `Verdict`; `DELETE` ends the episode (its code session with it). Everything is
`runtime.environments`' (`referee.environments.Environments`); here is only HTTP. An episode is
its key's alone: another key's id is 404, as for an id never issued.

Registering an environment (`POST /v1/environments`, admin) is gated like registering a type:
its examples must reproduce their scores, and the probe battery of its verifier (the audit's
battery of that built-in, plus the generic probes on the examples' references) must earn
nothing: that part is here because the batteries are the audit's, which the service owns.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response

from referee.audit import battery
from referee.environments import Action, Environments
from referee.models import (
    EnvironmentInfo,
    EpisodeRequest,
    EpisodeStarted,
    MessageAction,
    ProbeGateRequest,
    RegisteredEnvironment,
    RegisterEnvironmentRequest,
    RegisterExample,
    StepRequest,
    StepResult,
    Verdict,
    VerifyRequest,
)
from referee.registered import RegistrationError
from referee.service.deps import ADMIN, CLIENT, OwnerDep, RuntimeDep, ScorerDep
from referee.service.errors import documented
from referee.service.json_body import StrictJSONRoute
from referee.service.routes_registration import GENERIC_BATTERY, judge_probes, plan_probes

environments_router = APIRouter(prefix="/v1/environments", tags=["environments"], route_class=StrictJSONRoute)

_D404 = "Unknown environment, or no episode of this key by that id (never issued, deleted, expired, or another key's)"
Name = Annotated[
    str, Path(min_length=1, max_length=200, description="An environment of `GET /v1/environments`.")
]
EpisodeId = Annotated[str, Path(min_length=1, max_length=128, description="The id the episode's start gave.")]


def get_environments(runtime: RuntimeDep) -> Environments:
    environments: Environments = runtime.environments
    return environments


EnvironmentsDep = Annotated[Environments, Depends(get_environments)]

# What a request valid against the document may still be refused for, per operation, in the
# form of the schema tests' list of such refusals (issue 32): each names the error, the field,
# and why JSON Schema cannot state it.
_TASK_REFUSAL: dict[str, Any] = {
    "error": "validation_error",
    "fields": ["task"],
    "why": "A task is the environment's: its fields, and its reference and options as its verifier "
    "takes them, depend on the environment and verifier named; no task and no puzzle generator.",
}
_REGISTRATION_REFUSALS: list[dict[str, Any]] = [
    {
        "error": "activation_failed",
        "why": "An example does not reproduce its expected_score, or none scores 1 or 0.",
    },
    {
        "error": "validation_error",
        "fields": ["examples"],
        "why": "An example's task this environment cannot take.",
    },
    {"error": "probes_failed", "why": "A probe of the verifier's battery earned a reward."},
    {"error": "invalid_spec", "why": "A puzzle environment's verifier is not a built-in logic.* checker."},
    {"error": "quota_exceeded", "why": "The number of registered environments is at its limit."},
]
_VERIFY_REFUSAL: dict[str, Any] = {
    "error": "validation_error",
    "types": ["too_long"],
    "why": "A response over the configured REFEREE_MAX_RESPONSE_CHARS.",
}
ENVIRONMENT_REFUSALS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("/v1/environments/{name}/episodes", "post"): [_TASK_REFUSAL],
    ("/v1/environments/{name}/episodes/{episode_id}/verify", "post"): [_VERIFY_REFUSAL],
    ("/v1/environments", "post"): _REGISTRATION_REFUSALS,
}


@environments_router.get(
    "", response_model=list[EnvironmentInfo], responses=documented(401, 429), dependencies=CLIENT
)
async def list_environments(environments: EnvironmentsDep) -> list[EnvironmentInfo]:
    """The environments this service runs: built-in, then registered."""
    return await environments.infos()


@environments_router.post(
    "/{name}/episodes",
    status_code=201,
    response_model=EpisodeStarted,
    responses=documented(
        401,
        404,
        422,
        429,
        503,
        d404="Unknown environment, or the task names an unknown verifier",
        d422="Invalid request; `detail` names the fields: a task the environment cannot take (its "
        "reference or options refused by its verifier), or no task where there is no puzzle generator",
        d429="This key has too many episodes open, or too many requests in flight; retry after Retry-After",
    ),
    dependencies=CLIENT,
)
async def start_episode(
    name: Name, body: EpisodeRequest, environments: EnvironmentsDep, owner: OwnerDep
) -> EpisodeStarted:
    """Start an episode: the first observation (the prompt) and the tools the model may call."""
    episode, first = await environments.start_episode(name, owner, body.task, body.seed)
    return EpisodeStarted(
        episode_id=episode.id, observation=first.observation, tools=first.tools, max_turns=episode.max_turns
    )


@environments_router.post(
    "/{name}/episodes/{episode_id}/step",
    response_model=StepResult,
    responses=documented(
        401,
        404,
        409,
        422,
        429,
        503,
        d404=_D404,
        d409="The episode is over (answered, solved, or out of turns): verify or delete it",
        d429="The episode's first tool call could not open a code session: this key holds its quota",
        d503="No code session could be opened (every slot taken, or no sandbox); retry after Retry-After",
    ),
    dependencies=CLIENT,
)
async def step(
    name: Name, episode_id: EpisodeId, body: StepRequest, environments: EnvironmentsDep, owner: OwnerDep
) -> StepResult:
    """One turn: the model's tool call or message, and what it observes back."""
    act = body.action
    action = (
        Action("message", content=act.content)
        if isinstance(act, MessageAction)
        else Action("tool_call", name=act.name, arguments=act.arguments)
    )
    episode, result = await environments.step(name, owner, episode_id, action)
    return StepResult(observation=result.observation, done=result.done, turn=episode.turn, info=result.info)


@environments_router.post(
    "/{name}/episodes/{episode_id}/verify",
    response_model=Verdict,
    responses=documented(401, 404, 422, 429, 503, d404=_D404),
    dependencies=CLIENT,
)
async def verify(
    name: Name, episode_id: EpisodeId, body: VerifyRequest, environments: EnvironmentsDep, owner: OwnerDep
) -> Verdict:
    """The episode's verdict (`details` say its turns and tool calls): of `response`, or of the
    final message (the last answer, in a game) when it is null."""
    return await environments.verify(name, owner, episode_id, body.response)


@environments_router.delete(
    "/{name}/episodes/{episode_id}",
    status_code=204,
    response_class=Response,
    responses=documented(401, 404, 422, 429, d404=_D404),
    dependencies=CLIENT,
)
async def delete_episode(
    name: Name, episode_id: EpisodeId, environments: EnvironmentsDep, owner: OwnerDep
) -> Response:
    """End an episode; its code session, if it opened one, is closed with it."""
    await environments.delete(name, owner, episode_id)
    return Response(status_code=204)


# ---- registered environments ---------------------------------------------------------------


@environments_router.post(
    "",
    status_code=201,
    response_model=RegisteredEnvironment,
    responses=documented(
        401,
        403,
        404,
        409,
        413,
        422,
        429,
        503,
        d409="A built-in environment's name",
        d404="Unknown verifier",
        d422="Invalid request; failing examples (`activation_failed`), a verifier rewarded by a "
        "probe (`probes_failed`), a puzzle environment without a logic checker (`invalid_spec`)",
    ),
    dependencies=ADMIN,
)
async def register(
    body: RegisterEnvironmentRequest, environments: EnvironmentsDep, scorer: ScorerDep, owner: OwnerDep
) -> RegisteredEnvironment:
    """Register a declarative environment (or replace one of the same name) after its gate."""

    async def probes(verifier: str, references: list[Any]) -> int:
        examples = [RegisterExample(response="", reference=ref, expected_score=1.0) for ref in references]
        # A built-in's own battery (its references are in its shape), else the generic probes.
        base = verifier.split("@")[0]
        name = base if battery(base) else GENERIC_BATTERY
        planned = plan_probes(ProbeGateRequest(battery=name), examples, (GENERIC_BATTERY, name))
        candidate = scorer.resolve(verifier)
        items = [(p.response, p.reference, p.options) for p in planned]
        verdicts = await scorer.score_with(candidate, items, ("body", "probes"), owner)
        outcome = judge_probes(name, planned, verdicts)
        if outcome.failed:
            detail = {"battery": outcome.battery, "probes": outcome.probes, "failed": outcome.failed}
            why = f"{len(outcome.failed)} of {outcome.probes} probes of the {outcome.battery!r} battery"
            raise RegistrationError("probes_failed", f"{why} earned something; nothing was stored", detail)
        return outcome.probes

    return await environments.register(body, owner, probes)


@environments_router.delete(
    "/{name}",
    status_code=204,
    response_class=Response,
    responses=documented(401, 403, 404, 409, 429, d409="A built-in environment's name"),
    dependencies=ADMIN,
)
async def unregister(name: Name, environments: EnvironmentsDep) -> Response:
    """Remove a registered environment (its open episodes run to their end)."""
    await environments.unregister(name)
    return Response(status_code=204)
