"""The dataset as a Parquet file, with the schema of its table's columns."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from app.services.dataset.columns import TABLES, Kind, TableName

if TYPE_CHECKING:
    from app.services.dataset.export import DatasetExport


def schema(pa: Any, table: TableName) -> Any:
    """The table's Arrow schema (pa: the pyarrow module, imported by the caller)."""
    scalars = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }

    def arrow(kind: Kind) -> Any:
        if kind.startswith("list<"):
            return pa.list_(scalars[kind[5:-1]])
        return scalars[kind]

    return pa.schema([(c.name, arrow(c.kind)) for c in TABLES[table].columns])


async def spool(export: DatasetExport) -> tempfile.SpooledTemporaryFile[bytes]:
    """Written in row groups to a spooled temporary file (memory stays bounded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: tempfile.SpooledTemporaryFile[bytes] = tempfile.SpooledTemporaryFile(max_size=32 * 2**20)
    arrow_schema = schema(pa, export.table)
    writer = pq.ParquetWriter(out, arrow_schema)
    batch: list[dict[str, Any]] = []
    async for row in export.rows():
        batch.append(row)
        if len(batch) >= 2000:
            writer.write_table(pa.Table.from_pylist(batch, schema=arrow_schema))
            batch = []
    if batch:
        writer.write_table(pa.Table.from_pylist(batch, schema=arrow_schema))
    writer.close()
    out.seek(0)
    return out


async def write(export: DatasetExport) -> Iterator[bytes]:
    """The whole file, written before the response starts, then read back in blocks."""
    spooled = await spool(export)

    def blocks() -> Iterator[bytes]:
        with spooled:
            while block := spooled.read(1 << 20):
                yield block

    return blocks()
