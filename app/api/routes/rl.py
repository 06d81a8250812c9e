"""The RL transition log and the dataset for data scientists; the policies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from app.api.deps import ReaderDep, SessionDep, SettingsDep, StateDep, check_window, page_size
from app.core.errors import error_responses
from app.learning.features import SCHEMA_VERSION
from app.repositories.rl import DatasetFilters, TransitionRepository
from app.schemas.common import Timestamp
from app.schemas.recall import PolicyRead, TransitionPage, TransitionRead
from app.services import dataset, pagination, policies

router = APIRouter(prefix="/v1", tags=["rl"])
MAX_EXPORT = 100_000


def _filters(
    since: Timestamp | None,
    until: Timestamp | None,
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
    session: SessionDep,
    settings: SettingsDep,
    status: Literal["pending", "completed"] | None = None,
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    policy_id: str | None = None,
    task_type: str | None = None,
    cursor: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> TransitionPage:
    """Every transition, pending ones included, oldest first."""
    size = page_size(limit, settings)
    rows = await TransitionRepository(session).page(
        principal.namespace,
        status=status,
        filters=_filters(since, until, policy_id, task_type),
        after=pagination.after(cursor),
        limit=size + 1,
    )
    rows, next_cursor = pagination.cut(rows, size)
    return TransitionPage(
        items=[TransitionRead.model_validate(r, from_attributes=True) for r in rows],
        next_cursor=next_cursor,
    )


@router.get(
    "/rl/dataset",
    responses={
        **error_responses(401, 422, 503),
        200: {
            "description": "NDJSON (streamed) or Parquet (attachment); `Link: rel=next` when more",
            "content": {"application/x-ndjson": {}, "application/vnd.apache.parquet": {}},
        },
    },
)
async def download_dataset(
    request: Request,
    principal: ReaderDep,
    session: SessionDep,
    state: StateDep,
    format: Literal["ndjson", "parquet"] = "ndjson",
    table: Literal["transitions", "candidates"] = "transitions",
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    policy_id: str | None = None,
    task_type: str | None = None,
    cursor: str | None = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_EXPORT, description="transitions per download")
    ] = 10_000,
) -> StreamingResponse:
    """Completed transitions for offline RL and off-policy evaluation (see /v1/rl/metadata)."""
    filters = _filters(since, until, policy_id, task_type)
    after = pagination.after(cursor)
    last, more = await TransitionRepository(session).boundary(
        principal.namespace, filters=filters, after=after, limit=limit
    )
    export = dataset.DatasetExport(
        state.read_sessions,
        namespace=principal.namespace,
        table=table,
        filters=filters,
        after=after,
        until_key=last,
        slots=state.settings.recall.candidate_slots,
    )
    headers = {"X-Schema-Version": SCHEMA_VERSION}
    if more and last is not None:
        params = dict(request.query_params) | {"cursor": pagination.encode_cursor(*last)}
        headers["Link"] = f'<{request.url.path}?{urlencode(params)}>; rel="next"'
    if format == "parquet":
        spooled = await export.parquet()

        def chunks() -> Iterator[bytes]:
            with spooled:
                while block := spooled.read(1 << 20):
                    yield block

        headers["Content-Disposition"] = f'attachment; filename="engram-{table}.parquet"'
        return StreamingResponse(
            chunks(), media_type="application/vnd.apache.parquet", headers=headers
        )
    return StreamingResponse(export.ndjson(), media_type="application/x-ndjson", headers=headers)


@router.get("/rl/metadata", responses=error_responses(401, 503))
async def dataset_metadata(principal: ReaderDep, settings: SettingsDep) -> dict[str, Any]:
    """Schema version, feature names, vector layouts, action catalogue, reward spec."""
    return dataset.metadata(settings.recall)


@router.get("/policies", response_model=list[PolicyRead], responses=error_responses(401))
async def list_policies(principal: ReaderDep, settings: SettingsDep) -> list[PolicyRead]:
    """The recall policies, with their action space and settings."""
    return policies.describe(settings.recall)


@router.get("/policies/{policy_id}", response_model=PolicyRead, responses=error_responses(401, 404))
async def get_policy(policy_id: str, principal: ReaderDep, settings: SettingsDep) -> PolicyRead:
    """One policy."""
    return policies.get(settings.recall, policy_id)
