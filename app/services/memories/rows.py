"""A memory's row: as every writer of memories builds it (the API, learning, skills),
with the request's limits checked, and as a reader sees it (status expired once past
valid_until, content withheld above the reader's sensitivity)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import orjson

from app.core.config import Limits
from app.core.errors import PayloadTooLarge
from app.learning.tokens import search_terms
from app.repositories.memories import MemoryRecord
from app.schemas.memory import MemoryFields, MemoryRead, within_sensitivity


def token_estimate(text: str) -> int:
    """About four characters per token, as tokenizers of English text average."""
    return max(1, math.ceil(len(text) / 4))


def status_at(status: str, valid_until: datetime | None, *, now: datetime) -> str:
    """The stored status, or "expired" once valid_until has passed."""
    if status == "active" and valid_until is not None and valid_until <= now:
        return "expired"
    return status


def derived_status(memory: MemoryRecord, *, now: datetime) -> str:
    return status_at(memory.status, memory.valid_until, now=now)


def to_read(memory: MemoryRecord, *, now: datetime, ceiling: str = "restricted") -> MemoryRead:
    """The memory as a reader sees it: content and metadata withheld when it is more
    sensitive than `ceiling`, the highest sensitivity the reader's key may read."""
    status = derived_status(memory, now=now)
    mean = memory.reward_sum / memory.reward_count if memory.reward_count else None
    fields = {c: getattr(memory, c) for c in MemoryRead.model_fields if hasattr(memory, c)}
    fields |= {"metadata": memory.metadata_, "status": status, "reward_mean": mean}
    if not within_sensitivity(memory.sensitivity, ceiling):
        fields |= {"content": "", "metadata": {}, "redacted": True}
    return MemoryRead.model_validate(fields)


def check_limits(data: MemoryFields, limits: Limits) -> None:
    if len(data.content) > limits.max_text_chars:
        raise PayloadTooLarge(
            f"content: {len(data.content)} characters, the limit is {limits.max_text_chars}",
            field="content",
        )
    size = len(orjson.dumps(data.metadata))
    if size > limits.max_metadata_bytes:
        raise PayloadTooLarge(
            f"metadata: {size} bytes, the limit is {limits.max_metadata_bytes}",
            field="metadata",
        )


def new_memory(
    namespace: str,
    memory_id: str,
    *,
    content: str,
    confidence: float,
    sensitivity: str | None,
    criticality: float,
    source_refs: list[str],
    metadata: dict[str, Any],
    now: datetime,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    version: int = 1,
    previous_id: str | None = None,
) -> dict[str, Any]:
    """A new, active memory's row, unused and unrewarded (type and scope are the caller's)."""
    return {
        "namespace": namespace,
        "id": memory_id,
        "content": content,
        "search_terms": search_terms(content),
        "status": "active",
        "confidence": confidence,
        "sensitivity": sensitivity,
        "criticality": criticality,
        "valid_from": valid_from,
        "valid_until": valid_until,
        "source_refs": source_refs,
        "metadata": metadata,
        "version": version,
        "previous_id": previous_id,
        "superseded_by": None,
        "token_estimate": token_estimate(content),
        "use_count": 0,
        "last_used_at": None,
        "reward_count": 0,
        "reward_sum": 0.0,
        "created_at": now,
        "updated_at": now,
    }


def memory_row(
    namespace: str, memory_id: str, data: MemoryFields, *, now: datetime
) -> dict[str, Any]:
    """A new memory's row from a request (version 1 unless the caller says otherwise)."""
    return new_memory(
        namespace,
        memory_id,
        content=data.content,
        confidence=data.confidence,
        sensitivity=data.sensitivity.value if data.sensitivity else None,
        criticality=data.criticality,
        source_refs=list(data.source_refs),
        metadata=data.metadata,
        now=now,
        valid_from=data.valid_from,
        valid_until=data.valid_until,
    )
