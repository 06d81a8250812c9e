"""Recall ("what should I remember now?") and the rewards that score it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import JSONResponse

from app.api.deps import (
    AgentDep,
    AppState,
    KeptAnswerDep,
    PageSize,
    ReaderDep,
    SessionDep,
    StateDep,
    WriteSessionDep,
    replayed,
)
from app.api.fast import Answer, fast_post
from app.api.params import Cursor, EpisodeIdFilter, TaskId
from app.core.errors import error_responses
from app.schemas.recall import RecallRequest, RecallResponse, RewardCreate, RewardPage, RewardRead
from app.services.access.auth import Principal, Role
from app.services.access.idempotency import IDEMPOTENCY_HEADER
from app.services.rewards.service import RewardService

router = APIRouter(prefix="/v1", tags=["recall"])


@fast_post(
    router,
    "/recall",
    role=Role.AGENT,
    body=RecallRequest,
    response_model=RecallResponse,
    summary="Recall",
    responses=error_responses(401, 403, 409, 422, 503),
)
async def recall(
    state: AppState, principal: Principal, body: RecallRequest, key: str | None
) -> Answer:
    """Choose memories for a task under a token budget; the decision is logged for RL."""
    recalls = state.recalls
    result, is_replay = await recalls.recall(
        principal.namespace,
        body,
        ceiling=principal.max_sensitivity,
        idempotency_key=key,
        caller=principal.key_id,
    )
    return Answer(result.model_dump_json(), replayed=is_replay)


@router.post(
    "/rewards",
    status_code=status.HTTP_201_CREATED,
    response_model=RewardRead,
    responses={
        **error_responses(401, 403, 404, 409, 422, 503),
        200: {"description": "The same reward, repeated"},
    },
    openapi_extra={"parameters": [IDEMPOTENCY_HEADER]},
)
async def create_reward(
    body: RewardCreate,
    response: Response,
    kept: KeptAnswerDep,
    principal: AgentDep,
    session: WriteSessionDep,
    state: StateDep,
) -> RewardRead | JSONResponse:
    """Score a recall, an episode, or a task (its recalls and its episodes).

    A recall's transition is completed once (a different reward for it is a 409); an
    episode keeps every reward it gets, and learning uses their mean; with an
    Idempotency-Key, a retry is the first answer and adds no reward."""
    if kept is not None and (first := await kept.replay(session)) is not None:
        return replayed(first)
    service = RewardService(session, learning=state.settings.learning)
    reward, created = await service.create(principal.namespace, body)
    if state.worker is not None:
        state.worker.wake()
    if not created:
        response.status_code = status.HTTP_200_OK
    if kept is not None:
        await kept.keep(
            session, response.status_code or status.HTTP_201_CREATED, reward.model_dump(mode="json")
        )
    return reward


@router.get("/rewards", response_model=RewardPage, responses=error_responses(401, 422, 503))
async def list_rewards(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    recall_id: Annotated[str | None, Query(description="Only those of this recall id")] = None,
    task_id: TaskId = None,
    episode_id: EpisodeIdFilter = None,
    cursor: Cursor = None,
) -> RewardPage:
    """Rewards, newest first."""
    return await RewardService(session).list(
        principal.namespace,
        recall_id=recall_id,
        task_id=task_id,
        episode_id=episode_id,
        cursor=cursor,
        limit=size,
    )
