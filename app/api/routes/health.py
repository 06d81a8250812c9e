"""Liveness and readiness."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy import text

from app.api.deps import StateDep, get_principal
from app.core.errors import AppError
from app.db.backends.libsql import ReplicaSync
from app.schemas.service import Health, Readiness
from app.services.access.auth import Role
from app.worker.embeddings import pending

router = APIRouter(tags=["health"])
log = logging.getLogger("engram.api")


# Probes answer without a key: the document's global bearer requirement does not apply.
PUBLIC: dict[str, Any] = {"security": []}


@router.get("/", include_in_schema=False)
async def root() -> dict[str, Any]:
    """Where a person who opened the service's address goes next."""
    return {
        "service": "engram",
        "dashboard": "/ui",
        "api_docs": "/docs",
        "openapi": "/openapi.json",
        "health": "/health",
    }


@router.get("/health", response_model=Health, openapi_extra=PUBLIC)
async def health() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.head("/health", openapi_extra=PUBLIC, response_class=Response)
async def health_head() -> Response:
    """Liveness for probes that send HEAD: 200 with no body."""
    return Response(status_code=200)


@router.get(
    "/ready",
    response_model=Readiness,
    response_model_exclude_none=True,
    responses={503: {"model": Readiness, "description": "A store does not answer"}},
    openapi_extra=PUBLIC,
)
async def ready(request: Request, state: StateDep) -> Any:
    """Readiness: both stores answer. The search index's and the embeddings' figures
    (counts across every namespace) are for an operator's key (or open mode) only."""
    stores: dict[str, str] = {}
    try:
        async with state.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        stores["sql"] = "ok"
    except Exception as exc:
        stores["sql"] = f"unavailable: {type(exc).__name__}"
    try:
        await state.blobs.ping()
        stores["blobs"] = "ok"
    except Exception as exc:
        stores["blobs"] = f"unavailable: {exc}"
    ok = all(v == "ok" for v in stores.values())
    body: dict[str, Any] = {"status": "ready" if ok else "unavailable", "stores": stores}
    body["search"] = {"mode": state.search.default_mode.value}
    if not ok:
        return JSONResponse(body, status_code=503)
    if not await _operator(request):  # (who asks is known only while the database answers)
        return body
    index = state.search.lexical.stats()
    if index is not None:
        body["search_index"] = index
    if isinstance(state.checkpointer, ReplicaSync):
        body["replica"] = state.checkpointer.figures()
    if state.search.embedder is not None:
        embeddings = state.backlog.stats() if state.backlog is not None else {}
        body["search"]["embeddings"] = {
            "model": state.search.embedder.model,
            "dim": state.search.embedder.dim,
            "pending": await pending(state.transactions),
            **embeddings,
            "index": state.search.vectors.stats() if state.search.vectors else None,
        }
    return body


async def _operator(request: Request) -> bool:
    """Whether the caller may see the service's figures: an operator (open mode is one)."""
    try:
        principal = await get_principal(request)
    except AppError:  # no key, a wrong one, or too many wrong ones
        return False
    except Exception:  # the database went away since SELECT 1: no figures, no 500
        log.warning("readiness could not tell who asks", exc_info=True)
        return False
    return principal.at_least(Role.OPERATOR)
