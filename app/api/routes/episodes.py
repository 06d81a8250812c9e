"""Episodes: what an agent did, step by step, and how it ended."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.api.deps import (
    AgentDep,
    AppState,
    EpisodeServiceDep,
    HeldKeyDep,
    PageSize,
    ReaderDep,
    SessionDep,
)
from app.api.fast import Answer, fast_post
from app.api.params import AgentId, Cursor, Since, TaskId, TaskType, Until, path_id
from app.core.errors import InvalidInput, error_responses
from app.schemas.common import stored_ident
from app.schemas.episode import (
    EpisodeComplete,
    EpisodeCreate,
    EpisodeStatus,
    Outcome,
    StepCreate,
    StepsAppend,
)
from app.schemas.episode_read import EpisodePage, EpisodeRead, EpisodeSummary
from app.schemas.filters import EpisodeFilters, check_window
from app.services.access.auth import Principal, Role
from app.services.access.idempotency import IDEMPOTENCY_HEADER

router = APIRouter(prefix="/v1/episodes", tags=["episodes"])


def _episode_id(value: str) -> str:
    return stored_ident(value, what="episode")


EpisodeId = Annotated[str, path_id("episode", "ep-fix-login-1")]


@fast_post(
    router,
    "",
    role=Role.AGENT,
    body=EpisodeCreate,
    status_code=status.HTTP_201_CREATED,
    response_model=EpisodeSummary,
    summary="Create Episode",
    responses=error_responses(401, 403, 409, 413, 422, 503),
)
async def create_episode(
    state: AppState, principal: Principal, body: EpisodeCreate, key: str | None
) -> Answer:
    """Record an episode: whole (with outcome), open (steps added later), or one step."""
    result = await state.episodes.create(principal.namespace, body, idempotency_key=key)
    return Answer(
        EpisodeSummary.model_validate(result.row).model_dump_json(),
        location=f"/v1/episodes/{result.row['id']}",
        replayed=result.replayed,
    )


@router.get("", response_model=EpisodePage, responses=error_responses(401, 422, 503))
async def list_episodes(
    principal: ReaderDep,
    size: PageSize,
    service: EpisodeServiceDep,
    session: SessionDep,
    task_id: TaskId = None,
    agent_id: AgentId = None,
    task_type: TaskType = None,
    outcome: Annotated[Outcome | None, Query(description="Only those with this outcome")] = None,
    status_: Annotated[
        EpisodeStatus | None,
        Query(alias="status", description="`open` (no outcome yet) or `completed`"),
    ] = None,
    since: Since = None,
    until: Until = None,
    cursor: Cursor = None,
) -> EpisodePage:
    """List episodes, newest first, with filters and a keyset cursor."""
    check_window(since, until)
    filters = EpisodeFilters(
        task_id=task_id,
        agent_id=agent_id,
        task_type=task_type,
        outcome=outcome.value if outcome else None,
        status=status_.value if status_ else None,
        since=since,
        until=until,
    )
    return await service.list(
        session,
        principal.namespace,
        filters,
        cursor=cursor,
        limit=size,
    )


@router.get("/{episode_id}", response_model=EpisodeRead, responses=error_responses(401, 404, 503))
async def get_episode(
    episode_id: EpisodeId, principal: ReaderDep, service: EpisodeServiceDep, session: SessionDep
) -> EpisodeRead:
    """The whole episode, with every step's input and output."""
    return await service.get(session, principal.namespace, _episode_id(episode_id))


@router.post(
    "/{episode_id}/steps",
    response_model=EpisodeSummary,
    responses=error_responses(401, 403, 404, 409, 413, 422, 503),
    openapi_extra={"parameters": [IDEMPOTENCY_HEADER]},
)
async def append_steps(
    episode_id: EpisodeId,
    body: StepsAppend | StepCreate | list[StepCreate],
    key: HeldKeyDep,
    principal: AgentDep,
    service: EpisodeServiceDep,
) -> EpisodeSummary:
    """Add one step, or many (`{"steps": [...]}` or a list), to an open episode. A retry
    under the same Idempotency-Key adds them once."""
    if isinstance(body, StepsAppend):
        steps = body.steps
    elif isinstance(body, StepCreate):
        steps = [body]
    else:
        steps = body
    if not steps:
        raise InvalidInput("steps: at least one step", field="steps")
    return await service.append_steps(
        principal.namespace,
        _episode_id(episode_id),
        steps,
        idempotency_key=key,
        caller=principal.key_id,
    )


@router.post(
    "/{episode_id}/complete",
    response_model=EpisodeSummary,
    responses=error_responses(401, 403, 404, 409, 413, 422, 503),
)
async def complete_episode(
    episode_id: EpisodeId,
    body: EpisodeComplete,
    principal: AgentDep,
    service: EpisodeServiceDep,
) -> EpisodeSummary:
    """Set the outcome. The same outcome again is 200; a different one is 409."""
    return await service.complete(principal.namespace, _episode_id(episode_id), body)


@router.delete(
    "/{episode_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(401, 403, 404, 503),
)
async def delete_episode(
    episode_id: EpisodeId, principal: AgentDep, service: EpisodeServiceDep
) -> Response:
    """Delete an episode and its payload."""
    await service.delete(principal.namespace, _episode_id(episode_id))
    return Response(status_code=status.HTTP_204_NO_CONTENT)
