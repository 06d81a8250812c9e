"""Recall ("what should I remember now?") and the rewards that score it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import JSONResponse
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.body import DirectRoute, json_body, parse_body
from app.api.deps import (
    AgentDep,
    AppState,
    KeptAnswerDep,
    ReaderDep,
    SessionDep,
    SettingsDep,
    StateDep,
    WriteSessionDep,
    get_state,
    page_size,
    replayed,
    require_agent,
)
from app.core.errors import error_responses
from app.schemas.recall import RecallRequest, RecallResponse, RewardCreate, RewardPage, RewardRead
from app.services.auth import Principal
from app.services.idempotency import IDEMPOTENCY_HEADER, checked_key, digest, keyed_id
from app.services.recall import RecallService
from app.services.rewards import RewardService

router = APIRouter(prefix="/v1", tags=["recall"])


async def recall(request: Request) -> Response:
    """Choose memories for a task under a token budget; the decision is logged for RL."""
    # Agents call this before every task: a DirectRoute that does its own auth and
    # parsing and serialises the answer once (no second validation of the response).
    principal = await require_agent(request)
    body = await parse_body(request, RecallRequest)
    state = await get_state(request)
    key = checked_key(request.headers.get("idempotency-key"))
    if key is None:
        return await _recall(state, principal, body)
    # A retry waits for the first request with its key, then gets its answer.
    recall_id = keyed_id(principal.namespace, "recall", key)
    request_digest = digest(body.model_dump_json().encode())
    async with state.key_locks.hold(principal.namespace, recall_id):
        async with state.read_sessions() as session:
            service = _service(session, state)
            replayed = await service.replay(
                principal.namespace, recall_id, request_digest=request_digest
            )
        if replayed is not None:
            return Response(
                replayed.model_dump_json(),
                media_type="application/json",
                headers={"Idempotent-Replayed": "true"},
            )
        return await _recall(
            state, principal, body, recall_id=recall_id, request_digest=request_digest
        )


def _service(session: AsyncSession, state: AppState) -> RecallService:
    return RecallService(
        session, writer=state.writer, settings=state.settings.recall, rng=state.recall_rng
    )


async def _recall(
    state: AppState,
    principal: Principal,
    body: RecallRequest,
    *,
    recall_id: str | None = None,
    request_digest: str | None = None,
) -> Response:
    async with state.read_sessions() as session:
        service = _service(session, state)
        choice = await service.choose(
            principal.namespace,
            body,
            ceiling=principal.max_sensitivity,
            recall_id=recall_id,
            request_digest=request_digest,
        )
        await session.commit()
    # Logged once the read connection is back in the pool, which the writer draws on too.
    result = await service.log(choice)
    return Response(result.model_dump_json(), media_type="application/json")


router.add_api_route(
    "/recall",
    recall,
    methods=["POST"],
    route_class_override=DirectRoute,
    response_model=RecallResponse,
    summary="Recall",
    responses=error_responses(401, 403, 409, 422, 503),
    openapi_extra={
        **json_body("RecallRequest", RecallRequest),
        "parameters": [IDEMPOTENCY_HEADER],
    },
)


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
    if kept is not None and (first := await kept.replay()) is not None:
        return replayed(first)
    service = RewardService(session, learning=state.settings.learning)
    reward, created = await service.create(principal.namespace, body)
    if state.worker is not None:
        state.worker.wake()
    if not created:
        response.status_code = status.HTTP_200_OK
    if kept is not None:
        await kept.keep(
            response.status_code or status.HTTP_201_CREATED, reward.model_dump(mode="json")
        )
    return reward


@router.get("/rewards", response_model=RewardPage, responses=error_responses(401, 422, 503))
async def list_rewards(
    principal: ReaderDep,
    session: SessionDep,
    settings: SettingsDep,
    recall_id: str | None = None,
    task_id: str | None = None,
    episode_id: str | None = None,
    cursor: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> RewardPage:
    """Rewards, newest first."""
    return await RewardService(session).list(
        principal.namespace,
        recall_id=recall_id,
        task_id=task_id,
        episode_id=episode_id,
        cursor=cursor,
        limit=page_size(limit, settings),
    )
