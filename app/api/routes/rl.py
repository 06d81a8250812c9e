"""The RL transition log and the dataset for data scientists."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BeforeValidator, Field

from app.api.deps import PageSize, ReaderDep, SessionDep, SettingsDep, StateDep
from app.api.params import Cursor, PolicyId, Since, TaskType, Until, digits
from app.core.errors import error_responses
from app.schemas.filters import DatasetFilters, check_window
from app.schemas.recall import TransitionPage
from app.schemas.service import DatasetMetadata, dataset_answer
from app.services import dataset
from app.services.dataset.download import download
from app.services.dataset.transitions import TransitionService
from app.services.policies.service import PolicyService

router = APIRouter(prefix="/v1", tags=["rl"])
MAX_EXPORT = 100_000
DATASET_ANSWER = dataset_answer({f.media_type: name for name, f in dataset.FORMATS.items()})


def _filters(
    since: datetime | None,
    until: datetime | None,
    policy_id: str | None,
    task_type: str | None,
) -> DatasetFilters:
    check_window(since, until)
    return DatasetFilters(since=since, until=until, policy_id=policy_id, task_type=task_type)


@router.get(
    "/rl/transitions", response_model=TransitionPage, responses=error_responses(401, 422, 503)
)
async def list_transitions(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    status: Annotated[
        Literal["pending", "completed"] | None,
        Query(description="`pending` (not rewarded yet) or `completed`; left out: both"),
    ] = None,
    since: Since = None,
    until: Until = None,
    policy_id: PolicyId = None,
    task_type: TaskType = None,
    cursor: Cursor = None,
) -> TransitionPage:
    """Every transition, pending ones included, oldest first."""
    return await TransitionService(session).list(
        principal.namespace,
        status=status,
        filters=_filters(since, until, policy_id, task_type),
        cursor=cursor,
        limit=size,
    )


@router.get(
    "/rl/dataset",
    response_class=StreamingResponse,
    responses={
        **error_responses(401, 422, 503),
        200: DATASET_ANSWER,
    },
)
async def download_dataset(
    request: Request,
    principal: ReaderDep,
    session: SessionDep,
    state: StateDep,
    format: Annotated[
        dataset.FormatName,
        Query(description="`ndjson` (default: streamed, one JSON row a line) or `parquet`"),
    ] = "ndjson",
    table: Annotated[
        dataset.TableName,
        Query(
            description="`transitions` (default: one row per completed recall) or "
            "`candidates` (one row per recall and candidate)"
        ),
    ] = "transitions",
    since: Since = None,
    until: Until = None,
    policy_id: PolicyId = None,
    task_type: TaskType = None,
    cursor: Annotated[
        str | None, Query(description="From the `Link: rel=next` of the previous download")
    ] = None,
    limit: Annotated[
        Annotated[int, Field(ge=1, le=MAX_EXPORT), BeforeValidator(digits)],
        Query(
            description="Transitions per download, 1 to 100,000 (default 10,000); the "
            "candidates table has a row per candidate of each",
            examples=[10_000],
        ),
    ] = 10_000,
) -> StreamingResponse:
    """Completed transitions for offline RL and off-policy evaluation (see /v1/rl/metadata)."""
    found = await download(
        session,
        state.transactions,
        principal.namespace,
        format=format,
        table=table,
        filters=_filters(since, until, policy_id, task_type),
        cursor=cursor,
        limit=limit,
        slots=state.settings.recall.candidate_slots,
    )
    headers = found.headers(request.url.path, request.query_params)
    return StreamingResponse(found.body, media_type=found.media_type, headers=headers)


@router.get("/rl/metadata", response_model=DatasetMetadata, responses=error_responses(401, 503))
async def dataset_metadata(
    principal: ReaderDep, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """Schema version, feature names, vector layouts, action catalogue, reward spec, and
    the policies that decided the logged recalls."""
    service = PolicyService(session, recall=settings.recall, learning=settings.learning)
    found = await service.list(principal.namespace)
    keep = ("id", "version", "kind", "status", "parent_id", "created_at")
    return dataset.metadata(settings.recall) | {
        "policies": [p.model_dump(mode="json", include=set(keep)) for p in found]
    }
