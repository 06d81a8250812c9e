"""The backup download: a consistent archive of every table and payload."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from app.api.deps import OperatorDep, StateDep, client_address, write_session
from app.core.errors import error_responses
from app.services.access import audit
from app.services.operations import backup

router = APIRouter(prefix="/v1/admin", tags=["admin"])
ARCHIVE = {
    "type": "string",
    "contentMediaType": "application/gzip",
    "description": "tar.gz of every table (JSON lines) and payload; `X-Engram-Rows` counts rows",
}


@router.get(
    "/backup",
    response_class=StreamingResponse,
    responses={
        **error_responses(401, 403, 503),
        200: {
            "description": "A gzip-compressed tar, streamed (restore it with `engram restore`)",
            "content": {"application/gzip": {"schema": ARCHIVE}},
        },
    },
)
async def download_backup(
    principal: OperatorDep, state: StateDep, request: Request
) -> StreamingResponse:
    """Every namespace's tables and payloads as of one moment (operator keys only)."""
    async with write_session(state) as session:
        await audit.record(
            session,
            action="backup.download",
            namespace=audit.SERVICE,
            actor=principal,
            client=client_address(request),
        )
    snapshot = await backup.open_snapshot(
        state.engine, state.blobs.snapshot, run_paused=state.writer.run_paused
    )
    stamp = snapshot.created_at.strftime("%Y%m%dT%H%M%SZ")
    headers = {
        "Content-Disposition": f'attachment; filename="engram-backup-{stamp}.tar.gz"',
        "X-Engram-Rows": str(snapshot.rows),
    }
    return StreamingResponse(
        backup.archive(snapshot), media_type="application/gzip", headers=headers
    )
