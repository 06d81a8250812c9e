"""Episode commands decided against a batch's state: create (or replay), append steps,
complete, delete."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.core.errors import Conflict, NotFound, PayloadTooLarge
from app.repositories.episodes import Key
from app.services.episodes.records import NewEpisode, StepsPayload, step_totals
from app.services.writer.commands import Batch, Command, Replayed
from app.storage.blobs import episode_chunk_key

EPISODE_KINDS = {"create", "append", "complete", "delete"}
APPEND_KEY, APPEND_DIGEST = "append_key", "append_digest"


def _appended(row: dict[str, Any], key: str, digest: str) -> bool:
    """Whether the episode holds the steps of an append made under `key` already (a 409
    if that append sent other steps, or came from another API key)."""
    for skeleton in row["steps"]:
        if skeleton.get(APPEND_KEY) == key:
            if skeleton.get(APPEND_DIGEST) != digest:
                raise Conflict(
                    "this Idempotency-Key added other steps to the episode", field="Idempotency-Key"
                )
            return True
    return False


class EpisodeDecisions:
    """Each episode command decided against the batch's state: its changes go into the
    batch, its answer (or error) into `batch.results`."""

    def __init__(self, *, max_steps: int) -> None:
        self._max_steps = max_steps

    def create(self, batch: Batch, cmd: Command) -> None:
        new: NewEpisode = cmd.data
        ns = new.namespace
        existing_key = batch.by_idem.get((ns, new.idempotency_key)) if new.idempotency_key else None
        if existing_key is None and new.client_id:
            existing_key = new.key if batch.state.get(new.key) is not None else None
        if existing_key is not None:
            existing = batch.state[existing_key]
            assert existing is not None
            other_id = new.client_id and existing_key != new.key
            if other_id or existing["request_hash"] != new.row["request_hash"]:
                raise Conflict(
                    "an episode with this idempotency key or id exists with different content",
                    id=existing_key[1],
                )
            batch.results.append((cmd.future, Replayed(existing, replayed=True)))
            return
        row = dict(new.row)
        batch.state[new.key] = row
        if new.idempotency_key:
            batch.by_idem[(ns, new.idempotency_key)] = new.key
        batch.inserts.append(row)
        batch.puts.update(new.puts)
        if new.client_id:
            batch.reused.append(new.key)
        batch.results.append((cmd.future, Replayed(row, replayed=False)))

    def append(self, batch: Batch, cmd: Command) -> None:
        row = _existing(batch, cmd.key)
        steps: StepsPayload = cmd.data
        if steps.keyed is not None and _appended(row, *steps.keyed):
            batch.results.append((cmd.future, dict(row)))  # a retry: they are there already
            return
        if row["status"] != "open":
            raise Conflict("the episode is completed; steps can no longer be added", field="steps")
        total = row["step_count"] + len(steps.skeletons)
        if total > self._max_steps:
            raise PayloadTooLarge(
                f"steps: the episode would have {total} steps, the limit is {self._max_steps}",
                field="steps",
            )
        ns, eid = cmd.key
        batch.puts[episode_chunk_key(ns, eid, row["step_count"])] = steps.chunk
        added = step_totals(steps.skeletons)
        skeletons = steps.skeletons
        if steps.keyed is not None:
            key, digest = steps.keyed
            skeletons = [{**skeletons[0], APPEND_KEY: key, APPEND_DIGEST: digest}, *skeletons[1:]]
        changes = {
            "steps": [*row["steps"], *skeletons],
            "step_count": total,
            "payload_bytes": row["payload_bytes"] + steps.nbytes,
            "updated_at": datetime.now(UTC),
            **{name: row[name] + value for name, value in added.items()},
        }
        _change(batch, cmd, row, changes)

    def complete(self, batch: Batch, cmd: Command) -> None:
        row = _existing(batch, cmd.key)
        values: dict[str, Any] = cmd.data
        if row["status"] == "completed":
            same = row["outcome"] == values["outcome"] and all(
                row[k] == values[k] for k in ("verdict", "progress") if values.get(k) is not None
            )
            if not same and row.get("outcome_source") == "inferred":
                # An inferred outcome gives way to a reported one or a later inference;
                # learning is credited again for it (write() queues the job).
                now = datetime.now(UTC)
                changes = {"outcome_source": None, "outcome_confidence": None, **values}
                _change(batch, cmd, row, {**changes, "completed_at": now, "updated_at": now})
                batch.revised.append(cmd.key)
                return
            if not same:
                raise Conflict(
                    f"the episode is already completed with outcome {row['outcome']!r}",
                    field="outcome",
                )
            batch.results.append((cmd.future, dict(row)))
            return
        now = datetime.now(UTC)
        _change(
            batch,
            cmd,
            row,
            {**values, "status": "completed", "completed_at": now, "updated_at": now},
        )

    def delete(self, batch: Batch, cmd: Command) -> None:
        _existing(batch, cmd.key)
        batch.state[cmd.key] = None
        batch.deletes.append(cmd.key)
        batch.results.append((cmd.future, None))


def completed(batch: Batch) -> list[Key]:
    """Episodes this batch completes (created completed, or completed now)."""
    keys = [(r["namespace"], r["id"]) for r in batch.inserts if r["status"] == "completed"]
    keys += [k for k, v in batch.updates.items() if v.get("status") == "completed"]
    return [k for k in keys if k not in batch.deletes]


def touches_deleted(batch: Batch, cmd: Command) -> bool:
    if cmd.kind not in EPISODE_KINDS:
        return False
    if cmd.key in batch.deletes:
        return True
    if cmd.kind == "create" and cmd.data.idempotency_key:
        return batch.by_idem.get((cmd.key[0], cmd.data.idempotency_key)) in batch.deletes
    return False


def _existing(batch: Batch, key: Key) -> dict[str, Any]:
    row = batch.state.get(key)
    if row is None:
        raise NotFound(f"episode {key[1]!r} not found")
    return row


def _change(batch: Batch, cmd: Command, row: dict[str, Any], changes: dict[str, Any]) -> None:
    row.update(changes)
    batch.updates.setdefault(cmd.key, {}).update(changes)
    batch.results.append((cmd.future, dict(row)))
