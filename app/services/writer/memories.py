"""A new memory decided against a batch's state: inserted, replayed, or refused."""

from __future__ import annotations

from app.core.errors import Conflict
from app.services.writer.commands import Batch, Command, Replayed

# What a request to create a memory sets: a repeat with the same values is a retry.
MEMORY_REQUEST_FIELDS = (
    "type",
    "scope",
    "content",
    "confidence",
    "sensitivity",
    "criticality",
    "valid_from",
    "valid_until",
    "source_refs",
    "metadata",
)


def decide_memory(batch: Batch, cmd: Command) -> None:
    row = cmd.data["row"]
    existing = batch.memory_rows.get(cmd.key)
    if existing is not None:
        if any(existing[name] != row[name] for name in MEMORY_REQUEST_FIELDS):
            raise Conflict(
                f"memory {cmd.key[1]!r} exists with different content (a chosen id or "
                "an Idempotency-Key names one memory)",
                field="id",
                id=cmd.key[1],
            )
        batch.results.append((cmd.future, Replayed(existing, replayed=True)))
        return
    if cmd.data["client_id"]:
        batch.memory_rows[cmd.key] = row
    batch.memories.append(row)
    batch.results.append((cmd.future, Replayed(row, replayed=False)))
