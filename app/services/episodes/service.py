"""Episode use cases: writes go through the episode writer, reads straight to the stores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Limits
from app.core.errors import NotFound, PayloadTooLarge
from app.core.ids import uuid7
from app.learning.outcomes import Inferred
from app.learning.signatures import Rules
from app.repositories.episodes import EpisodeRepository
from app.schemas.episode import EpisodeComplete, EpisodeContext, EpisodeCreate, StepCreate
from app.schemas.episode_read import EpisodePage, EpisodeRead, EpisodeSummary, StepRead
from app.schemas.filters import EpisodeFilters
from app.services import pagination
from app.services.access.idempotency import checked_key, digest
from app.services.episodes.records import build_episode, prepare_steps
from app.services.episodes.writes import (
    AppendSteps,
    CompleteEpisode,
    CreateEpisode,
    DeleteEpisode,
)
from app.services.writer import Replayed, Writer
from app.storage.blobs import BlobStore, episode_prefix, parse_episode_key


class EpisodeService:
    """Created once per process; reads take the request's session as their first argument."""

    def __init__(
        self,
        *,
        blobs: BlobStore,
        writer: Writer,
        limits: Limits,
        rules: Rules | None = None,
    ) -> None:
        self.blobs = blobs
        self.writer = writer
        self.limits = limits
        self.rules = rules

    async def create(
        self, namespace: str, data: EpisodeCreate, *, idempotency_key: str | None
    ) -> Replayed:
        """Store a new episode, or return the first result of a retried request."""
        checked_key(idempotency_key)
        new = build_episode(
            namespace,
            data,
            episode_id=data.id or uuid7(),
            idempotency_key=idempotency_key,
            now=datetime.now(UTC),
            limits=self.limits,
            rules=self.rules,
        )
        return await self.writer.submit(CreateEpisode(key=new.key, new=new))

    async def append_steps(
        self,
        namespace: str,
        episode_id: str,
        steps: list[StepCreate],
        *,
        idempotency_key: str | None = None,
        caller: str | None = None,
    ) -> EpisodeSummary:
        """Add steps to an open episode. Under an Idempotency-Key, a retry (the same steps
        from the same `caller`, the API key) adds nothing and answers the episode."""
        if len(steps) > self.limits.max_steps:
            raise PayloadTooLarge(
                f"steps: {len(steps)} steps, the limit is {self.limits.max_steps}", field="steps"
            )
        payload = prepare_steps(steps, limits=self.limits, where="steps", rules=self.rules)
        key = checked_key(idempotency_key)
        if key is not None:
            payload.keyed = (key, digest(payload.chunk, caller=caller))
        row = await self.writer.submit(AppendSteps(key=(namespace, episode_id), steps=payload))
        return EpisodeSummary.model_validate(row)

    async def complete(
        self, namespace: str, episode_id: str, data: EpisodeComplete
    ) -> EpisodeSummary:
        """Set the outcome; the same outcome again is a no-op, a different one a conflict."""
        limit = self.limits.max_text_chars
        if data.verdict is not None and len(data.verdict) > limit:
            raise PayloadTooLarge(
                f"verdict: {len(data.verdict)} characters, the limit is {limit}", field="verdict"
            )
        values: dict[str, Any] = {
            "outcome": data.outcome.value,
            "verdict": data.verdict,
            "progress": data.progress,
        }
        if data.ended_at is not None:
            values["ended_at"] = data.ended_at
        row = await self.writer.submit(CompleteEpisode(key=(namespace, episode_id), values=values))
        return EpisodeSummary.model_validate(row)

    async def complete_inferred(
        self, namespace: str, episode_id: str, inferred: Inferred
    ) -> EpisodeSummary:
        """Set an outcome inferred from the session: it replaces an earlier inference, never
        a reported outcome (a 409); below MIN_CONFIDENCE the episode ends `unknown`."""
        values: dict[str, Any] = {
            "outcome": inferred.outcome if inferred.labelled else "unknown",
            "verdict": inferred.verdict()[: self.limits.max_text_chars],
            "outcome_source": "inferred",
            "outcome_confidence": round(inferred.confidence, 3),
        }
        row = await self.writer.submit(CompleteEpisode(key=(namespace, episode_id), values=values))
        return EpisodeSummary.model_validate(row)

    async def delete(self, namespace: str, episode_id: str) -> None:
        """Delete the row, then its payload."""
        await self.writer.submit(DeleteEpisode(key=(namespace, episode_id)))

    async def get(self, session: AsyncSession, namespace: str, episode_id: str) -> EpisodeRead:
        """The whole episode: the row from SQL, steps and context from the payload store."""
        episode = await EpisodeRepository(session).get(namespace, episode_id)
        if episode is None:
            raise NotFound(f"episode {episode_id!r} not found")
        items = await self.blobs.get_prefix(episode_prefix(namespace, episode_id), session=session)
        doc: dict[str, Any] | None = None
        steps: list[StepRead] = []
        for key, value in items:  # the document sorts after the chunks, which sort by seq
            _, _, first_seq = parse_episode_key(key)
            if first_seq is None:
                doc = orjson.loads(value)
            elif first_seq < episode.step_count:  # a later chunk is a write not yet committed
                for offset, step in enumerate(orjson.loads(value)):
                    steps.append(StepRead(seq=first_seq + offset, **step))
        if doc is None:
            # Deleted between the two reads: the row is gone now too.
            raise NotFound(f"episode {episode_id!r} not found")
        summary = EpisodeSummary.model_validate(episode, from_attributes=True)
        return EpisodeRead(
            **summary.model_dump(),
            context=EpisodeContext.model_validate(doc["context"]),
            steps=steps,
            metadata=doc["metadata"],
        )

    async def list(
        self,
        session: AsyncSession,
        namespace: str,
        filters: EpisodeFilters,
        *,
        cursor: str | None,
        limit: int,
    ) -> EpisodePage:
        """Newest first, with a keyset cursor."""
        repo = EpisodeRepository(session)
        rows, next_cursor = await pagination.page(
            lambda key, n: repo.list(namespace, filters, after=key, limit=n),
            cursor=cursor,
            limit=limit,
        )
        items = [EpisodeSummary.model_validate(r, from_attributes=True) for r in rows]
        return EpisodePage(items=items, next_cursor=next_cursor)
