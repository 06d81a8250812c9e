"""The dataset's download formats, registered in one place: the route offers these."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from app.services.dataset import ndjson, parquet
from app.services.dataset.export import DatasetExport

Body = AsyncIterator[bytes] | Iterator[bytes]


@dataclass(frozen=True, slots=True)
class Format:
    media_type: str
    extension: str
    # Sent as a file to save (Content-Disposition: attachment) rather than a stream.
    attachment: bool
    write: Callable[[DatasetExport], Awaitable[Body]]


async def _ndjson(export: DatasetExport) -> Body:
    return ndjson.lines(export)  # streamed as it is read


FormatName = Literal["ndjson", "parquet"]
FORMATS: dict[FormatName, Format] = {
    "ndjson": Format("application/x-ndjson", "ndjson", attachment=False, write=_ndjson),
    "parquet": Format(
        "application/vnd.apache.parquet", "parquet", attachment=True, write=parquet.write
    ),
}
if set(get_args(FormatName)) != set(FORMATS):
    raise TypeError("FormatName must name the registered formats")
