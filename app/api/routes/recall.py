"""Recall ("what should I remember now?") and the rewards that score it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.api.deps import (
    AgentDep,
    ReaderDep,
    SessionDep,
    SettingsDep,
    StateDep,
    WriteSessionDep,
    page_size,
)
from app.core.errors import error_responses
from app.schemas.recall import RecallRequest, RecallResponse, RewardCreate, RewardPage, RewardRead
from app.services.recall import RecallService
from app.services.rewards import RewardService

router = APIRouter(prefix="/v1", tags=["recall"])


@router.post(
    "/recall", response_model=RecallResponse, responses=error_responses(401, 403, 422, 503)
)
async def recall(
    body: RecallRequest, principal: AgentDep, session: SessionDep, state: StateDep
) -> RecallResponse:
    """Choose memories for a task under a token budget; the decision is logged for RL."""
    service = RecallService(
        session, writer=state.writer, settings=state.settings.recall, rng=state.recall_rng
    )
    return await service.recall(principal.namespace, body)


@router.post(
    "/rewards",
    status_code=status.HTTP_201_CREATED,
    response_model=RewardRead,
    responses={
        **error_responses(401, 403, 404, 409, 422, 503),
        200: {"description": "The same reward, repeated"},
    },
)
async def create_reward(
    body: RewardCreate, response: Response, principal: AgentDep, session: WriteSessionDep
) -> RewardRead:
    """Score a recall (or every recall of a task); each transition is completed once."""
    reward, created = await RewardService(session).create(principal.namespace, body)
    if not created:
        response.status_code = status.HTTP_200_OK
    return reward


@router.get("/rewards", response_model=RewardPage, responses=error_responses(401, 422, 503))
async def list_rewards(
    principal: ReaderDep,
    session: SessionDep,
    settings: SettingsDep,
    recall_id: str | None = None,
    task_id: str | None = None,
    cursor: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> RewardPage:
    """Rewards, newest first."""
    return await RewardService(session).list(
        principal.namespace,
        recall_id=recall_id,
        task_id=task_id,
        cursor=cursor,
        limit=page_size(limit, settings),
    )
