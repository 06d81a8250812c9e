"""The dataset's columns are declared once: every format gives those of its table, in
their order; the metadata describes those columns and the encodings' versions; the
route offers the registered formats and tables."""

from __future__ import annotations

import io
import json
from datetime import datetime
from typing import Any

import httpx
import pyarrow.parquet as pq
from fastapi import FastAPI
from sqlalchemy import select, update

from app.learning.encodings import MEMORY_STATUSES, MEMORY_TYPES, SENSITIVITY_LEVELS
from app.repositories.transitions import TRANSITIONS
from app.services.dataset import FORMATS, TABLES
from tests.api.test_dataset import UNSTORED, make_logs


def _as_json(row: dict[str, Any]) -> dict[str, Any]:
    """A Parquet row as its NDJSON line gives it (timestamps in UTC, with Z)."""
    return {
        k: v.isoformat().replace("+00:00", "Z") if isinstance(v, datetime) else v
        for k, v in row.items()
    }


async def test_every_format_gives_the_declared_columns_in_order(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await make_logs(client, n=5, tasks=2, chained=True)
    # Two transitions without their stored parts: the NDJSON line is rebuilt for them.
    async with app.state.engram.transactions.write() as session:
        ids = select(TRANSITIONS.c.id).order_by(TRANSITIONS.c.id).limit(2)
        await session.execute(
            update(TRANSITIONS).where(TRANSITIONS.c.id.in_(ids)).values(**UNSTORED)
        )
        await session.commit()
    for name, table in TABLES.items():
        names = [c.name for c in table.columns]
        r = await client.get("/v1/rl/dataset", params={"table": name})
        lines = [json.loads(x) for x in r.text.splitlines()]
        assert len(lines) == (5 if name == "transitions" else 5 * 6)
        assert all(list(line) == names for line in lines), name
        r = await client.get("/v1/rl/dataset", params={"table": name, "format": "parquet"})
        parquet = pq.read_table(io.BytesIO(r.content))
        assert parquet.schema.names == names
        assert [_as_json(row) for row in parquet.to_pylist()] == lines


async def test_metadata_describes_the_columns_and_the_encodings(
    client: httpx.AsyncClient,
) -> None:
    meta = (await client.get("/v1/rl/metadata")).json()
    assert list(meta["tables"]) == list(TABLES)
    columns = [c.name for c in TABLES["transitions"].columns]
    described = [c for c in columns if c in meta["fields"]]
    assert list(meta["fields"]) == described  # real columns, in their order
    assert {"observations", "actions", "pscore", "rewards", "terminations"} <= set(described)
    assert f"length {meta['observation_length']}" in meta["fields"]["observations"]
    assert not any("{" in text for text in meta["fields"].values())
    for feature, encoding in (
        ("type_index", MEMORY_TYPES),
        ("status_index", MEMORY_STATUSES),
        ("sensitivity_level", SENSITIVITY_LEVELS),
    ):
        assert meta[feature] == list(encoding.names)
        assert meta[f"{feature}_version"] == encoding.version == 1


async def test_the_route_offers_the_registered_formats(client: httpx.AsyncClient) -> None:
    await make_logs(client, n=1)
    operation = (await client.get("/openapi.json")).json()["paths"]["/v1/rl/dataset"]["get"]
    schemas = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert schemas["format"]["enum"] == list(FORMATS)
    assert schemas["table"]["enum"] == list(TABLES)
    media_types = {f.media_type for f in FORMATS.values()}
    assert media_types <= set(operation["responses"]["200"]["content"])
    for name, fmt in FORMATS.items():
        r = await client.get("/v1/rl/dataset", params={"format": name, "table": "candidates"})
        assert r.status_code == 200
        assert r.headers["content-type"].split(";")[0] == fmt.media_type
        saved = f'attachment; filename="engram-candidates.{fmt.extension}"'
        assert r.headers.get("content-disposition") == (saved if fmt.attachment else None)
    r = await client.get("/v1/rl/dataset", params={"format": "csv"})
    assert r.status_code == 422
