"""Key management and the audit log (admin role: its namespace; operator: the service)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import JSONResponse

from app.api.deps import (
    AdminDep,
    KeptAnswerDep,
    PageSize,
    SessionDep,
    StateDep,
    WriteSessionDep,
    client_address,
    write_session,
)
from app.api.params import AuditNamespace, Cursor, KeysNamespace, path_id
from app.core.errors import error_responses
from app.schemas.admin import AuditPage, KeyCreate, KeyCreated, KeyPage, KeyRead
from app.schemas.common import stored_ident
from app.services.access import audit
from app.services.access.auth import Role
from app.services.access.idempotency import IDEMPOTENCY_HEADER
from app.services.access.keys import KeyService

router = APIRouter(prefix="/v1", tags=["admin"])


@router.post(
    "/keys",
    response_model=KeyCreated,
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(401, 403, 409, 422, 503),
    openapi_extra={"parameters": [IDEMPOTENCY_HEADER]},
)
async def create_key(
    body: KeyCreate,
    kept: KeptAnswerDep,
    principal: AdminDep,
    session: WriteSessionDep,
    request: Request,
) -> KeyCreated | JSONResponse:
    """Create an API key; the key is in this answer only. A retry under the same
    Idempotency-Key is a 409 naming the key made (its secret is not kept: revoke it and
    create another), and is audited."""
    keys = KeyService(session, client=client_address(request))
    if kept is not None and (first := await kept.replay(session)) is not None:
        refused = await keys.refuse_replay(principal, first[1])
        return JSONResponse(
            refused.body(), status_code=refused.status_code, headers={"Idempotent-Replayed": "true"}
        )
    created = await keys.create(principal, body)
    if kept is not None:  # the record without its secret: only the hash is stored
        kept_answer = created.model_dump(mode="json", exclude={"key"})
        await kept.keep(session, status.HTTP_201_CREATED, kept_answer)
    return created


@router.get("/keys", response_model=KeyPage, responses=error_responses(401, 403, 422, 503))
async def list_keys(
    principal: AdminDep,
    size: PageSize,
    session: SessionDep,
    namespace: KeysNamespace = None,
    cursor: Cursor = None,
) -> KeyPage:
    """Keys, newest first (never the keys themselves); operators may name any namespace."""
    return await KeyService(session).list(principal, namespace=namespace, cursor=cursor, limit=size)


@router.post(
    "/keys/{key_id}/revoke", response_model=KeyRead, responses=error_responses(401, 403, 404, 503)
)
async def revoke_key(
    key_id: Annotated[str, path_id("key", "key_01HZXB")],
    principal: AdminDep,
    state: StateDep,
    request: Request,
) -> KeyRead:
    """Revoke a key: it stops working at once on this server (other servers: within
    their key cache's lifetime, ENGRAM_AUTH_CACHE_TTL_S)."""
    key_id = stored_ident(key_id, what="key")
    async with write_session(state) as session:
        service = KeyService(session, client=client_address(request))
        revoked = await service.revoke(principal, key_id)
    state.auth.forget()  # after the commit, so that no lookup caches the key again
    return revoked


@router.get("/audit", response_model=AuditPage, responses=error_responses(401, 403, 422, 503))
async def list_audit(
    principal: AdminDep,
    size: PageSize,
    session: SessionDep,
    action: Annotated[
        str | None, Query(description="Only this action (`key.create`, `request.denied`, ...)")
    ] = None,
    namespace: AuditNamespace = None,
    cursor: Cursor = None,
) -> AuditPage:
    """Audit events, newest first: an admin sees its namespace's, an operator every one."""
    if not principal.at_least(Role.OPERATOR):
        namespace = principal.namespace
    return await audit.page(session, namespace=namespace, action=action, cursor=cursor, limit=size)
