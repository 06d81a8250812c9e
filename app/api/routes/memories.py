"""Memories: typed cells that recall chooses from."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query, status
from fastapi.responses import JSONResponse

from app.api.body import json_bytes
from app.api.deps import (
    AgentDep,
    AppState,
    KeptAnswerDep,
    PageSize,
    ReaderDep,
    SessionDep,
    SettingsDep,
    StateDep,
    WriteSessionDep,
    replayed,
)
from app.api.fast import Answer, fast_post
from app.api.params import Cursor, path_id
from app.core.errors import InvalidInput, error_responses
from app.schemas.common import stored_ident
from app.schemas.filters import MemoryFilters
from app.schemas.memory import (
    MemoryCreate,
    MemoryPage,
    MemoryRead,
    MemoryStatus,
    MemorySupersede,
    MemoryType,
    Sensitivity,
)
from app.schemas.search import (
    MemorySearch,
    MemorySearchResult,
)
from app.services.access.auth import Principal, Role
from app.services.access.idempotency import IDEMPOTENCY_HEADER
from app.services.memories import service as memory_service
from app.services.memories.service import MemoryService

router = APIRouter(prefix="/v1/memories", tags=["memories"])
_SCOPE_PARAM = re.compile(r"^([a-z][a-z0-9_]{0,31}):(.{1,256})$")
MemoryId = Annotated[str, path_id("memory", "mem-deploy-rule")]


def _memory_id(value: str) -> str:
    return stored_ident(value, what="memory")


def _service(
    session: SessionDep | WriteSessionDep, settings: SettingsDep, principal: Principal
) -> MemoryService:
    return MemoryService(session, limits=settings.limits, ceiling=principal.max_sensitivity)


@fast_post(
    router,
    "",
    role=Role.AGENT,
    body=MemoryCreate,
    status_code=status.HTTP_201_CREATED,
    response_model=MemoryRead,
    summary="Create Memory",
    responses=error_responses(401, 403, 409, 413, 422, 503),
)
async def create_memory(
    state: AppState, principal: Principal, body: MemoryCreate, key: str | None
) -> Answer:
    """Store a memory."""
    # MemoryRead's fields, written as pydantic would write them: no second validation.
    result, is_replay = await memory_service.create_memory(
        state.writer,
        principal.namespace,
        body,
        limits=state.settings.limits,
        ceiling=principal.max_sensitivity,
        idempotency_key=key,
    )
    return Answer(json_bytes(result), location=f"/v1/memories/{result['id']}", replayed=is_replay)


@router.get("", response_model=MemoryPage, responses=error_responses(401, 422, 503))
async def list_memories(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    settings: SettingsDep,
    type_: Annotated[
        list[MemoryType] | None,
        Query(alias="type", description="Only these types (repeat it for several); left out: all"),
    ] = None,
    status_: Annotated[
        list[MemoryStatus] | None,
        Query(alias="status", description="Only these statuses (repeatable); left out: all"),
    ] = None,
    sensitivity: Annotated[
        list[Sensitivity] | None,
        Query(description="Only these sensitivities (repeatable); left out: all"),
    ] = None,
    scope: Annotated[
        list[str] | None,
        Query(
            description="`key:value` (e.g. `session_id:s1`), repeatable: only memories whose "
            "scope has every pair given",
            examples=[["level:global"]],
        ),
    ] = None,
    cursor: Cursor = None,
) -> MemoryPage:
    """List memories, newest first, filtered by type, status, sensitivity and scope."""
    scope_filter: dict[str, str] = {}
    for item in scope or []:
        match = _SCOPE_PARAM.match(item)
        if match is None:
            raise InvalidInput("scope: expected key:value, e.g. session_id:s1", field="scope")
        scope_filter[match.group(1)] = match.group(2)
    filters = MemoryFilters(
        types=[t.value for t in type_] if type_ else None,
        statuses=[s.value for s in status_] if status_ else None,
        sensitivities=[s.value for s in sensitivity] if sensitivity else None,
        scope=scope_filter or None,
    )
    return await _service(session, settings, principal).list(
        principal.namespace, filters, cursor=cursor, limit=size
    )


@router.post("/search", response_model=MemorySearchResult, responses=error_responses(401, 422, 503))
async def search_memories(
    body: MemorySearch, principal: ReaderDep, session: SessionDep, state: StateDep
) -> MemorySearchResult:
    """Ranked full-text search (BM25 / ts_rank with criticality, confidence, value, staleness)."""
    service = MemoryService(
        session,
        limits=state.settings.limits,
        searcher=state.search,
        ceiling=principal.max_sensitivity,
    )
    return await service.search(principal.namespace, body)


@router.get("/{memory_id}", response_model=MemoryRead, responses=error_responses(401, 404, 503))
async def get_memory(
    memory_id: MemoryId, principal: ReaderDep, session: SessionDep, settings: SettingsDep
) -> MemoryRead:
    """One memory."""
    return await _service(session, settings, principal).get(
        principal.namespace, _memory_id(memory_id)
    )


_LIFECYCLE = error_responses(401, 403, 404, 409, 503)


@router.post("/{memory_id}/forget", response_model=MemoryRead, responses=_LIFECYCLE)
async def forget_memory(
    memory_id: MemoryId, principal: AgentDep, session: WriteSessionDep, settings: SettingsDep
) -> MemoryRead:
    """Soft delete: kept for history, never recalled again."""
    return await _service(session, settings, principal).forget(
        principal.namespace, _memory_id(memory_id)
    )


@router.post("/{memory_id}/quarantine", response_model=MemoryRead, responses=_LIFECYCLE)
async def quarantine_memory(
    memory_id: MemoryId, principal: AgentDep, session: WriteSessionDep, settings: SettingsDep
) -> MemoryRead:
    """Mark as suspect: recall offers it only for re-verification."""
    service = _service(session, settings, principal)
    return await service.quarantine(principal.namespace, _memory_id(memory_id))


@router.post("/{memory_id}/restore", response_model=MemoryRead, responses=_LIFECYCLE)
async def restore_memory(
    memory_id: MemoryId, principal: AgentDep, session: WriteSessionDep, settings: SettingsDep
) -> MemoryRead:
    """Bring a quarantined memory back."""
    return await _service(session, settings, principal).restore(
        principal.namespace, _memory_id(memory_id)
    )


@router.post(
    "/{memory_id}/supersede",
    status_code=status.HTTP_201_CREATED,
    response_model=MemoryRead,
    responses=error_responses(401, 403, 404, 409, 413, 422, 503),
    openapi_extra={"parameters": [IDEMPOTENCY_HEADER]},
)
async def supersede_memory(
    memory_id: MemoryId,
    body: MemorySupersede,
    kept: KeptAnswerDep,
    principal: AgentDep,
    session: WriteSessionDep,
    settings: SettingsDep,
) -> MemoryRead | JSONResponse:
    """Replace with a new version (returned); the old one becomes superseded, atomically."""
    if kept is not None and (first := await kept.replay(session)) is not None:
        return replayed(first)
    service = _service(session, settings, principal)
    new = await service.supersede(principal.namespace, _memory_id(memory_id), body)
    if kept is not None:
        await kept.keep(session, status.HTTP_201_CREATED, new.model_dump(mode="json"))
    return new
