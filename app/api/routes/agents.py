"""Coding agents' past sessions, imported from their transcripts."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import AgentDep, StateDep
from app.core.errors import error_responses
from app.schemas.agents import SessionImport, SessionImported
from app.services.agents.imports import SessionImports

router = APIRouter(prefix="/v1/agents", tags=["hooks"])


@router.post(
    "/sessions",
    response_model=SessionImported,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": SessionImported, "description": "Imported before: nothing added"},
        **error_responses(401, 403, 413, 422, 503),
    },
)
async def import_session(
    data: SessionImport, principal: AgentDep, state: StateDep, response: Response
) -> SessionImported:
    """A past session of Claude Code, Codex or Cursor (read from its transcript by `engram
    import`), taken in through the same path as the live hooks: each turn an episode of
    the kind of work its prompt asked for, its tool calls as steps with their action
    signatures, its outcome inferred. A session already here (imported, or recorded by
    its hooks) adds nothing and is answered 200 with `imported: false`."""
    imports = SessionImports(state.transactions, sessions=state.agents)
    done = await imports.take(principal.namespace, data, ceiling=principal.max_sensitivity)
    if not done.imported:
        response.status_code = status.HTTP_200_OK
    return done
