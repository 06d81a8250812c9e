"""One download of the dataset, for every caller (GET /v1/rl/dataset, the dashboard):
its rows fixed now, read while its body streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Transactions
from app.learning.features import SCHEMA_VERSION
from app.schemas.filters import DatasetFilters
from app.services import pagination
from app.services.dataset.columns import TableName
from app.services.dataset.export import DatasetExport
from app.services.dataset.formats import FORMATS, FormatName
from app.services.dataset.transitions import TransitionService


@dataclass(frozen=True, slots=True)
class Download:
    """A download ready to stream: its body, media type, the file it is saved as, whether
    its format is saved rather than shown, and the cursor of the next download (None:
    this is the last)."""

    body: AsyncIterator[bytes] | Iterator[bytes]
    media_type: str
    filename: str
    attachment: bool
    next_cursor: str | None

    def headers(
        self, path: str, params: Mapping[str, str], *, attachment: bool = False
    ) -> dict[str, str]:
        """Its HTTP headers: the schema's version, `Link` to the next download (`path`
        with `params` and the next cursor) and, for a file (`attachment`, or a format that
        is one), its name."""
        found = {"X-Schema-Version": SCHEMA_VERSION}
        if self.next_cursor is not None:
            query = urlencode(dict(params) | {"cursor": self.next_cursor})
            found["Link"] = f'<{path}?{query}>; rel="next"'
        if attachment or self.attachment:
            found["Content-Disposition"] = f'attachment; filename="{self.filename}"'
        return found


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
        filename=f"engram-{table}.{fmt.extension}",
        attachment=fmt.attachment,
        next_cursor=pagination.encode_cursor(*last) if more and last is not None else None,
    )
