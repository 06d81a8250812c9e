"""One download of the dataset, for every caller (GET /v1/rl/dataset, the dashboard):
its rows fixed now, read while its body streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Transactions
from app.schemas.filters import DatasetFilters
from app.services import pagination
from app.services.dataset.columns import TableName
from app.services.dataset.export import DatasetExport
from app.services.dataset.formats import FORMATS, FormatName
from app.services.dataset.transitions import TransitionService


@dataclass(frozen=True, slots=True)
class Download:
    """A download ready to stream: its body, media type, the file it is saved as (None:
    shown inline) and the cursor of the next download (None: this is the last)."""

    body: AsyncIterator[bytes] | Iterator[bytes]
    media_type: str
    filename: str | None
    next_cursor: str | None


async def download(
    session: AsyncSession,
    transactions: Transactions,
    namespace: str,
    *,
    format: FormatName,
    table: TableName,
    filters: DatasetFilters,
    cursor: str | None,
    limit: int,
    slots: int,
) -> Download:
    """The next `limit` completed transitions after `cursor`, in `format`: where they end
    is fixed now (`session`); their rows are read while the body streams."""
    after = pagination.after(cursor)
    last, more = await TransitionService(session).boundary(
        namespace, filters=filters, after=after, limit=limit
    )
    export = DatasetExport(
        transactions,
        namespace=namespace,
        table=table,
        filters=filters,
        after=after,
        until_key=last,
        slots=slots,
    )
    fmt = FORMATS[format]
    return Download(
        body=await fmt.write(export),
        media_type=fmt.media_type,
        filename=f"engram-{table}.{fmt.extension}" if fmt.attachment else None,
        next_cursor=pagination.encode_cursor(*last) if more and last is not None else None,
    )
