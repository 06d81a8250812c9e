"""Turn a validated episode request into SQL rows and blob payloads (no I/O)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from pydantic import TypeAdapter

from app.core.config import Limits
from app.core.errors import PayloadTooLarge
from app.learning.signatures import Rules, signature_of
from app.schemas.common import NAME_MAX
from app.schemas.episode import EpisodeContext, EpisodeCreate, StepCreate
from app.storage.blobs import episode_chunk_key, episode_doc_key


@dataclass(slots=True)
class StepsPayload:
    """Steps ready to store: skeletons for SQL and one JSON array (a chunk) for the blob store."""

    skeletons: list[dict[str, Any]]
    chunk: bytes
    # An append made under an Idempotency-Key: (key, request digest). Kept in the first
    # skeleton, so that a retry finds the steps it already added (writer/episodes.py).
    keyed: tuple[str, str] | None = None

    @property
    def nbytes(self) -> int:
        return len(self.chunk)


@dataclass(slots=True)
class NewEpisode:
    namespace: str
    row: dict[str, Any]
    steps: StepsPayload
    doc: bytes
    idempotency_key: str | None
    client_id: bool
    puts: dict[bytes, bytes] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.row["id"]


def _too_large(field_name: str, reason: str) -> PayloadTooLarge:
    return PayloadTooLarge(f"{field_name}: {reason}", field=field_name)


def _check_text(field_name: str, value: str | None, limit: int) -> None:
    if value is not None and len(value) > limit:
        raise _too_large(field_name, f"{len(value)} characters, the limit is {limit}")


def _check_bytes(field_name: str, size: int, limit: int) -> None:
    if size > limit:
        raise _too_large(field_name, f"{size} bytes, the limit is {limit}")


_STEP_LIST = TypeAdapter(list[StepCreate])


def prepare_steps(
    steps: list[StepCreate], *, limits: Limits, where: str, rules: Rules | None = None
) -> StepsPayload:
    """Check the steps against the limits, give each agent tool call its action signatures
    (kept with the step and in its skeleton), and serialise them into one chunk."""
    for step in steps:
        if step.signature is None:
            step.signature = signature_of(step.tool, step.action, step.input, rules=rules)
    chunk = _STEP_LIST.dump_json(steps)
    text_max = limits.max_text_chars
    skeletons: list[dict[str, Any]] = []
    for offset, step in enumerate(steps):
        if (
            len(step.action) > NAME_MAX
            or (step.tool is not None and len(step.tool) > NAME_MAX)
            or (step.error is not None and len(step.error) > text_max)
        ):
            name = f"{where}[{offset}]"
            _check_text(f"{name}.action", step.action, NAME_MAX)
            _check_text(f"{name}.tool", step.tool, NAME_MAX)
            _check_text(f"{name}.error", step.error, text_max)
        skeleton: dict[str, Any] = {
            "tool": step.tool,
            "action": step.action,
            "status": step.status.value,
            "latency_ms": step.latency_ms,
            "tokens": step.tokens,
        }
        if step.signature is not None:
            skeleton["signature"] = step.signature
        if step.metadata.get("interrupted") is True:
            skeleton["interrupted"] = True  # an outcome is inferred from the skeletons
        skeletons.append(skeleton)
    # The chunk is the steps joined: when it fits the per-step limit, so does each step.
    if len(chunk) > limits.max_step_bytes:
        for offset, step in enumerate(steps):
            size = len(step.model_dump_json())
            _check_bytes(f"{where}[{offset}]", size, limits.max_step_bytes)
    return StepsPayload(skeletons, chunk)


def step_totals(skeletons: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-episode sums that a batch of steps adds."""
    return {
        "error_count": sum(1 for s in skeletons if s["status"] != "ok"),
        "total_latency_ms": float(sum(s["latency_ms"] or 0 for s in skeletons)),
        "total_tokens": sum(s["tokens"] or 0 for s in skeletons),
    }


def request_hash(data: EpisodeCreate) -> str:
    """Fingerprint of a create request: a retry with other content is a conflict, not a replay."""
    canonical = orjson.dumps(data.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def check_episode_limits(data: EpisodeCreate, limits: Limits) -> None:
    if len(data.steps) > limits.max_steps:
        raise _too_large("steps", f"{len(data.steps)} steps, the limit is {limits.max_steps}")
    for attr in ("task_id", "agent_id", "task_type"):
        _check_text(attr, getattr(data, attr), NAME_MAX)
    for attr in ("description", "verdict"):
        _check_text(attr, getattr(data, attr), limits.max_text_chars)
    context = data.context if isinstance(data.context, EpisodeContext) else EpisodeContext()
    _check_text("context.text", context.text, limits.max_text_chars)
    for attr in ("domain", "language"):
        _check_text(f"context.{attr}", getattr(context, attr), NAME_MAX)
    for i, tag in enumerate(context.tags):
        _check_text(f"context.tags[{i}]", tag, NAME_MAX)
    for i, skill in enumerate(data.skills_applied):
        _check_text(f"skills_applied[{i}]", skill, NAME_MAX)
    if data.metadata:
        _check_bytes("metadata", len(orjson.dumps(data.metadata)), limits.max_metadata_bytes)
    if context.features:
        size = len(orjson.dumps(context.features))
        _check_bytes("context.features", size, limits.max_metadata_bytes)


def build_episode(
    namespace: str,
    data: EpisodeCreate,
    *,
    episode_id: str,
    idempotency_key: str | None,
    now: datetime,
    limits: Limits,
    rules: Rules | None = None,
) -> NewEpisode:
    check_episode_limits(data, limits)
    keyed = idempotency_key is not None or data.id is not None
    # The fingerprint is of the request as sent, before signatures are derived into it.
    fingerprint = request_hash(data) if keyed else ""
    steps = prepare_steps(data.steps, limits=limits, where="steps", rules=rules)
    context = data.context if isinstance(data.context, EpisodeContext) else EpisodeContext()
    doc = orjson.dumps({"context": context.model_dump(mode="json"), "metadata": data.metadata})
    completed = data.outcome is not None
    skeletons = steps.skeletons
    row: dict[str, Any] = {
        "namespace": namespace,
        "id": episode_id,
        "task_id": data.task_id,
        "agent_id": data.agent_id,
        "task_type": data.task_type,
        "description": data.description,
        "status": "completed" if completed else "open",
        "outcome": data.outcome.value if data.outcome else None,
        "verdict": data.verdict,
        "outcome_source": None,
        "outcome_confidence": None,
        "progress": data.progress,
        "domain": context.domain,
        "language": context.language,
        "tags": list(context.tags),
        "features": dict(context.features),
        "steps": skeletons,
        "skills_applied": list(data.skills_applied),
        "step_count": len(skeletons),
        **step_totals(skeletons),
        "payload_bytes": len(doc) + steps.nbytes,
        "idempotency_key": idempotency_key,
        # Only a keyed request can be retried into a replay, so only those are fingerprinted.
        "request_hash": fingerprint,
        "started_at": data.started_at,
        "ended_at": data.ended_at,
        "completed_at": now if completed else None,
        "created_at": now,
        "updated_at": now,
    }
    new = NewEpisode(
        namespace=namespace,
        row=row,
        steps=steps,
        doc=doc,
        idempotency_key=idempotency_key,
        client_id=data.id is not None,
    )
    new.puts[episode_doc_key(namespace, episode_id)] = doc
    if skeletons:
        new.puts[episode_chunk_key(namespace, episode_id, 0)] = steps.chunk
    return new
